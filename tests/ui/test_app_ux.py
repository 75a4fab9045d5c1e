"""AppTest of what a first-time user sees (issue 15): honest outcomes, readable traces, no dead ends."""

import json
import tomllib
from pathlib import Path

from langchain_core.messages import AIMessage
from streamlit.testing.v1 import AppTest

from core.config import load_settings
from core.patterns import all_patterns, get_pattern
from core.run.runner import run
from core.store.history import thread_history
from core.studio.export import to_json, to_markdown
from support.app_support import (  # noqa: F401
    APP,
    ROOT,
    TIMEOUT,
    app_data,
    assert_clean,
    happy_script,
    mermaid,
    open_page,
    scripted,
    shown,
    texts,
)
from ui.shell.page_index import page_for

BASIC = "pages/1_Basic_RAG.py"
ADAPTIVE = "pages/3_Adaptive_RAG.py"
SELF_RAG = "pages/4_Self_RAG.py"
QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"


def ask(page: str, question: str = QUESTION, **setup) -> AppTest:
    at = open_page(page)
    for key, value in setup.items():  # sidebar choices: a toggle (bool) or a selectbox
        (at.sidebar.toggle(key=key) if isinstance(value, bool) else at.sidebar.selectbox(key=key)).set_value(value).run()
    at.chat_input[0].set_value(question).run()
    assert_clean(at)
    return at


def badges(block) -> list[str]:
    return [m.value for m in block.markdown if "-badge[" in m.value]


# ---------------------------------------------------------------- outcomes claim only what was checked


def test_a_citation_with_no_such_source_is_flagged_under_the_answer(app_data, scripted):
    scripted.replies = ["스테이크는 ₩35,000입니다 [1]. 와인은 [6]–[10]을 보세요."]
    answer = ask(BASIC).chat_message[1]
    [warning] = answer.warning
    assert shown(warning.value) == "Citation [6], [10] points to no listed source (3 listed)."


def test_an_answer_without_markers_says_no_citations(app_data, scripted):
    scripted.replies = ["스테이크는 ₩35,000입니다."]
    answer = ask(BASIC).chat_message[1]
    assert "No citations: the answer names none of its sources." in shown(texts(answer))


def test_an_answer_cut_off_at_the_token_limit_says_so_in_chat_and_export(app_data, scripted):
    scripted.replies = [AIMessage("시그니처 스테이크는 ₩35,000이고 함께", response_metadata={"finish_reason": "length"})]
    at = ask(BASIC)
    answer = at.chat_message[1]
    assert "The answer was cut off at the token limit (max tokens): raise it in the sidebar." in shown(texts(answer))
    [turn] = thread_history(load_settings(), at.query_params["thread"])  # what the Export tab downloads
    exported = json.loads(to_json(turn["result"]))
    assert exported["outcome"]["truncated"] == {"generate": {"cut_off": 1, "calls": 1}}
    assert "cut off at the token limit" in to_markdown(turn["result"])


def test_self_rag_grounded_answer_is_green_and_its_trace_reads_as_words(app_data, scripted):
    scripted.responder = happy_script()
    answer = ask(SELF_RAG).chat_message[1]
    assert badges(answer) == [":green-badge[✅ answered — every claim supported]", ":green-badge[🔎 1 of 1 claims supported]"]
    verdicts = answer.dataframe[0].value
    cells = verdicts.to_numpy().ravel().tolist()
    assert "None" not in cells and not any(str(c).startswith("{") for c in cells)  # no raw dicts, blank not None
    graded = verdicts[verdicts["grader"] == "relevance"]["target"].tolist()
    assert graded and all(" · chunk " in t and t.split(" · ")[0].endswith(".md") for t in graded), graded
    assert verdicts[verdicts["grader"] == "usefulness"]["verdict"].tolist() == ["useful (5/5)"]
    assert "**Counters:** 0 of 2 rewrites used · 0 of 2 regenerations used" in shown(texts(answer))


