"""AppTest of the Compare page: patterns side by side, metrics table and chart, exports, reopening, bad input."""

import subprocess
import sys
from pathlib import Path

from core.config import load_settings
from core.patterns import pattern_ids
from core.store import owner
from core.store.threads import get_registry
from core.studio.compare import list_comparisons
from support.app_support import HAPPY_ANSWER as ANSWER  # noqa: F401
from support.app_support import app_data, assert_clean, button, charts, happy_script, mermaid, open_page, scripted, texts  # noqa: F401
from ui.screens.compare import column_markdown, slow_patterns
from ui.shell.page_index import page_for

COMPARE = "pages/13_Compare.py"
QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"
PATTERNS = ["basic", "adaptive", "self_rag"]
TITLES = ["#### Basic RAG", "#### Adaptive RAG", "#### Self-RAG"]


def compare(at, question: str, patterns: list[str]):
    at.text_area(key="cmp_question").set_value(question)
    at.multiselect(key="cmp_patterns").set_value(patterns)
    return button(at, key_end="cmp_run").click().run()


def columns_shown(at) -> dict[str, object]:
    """Column heading -> the column block, for the result columns of the comparison on screen."""
    return {c.markdown[0].value: c for c in at.main.columns if c.markdown and c.markdown[0].value.startswith("#### ")}


def test_patterns_run_side_by_side_with_metrics_chart_exports_and_can_be_reopened(app_data, scripted):
    scripted.responder = happy_script()
    at = open_page(COMPARE)
    assert at.multiselect(key="cmp_patterns").value == [p for p in pattern_ids() if p not in slow_patterns(load_settings())]
    compare(at, QUESTION, PATTERNS)
    assert_clean(at)
    shown = columns_shown(at)
    assert list(shown) == TITLES
    for column in shown.values():  # answer, why it stopped, figures, the sources/trace/graph tabs
        assert column.markdown[1].value == ANSWER
        assert "Stopped:" in texts(column) and " LLM calls · " in texts(column)
        assert [tab.label for tab in column.tabs] == ["Sources (3)", "Trace", "Graph"]
        assert next(e for e in column.expander if e.label.startswith("[")).label.startswith("[1] ")  # citations
        assert list(column.dataframe[0].value.columns)[:3] == ["node", "kind", "grader"]  # verdict table
    assert "Stopped: answer accepted" in texts(shown["#### Self-RAG"])
    # the badge claims what was checked: every pattern's answer went through the claim check
    for column in shown.values():
        assert ":green-badge[🔎 1 of 1 claims supported]" in texts(column)
    assert ":green-badge[✅ answered — every claim supported]" in texts(shown["#### Basic RAG"])
    diagrams = mermaid(at)
    assert len(diagrams) == 3 and all(" visited" in d for d in diagrams)  # each path highlighted
    assert "class __start__,contextualize,retrieve,generate,verify,__end__ visited" in diagrams[0]  # the check ran too

    metrics = at.main.dataframe[-1].value
    assert list(metrics.columns) == ["pattern", "termination_reason", "llm_calls", "tokens", "seconds", "sources", "steps",
                                     "claims_supported", "unsupported_claims", "verification_seconds"]
    assert list(metrics["claims_supported"]) == ["1 / 1"] * len(PATTERNS)
    assert list(metrics["pattern"]) == PATTERNS
    assert list(metrics["termination_reason"]) == ["answered", "answered", "accepted"]
    calls = dict(zip(metrics["pattern"], metrics["llm_calls"]))
    assert calls["basic"] == 1 and calls["adaptive"] == 2 and calls["self_rag"] > 2  # the grading costs calls
    (seconds, [data]), (llm_calls, _) = charts(at)
    assert (seconds["title"], seconds["encoding"]["y"]["field"]) == ("Wall time (s)", "seconds")
    assert (llm_calls["title"], llm_calls["encoding"]["y"]["field"]) == ("LLM calls", "llm_calls")
    assert list(data["pattern"]) == PATTERNS and list(data["llm_calls"]) == list(metrics["llm_calls"])
    assert [d.label for d in at.download_button] == ["Download JSON", "Download Markdown"]
    assert [d.proto.url.rsplit(".", 1)[1] for d in at.download_button] == ["json", "md"]

    [saved] = list_comparisons(load_settings())
    assert saved["question"] == QUESTION and saved["patterns"] == PATTERNS
    assert at.selectbox(key="cmp_open").value == saved["id"]  # the run just made is the one on screen
    threads = get_registry(app_data).list()
    assert sorted(t["pattern"] for t in threads) == sorted(PATTERNS)  # one thread per pattern
    assert {t["origin"] for t in threads} == {"compare"}  # kept out of the chat sidebars
    links = {Path(link.proto.page).name: link.proto.query_string for link in at.main.get("page_link")}
    # the chat page of each pattern (its URL is the file name without the ordering number), on its thread
    assert links == {Path(page_for(t["pattern"])).stem.split("_", 1)[1]: f"thread={t['thread_id']}" for t in threads}

    # a fresh session (as after a restart) reopens it from the selectbox, without running anything again
    calls_before = len(scripted.calls)
    again = open_page(COMPARE)
    assert again.selectbox(key="cmp_open").value is None and not columns_shown(again)
    assert again.selectbox(key="cmp_open").options[0].startswith(saved["date"])
    again.selectbox(key="cmp_open").set_value(saved["id"]).run()
    assert_clean(again)
    assert list(columns_shown(again)) == TITLES
    assert [c.markdown[1].value for c in columns_shown(again).values()] == [ANSWER] * 3
    assert list(again.main.dataframe[-1].value["llm_calls"]) == list(metrics["llm_calls"])
    assert len(charts(again)) == 2 and len(again.download_button) == 2
    assert len(scripted.calls) == calls_before


