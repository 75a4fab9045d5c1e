"""What a run can claim (core.run.outcome), trace cells in words (core.runtime.trace), the focused diagram, Korean messages."""

import ast
import re

import pytest
from langchain_core.messages import AIMessage

from core.run.outcome import check_citations, outcome, summary
from core.runtime.trace import budgets, target_text
from core.studio.diagram import focused, run_variant
from support.helpers import run_script
from support.paths import ROOT
from support.workflow_script import Script
from ui.i18n.trace import to_korean

SOURCES = [{"n": n, "source": f"doc{n}.md", "label": f"doc{n}.md"} for n in (1, 2, 3)]


def result(reason: str, **extra) -> dict:
    """A Self-RAG result: its grounding verdict is a field the result carries, not a trace event."""
    return {"pattern": "self_rag", "termination_reason": reason, "answer": "an answer [1]", "sources": SOURCES[:1],
            "trace": [], **extra}


@pytest.mark.parametrize(("run", "status"), [
    (result("answered"), "unchecked"),  # nothing graded the answer: no claim beyond "answered"
    (result("accepted", grounding="yes"), "grounded"),
    (result("answered", grounding="no"), "ungrounded"),
    (result("answered", grounding=""), "unchecked"),  # the grader failed: its fallback is no verdict
    (result("retry_budget_exhausted"), "budget"),
    (result("max_iterations"), "budget"),
    (result("direct_answer", sources=[]), "direct"),
    (result("no_relevant_documents", sources=[]), "declined"),
    (result("web_unavailable"), "partial"),  # answered from what survived, without the web
    (result("user_rejected"), "rejected"),
    (result("error", error="boom"), "error"),
    (result("", interrupted=True), "paused"),
])
def test_the_outcome_says_what_was_checked(run, status):
    assert outcome(run) == status


def test_the_trace_decides_no_badge():
    """Grounding is the result's field: a trace verdict alone claims nothing, and no trace takes nothing away."""
    verdict = {"kind": "verdict", "grader": "hallucination", "verdict": "yes"}
    assert outcome(result("accepted", trace=[verdict])) == "unchecked"
    assert outcome(result("accepted", grounding="yes", trace=[{**verdict, "verdict": "no"}])) == "grounded"


def test_a_self_rag_run_carries_the_grounding_of_the_answer_it_returned(sample_settings):
    """The verdict travels from state to result: with the trace gone the run still badges right."""
    def good(**overrides) -> Script:
        return Script(**{"retrieval": {"kind": "lookup"}, "sources": {"sources": ["restaurant_menu"]},
                         "relevance": {"relevant": "yes"}, "answer": "시그니처 스테이크는 ₩35,000입니다 [1].",
                         "grounded": {"grounded": "yes"}, "usefulness": {"useful": "yes", "score": 5}, **overrides})

    s = sample_settings.with_(k=2, max_rewrites=2, max_generations=1, verify_claims="off")  # the grader's verdict alone
    accepted = run_script("self_rag", "스테이크 메뉴의 가격은 얼마인가요?", s, good())
    assert accepted["grounding"] == "yes" and outcome({**accepted, "trace": []}) == "grounded"
    # grounded but never useful enough: the best grounded answer comes back after an ungrounded retry
    best = run_script("self_rag", "스테이크 메뉴의 가격은 얼마인가요?", s,
                      good(grounded=[{"grounded": "yes"}, {"grounded": "no"}], usefulness={"useful": "no", "score": 3}))
    assert best["termination_reason"] == "retry_budget_exhausted" and best["grounding"] == "yes"
    assert summary({**best, "trace": []})["grounding"] == "yes"
    basic = run_script("basic", "스테이크 메뉴의 가격은 얼마인가요?", s, Script(answer="₩35,000 [1]"))
    assert "grounding" not in basic and summary(basic)["grounding"] == "unchecked"  # basic grades no answer


def test_citation_markers_are_checked_against_the_listed_sources():
    unknown = check_citations("맛있습니다 [1]. 자세한 것은 [6]–[10] 참고.", SOURCES)
    assert unknown == {"status": "unknown", "cited": ["[1]"], "unknown": ["[6]", "[10]"], "listed": 3}
    assert check_citations("a [1, 2] b [2-3]", SOURCES)["cited"] == ["[1]", "[2]", "[3]"]
    assert check_citations("a [1-4]", SOURCES)["unknown"] == ["[4]"]
    assert check_citations("see [Source: doc2.md; other.md]", SOURCES)["unknown"] == ["[Source: other.md]"]
    assert check_citations("see [Source: DOC1.md]", SOURCES)["status"] == "ok"
    assert check_citations("no markers, a [link](http://x) and the year [2024]", SOURCES)["status"] == "none"
    assert check_citations("[1]", [])["unknown"] == ["[1]"]  # a marker with nothing listed