def test_self_rag_budget_run_out_is_a_warning_with_budgets_in_words(app_data, scripted):
    script = happy_script()
    script.replies["usefulness"] = {"useful": "yes", "score": 3}  # never good enough: regenerate until the budget ends
    scripted.responder = script
    answer = ask(SELF_RAG).chat_message[1]
    assert badges(answer)[0] == ":orange-badge[⚠️ budget ran out]"  # whatever the claim check found after it
    assert "2 of 2 regenerations used" in shown(texts(answer))
    assert "generations = 3" not in shown(texts(answer))


# ---------------------------------------------------------------- the diagram shows what can happen in this run


def test_adaptive_diagram_draws_the_variant_that_ran_and_review_only_when_on(app_data, scripted):
    scripted.responder = happy_script()
    [domain] = mermaid(ask(ADAPTIVE))
    assert "route_question" in domain and "classify_complexity" not in domain and "review_documents" not in domain
    script = happy_script()
    script.replies.update(complexity={"complexity": "simple"})
    scripted.responder = script
    [complexity] = mermaid(ask(ADAPTIVE, sb_variant_adaptive="complexity"))
    assert "classify_complexity" in complexity and "route_question" not in complexity and "search_menu" not in complexity
    scripted.responder = happy_script()
    at = ask(ADAPTIVE, sb_review=True, sb_variant_adaptive="domain")
    assert "waiting for your review" in shown(texts(at))
    next(b for b in at.button if (b.key or "").endswith("_approve")).click().run()
    assert_clean(at)
    [reviewed] = mermaid(at)
    [visited] = [line.strip() for line in reviewed.splitlines() if line.strip().endswith(" visited")
                 and line.strip().startswith("class ")]
    assert "review_documents" in visited.split()[1].split(",")  # drawn, and on the highlighted path
    assert "classify_complexity" not in reviewed


# ---------------------------------------------------------------- no dead ends


def _open_with_link(page: str, thread_id: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.switch_page(page)
    at.query_params["thread"] = thread_id
    return at.run()


def test_an_unknown_thread_link_says_the_conversation_does_not_exist(app_data, scripted):
    at = _open_with_link(BASIC, "no-such-thread")
    assert_clean(at)
    assert at.warning[0].value.startswith("This conversation does not exist")
    assert not at.chat_message and "thread" not in at.query_params


def test_a_thread_of_another_pattern_links_to_its_own_page(app_data, scripted):
    scripted.responder = happy_script()
    thread_id = run("adaptive", QUESTION, load_settings())["thread_id"]
    at = _open_with_link(BASIC, thread_id)
    assert_clean(at)
    assert at.info[0].value == "This conversation belongs to Adaptive RAG."
    [link] = [link for link in at.main.get("page_link") if link.proto.query_string]
    assert Path(link.proto.page).name == "Adaptive_RAG" and link.proto.query_string == f"thread={thread_id}"
    assert not at.chat_message


def test_every_page_has_the_same_grouped_links_with_home_first(app_data, scripted):
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showSidebarNavigation"] is False  # no automatic "streamlit app" entry
    expected = ["Home"] + [p.title for p in all_patterns() if page_for(p.id)] + [
        "Review", "Knowledge", "Compare patterns", "Evaluation"]
    for page in (None, BASIC, "pages/13_Compare.py", "pages/12_Knowledge_base.py"):
        at = open_page(page)
        assert [link.proto.label for link in at.sidebar.get("page_link")] == expected


def test_compare_preselects_the_fast_patterns_and_names_the_slow_ones(app_data, scripted):
    at = open_page("pages/13_Compare.py")
    chosen = at.multiselect(key="cmp_patterns").value
    # Graph RAG extracts its graphs at ingest now, so a question costs it a few calls: it is a fast one
    assert {"basic", "graph_rag"} <= set(chosen) and "self_rag" not in chosen
    note = next(c.value for c in at.caption if c.value.startswith("Pre-selected: the fast patterns."))
    self_rag = get_pattern("self_rag").max_llm_calls(load_settings())  # the worst-case bound
    assert f"Self-RAG (up to {self_rag} LLM calls)" in note and "Graph RAG (up to" not in note