def test_an_unreachable_provider_fails_each_column_with_one_clear_message(app_data, scripted, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    at = open_page(COMPARE)
    at.sidebar.selectbox(key="sb_provider").set_value("ollama").run()
    compare(at, QUESTION, [*PATTERNS, "corrective"])
    assert_clean(at)
    shown = columns_shown(at)
    assert list(shown) == [*TITLES, "#### Corrective RAG"]
    assert {column.weight for column in shown.values()} == {1 / 3}  # three to a row, the fourth wraps
    for column in shown.values():
        [error] = column.error
        assert error.value.startswith("Cannot reach the model server")
    assert "Traceback" not in texts(at)
    metrics = at.main.dataframe[-1].value
    assert list(metrics["termination_reason"]) == ["error"] * 4


def test_bad_input_is_one_clear_message_and_nothing_is_lost(app_data, scripted):
    at = open_page(COMPARE)
    compare(at, "   ", ["basic"])
    assert_clean(at)
    assert [e.value for e in at.error] == ["Type a question first."]
    compare(at, QUESTION, [])
    assert [e.value for e in at.error] == ["Choose at least one pattern."]
    assert at.text_area(key="cmp_question").value == QUESTION
    assert not list_comparisons(load_settings()) and not scripted.calls  # nothing ran
    # the question and the choice survive a page switch, and the page speaks Korean
    at.multiselect(key="cmp_patterns").set_value(["basic"]).run()
    at.switch_page("pages/1_Basic_RAG.py").run()
    at.switch_page(COMPARE).run()
    assert at.text_area(key="cmp_question").value == QUESTION
    assert at.multiselect(key="cmp_patterns").value == ["basic"]
    at.sidebar.button_group(key="sb_lang").set_value("ko").run()
    assert at.title[0].value == "패턴 비교"
    at.multiselect(key="cmp_patterns").set_value([])
    button(at, key_end="cmp_run").click().run()
    assert [e.value for e in at.error] == ["패턴을 하나 이상 고르세요."]


def test_answer_headings_shrink_to_fit_a_column():
    assert column_markdown("# 와인 리스트\n본문 #1\n## 2. 카베르네\n###### 작은 제목") == \
        "##### 와인 리스트\n본문 #1\n##### 2. 카베르네\n###### 작은 제목"


def test_a_comparison_still_running_in_the_background_says_so_and_shows_finished_runs(app_data, scripted):
    from core.studio.compare import save_comparison

    settings = load_settings()
    done = {"pattern": "basic", "answer": ANSWER, "termination_reason": "answered", "llm_calls": 1, "path": []}
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # the process running it
    save_comparison({"id": "20261129-120000-abcdef", "date": "2026-11-29 12:00", "question": QUESTION,
                     "patterns": ["basic", "adaptive"], "results": {"basic": done, "adaptive": {}},
                     "owner": {"host": owner.HOST, "pid": worker.pid, "started": owner.process_start(worker.pid)}},
                    settings)
    try:
        at = open_page(COMPARE)
        _still_running(at)
    finally:
        worker.kill()
        worker.wait()
    at = open_page(COMPARE)  # its process is gone (a restart): the missing run is interrupted, not running
    assert at.selectbox(key="cmp_open").options[0].startswith("2026-11-29 12:00")
    at.selectbox(key="cmp_open").set_value("20261129-120000-abcdef").run()
    assert not any("still running" in i.value for i in at.info)
    assert "interrupted: the server stopped" in texts(columns_shown(at)["#### Adaptive RAG"])


def _still_running(at) -> None:
    assert at.selectbox(key="cmp_open").options[0].startswith("⏳ 2026-11-29 12:00")
    at.selectbox(key="cmp_open").set_value("20261129-120000-abcdef").run()
    assert_clean(at)
    assert "still running in the background" in at.info[0].value
    shown = columns_shown(at)
    assert shown["#### Basic RAG"].markdown[1].value == ANSWER
    assert "Still running" in texts(shown["#### Adaptive RAG"])
    assert button(at, key_end="cmp_refresh").label == "Refresh"