def test_an_answer_cut_off_at_the_token_limit_is_counted_in_usage_and_summary(settings):
    script = Script(answer=AIMessage("시그니처 스테이크는 ₩35,", response_metadata={"finish_reason": "length"}))
    cut = run_script("basic", "스테이크 가격은?", settings, script)
    assert cut["usage"]["generate"]["truncated"] == 1
    assert summary(cut)["truncated"] == {"generate": {"cut_off": 1, "calls": 1}}
    whole = run_script("basic", "스테이크 가격은?", settings, Script(answer="₩35,000 [1]"))
    assert "truncated" not in whole["usage"]["generate"] and "truncated" not in summary(whole)


def test_trace_targets_and_budgets_read_as_words():
    assert target_text({"source": "restaurant_menu.md", "chunk_id": "9f2c", "page": 1, "chunk": 3}) \
        == "restaurant_menu.md · chunk 3"
    assert target_text({"source": "japan.pdf", "chunk_id": "ab", "page": 4, "chunk": 2}) == "japan.pdf · p.4 · chunk 2"
    assert target_text({"source": "https://x.org/a", "chunk_id": "https://x.org/a", "title": "A page"}) == "A page"
    assert target_text({"source": "old.md", "chunk_id": "9f2c"}) == "old.md"  # a trace from before chunk numbers
    assert target_text(None) == ""
    counters = {"relevance_retries": 1, "generations": 3, "max_rewrites": 2, "max_generations": 2}
    assert budgets(counters) == [("rewrites", 1, 2), ("regenerations", 2, 2)]  # 3 generations = 2 regenerations
    assert budgets({"iterations": 5, "max_iterations": 5, "tool_calls": 4}) == [("steps", 5, 5)]


def test_the_adaptive_diagram_keeps_one_variant_and_review_only_when_asked(settings):
    from core.patterns import get_pattern
    from core.studio.diagram import pattern_mermaid

    full = pattern_mermaid(get_pattern("adaptive"))
    assert "classify_complexity" in full and "route_question" in full and "review_documents" in full
    domain = focused(full, "adaptive", run_variant("adaptive", ["contextualize", "route_question"]))
    assert "route_question" in domain and not re.search(r"classify_complexity|decompose|synthesise|review_documents", domain)
    complexity = focused(full, "adaptive", "complexity", review=True)
    assert "review_documents -.-> classify_complexity" in complexity  # an edited question is classified again
    assert "search_menu" not in complexity
    assert "route_question" not in complexity
    basic = pattern_mermaid(get_pattern("basic"))
    assert focused(basic, "basic", review=True) == basic  # no variants: only the review pause can be hidden
    assert "review_documents" in basic and "review_documents" not in focused(basic, "basic")
    assert "retrieve -.-> review_documents" in basic and "review_documents -.-> retrieve" in basic  # an edit searches again
    assert "review_documents -.-> route_question" in full and "review_documents -.-> search_collection" not in full


# ---------------------------------------------------------------- Korean for the messages core writes


def test_core_messages_read_in_korean():
    examples = {
        "answered from 3 retrieved chunks": "검색한 청크 3개로 답했습니다",
        "no relevant documents: rewrite 1 of 2": "관련 문서가 없습니다: 재작성 2회 중 1회",
        "gave up after 1 of 2 rewrite(s) and 2 of 2 regeneration(s): returned the best grounded answer (4/5)":
            "재작성 2회 중 1회, 재생성 2회 중 2회 후 포기: 근거가 있는 가장 나은 답변을 돌려주었습니다 (4/5)",
        "web search unavailable (web search is not configured (no TAVILY_API_KEY)): answered from the 2 strip(s) "
        "that survived": "웹 검색 사용 불가(웹 검색이 설정되지 않았습니다 (TAVILY_API_KEY 없음)): 남은 조각 2개로 답했습니다",
        "useful (5/5)": "유용함 (5/5)",
        "restaurant_menu, restaurant_wine; web_search left out: web search is not configured (no TAVILY_API_KEY)":
            "restaurant_menu, restaurant_wine; web_search 제외: 웹 검색이 설정되지 않았습니다 (TAVILY_API_KEY 없음)",
        "already made in this turn: not run again; the agent is told so":
            "이번 턴에 이미 한 호출이라 다시 실행하지 않고, 에이전트에게 그렇게 알립니다",
        "a question the user typed": "a question the user typed",  # not a core message: left alone
    }
    for english, korean in examples.items():
        assert to_korean(english) == korean


def _templates(node) -> str | None:
    """The text a string expression makes, with every computed part as {x}; None when it is not a string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{x}" for v in node.values)
    return None


def core_messages() -> list[tuple[str, str]]:
    """(where, text) of every literal message core passes to stop() or as an event's reason."""
    found = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            args = node.args[2:3] if node.func.id == "stop" else \
                [k.value for k in node.keywords if k.arg == "reason"] if node.func.id == "event" else []
            for arg in args:
                text = _templates(arg)
                if text and text != "{x}" and not text.startswith("{x}; reply"):
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return found


def test_every_literal_core_message_has_korean():
    messages = core_messages()
    assert len(messages) > 20
    missing = [(where, text) for where, text in messages if to_korean(text.replace("{x}", "7")) == text.replace("{x}", "7")]
    assert not missing, "add these to ui/i18n/trace.py:\n" + "\n".join(f"{w}: {t!r}" for w, t in missing)
