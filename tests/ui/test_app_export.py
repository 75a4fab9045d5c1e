"""The pure helpers behind the app: run export (JSON, Markdown, no secrets) and the highlighted graph."""

import json

from core.config import load_settings
from core.studio.diagram import highlight, mermaid_id
from core.studio.export import comparison_to_json, comparison_to_markdown, to_json, to_markdown

RESULT = {
    "pattern": "basic", "thread_id": "t1", "question": "스테이크 가격?", "standalone_question": "스테이크 가격?",
    "answer": "₩35,000입니다 [1].", "termination_reason": "answered", "termination_message": "answered from 1 chunk",
    "sources": [{"n": 1, "source": "restaurant_menu.md", "title": "메뉴", "page": 1, "chunk_id": "c1",
                 "collection": "restaurant_menu", "url": "", "score": 0.88, "text": "시그니처 스테이크 | ₩35,000"}],
    "trace": [{"node": "retrieve", "kind": "tool", "grader": "retriever", "verdict": "1 documents",
               "reason": "key sk-secret-123 echoed by a server"}],
    "path": ["contextualize", "retrieve", "generate"], "usage": {"generate": {"llm_calls": 1, "tokens": 15, "ms": 9}},
    "llm_calls": 1, "tokens": 15, "ms": 20, "provider": "openai", "model": "gpt-4o-mini", "error": None,
    "interrupted": False, "interrupt": None,
}

MERMAID = """graph TD;
\t__start__([start]):::first
\tcontextualize(contextualize)
\tretrieve(retrieve)
\tgrade(grade)
\tgenerate(generate)
\t__end__([end]):::last
\t__start__ --> contextualize;
\tcontextualize --> retrieve;
\tretrieve --> grade;
\tgrade -. &nbsp;relevant&nbsp; .-> generate;
\tgrade -.-> retrieve;
\tgenerate --> __end__;
"""


def test_json_export_carries_the_run_and_masks_secrets():
    settings = load_settings(openai_api_key="sk-secret-123", provider="openai", k=4)
    text = to_json(RESULT, settings)
    assert "sk-secret-123" not in text
    data = json.loads(text)
    assert data["answer"] == RESULT["answer"] and data["sources"][0]["score"] == 0.88
    assert data["trace"][0]["reason"] == "key *** echoed by a server"
    assert data["settings"]["k"] == 4 and "openai_api_key" not in data["settings"]
    assert "interrupt" not in data


def test_markdown_export_has_answer_reason_sources_trace_and_usage():
    text = to_markdown(RESULT, load_settings(openai_api_key="sk-secret-123"))
    assert "sk-secret-123" not in text
    assert "## Answer\n\n₩35,000입니다 [1]." in text
    assert "**Stopped:** `answered` answered from 1 chunk" in text
    assert "**Outcome:** answered — grounding not checked" in text  # nothing graded this answer
    assert "[1] 메뉴 (restaurant_menu.md, p.1) · score 0.880" in text
    assert "> 시그니처 스테이크 \\| ₩35,000" in text  # table pipes escaped
    assert "| retrieve | tool | retriever |  | 1 documents |  |  | key *** echoed by a server |" in text
    assert "| generate | 1 | 15 | 9 |" in text
    assert "Path: contextualize → retrieve → generate" in text


COMPARISON = {
    "id": "20260101-120000-abc123", "date": "2026-01-01 12:00", "question": "스테이크 가격?",
    "patterns": ["basic", "adaptive"],
    "results": {
        "basic": RESULT,
        "adaptive": {"pattern": "adaptive", "question": "스테이크 가격?", "answer": "", "error": "Cannot reach the model",
                     "termination_reason": "error", "llm_calls": 0, "tokens": 0, "ms": 1500, "path": [],
                     "sources": [], "trace": [], "usage": {}},
    },
}


def test_comparison_json_has_metrics_and_every_run_without_secrets():
    settings = load_settings(openai_api_key="sk-secret-123", provider="openai")
    text = comparison_to_json(COMPARISON, settings)
    assert "sk-secret-123" not in text
    data = json.loads(text)
    assert data["question"] == "스테이크 가격?" and data["patterns"] == ["basic", "adaptive"]
    assert data["metrics"] == [
        {"pattern": "basic", "termination_reason": "answered", "llm_calls": 1, "tokens": 15, "seconds": 0.02,
         "sources": 1, "steps": 3, "claims_supported": "", "unsupported_claims": "", "verification_seconds": 0.0},
        {"pattern": "adaptive", "termination_reason": "error", "llm_calls": 0, "tokens": 0, "seconds": 1.5,
         "sources": 0, "steps": 0, "claims_supported": "", "unsupported_claims": "", "verification_seconds": 0.0}]
    assert data["results"]["basic"]["trace"][0]["reason"] == "key *** echoed by a server"
    assert data["results"]["adaptive"]["error"] == "Cannot reach the model"
    assert "settings" not in data  # exported later, the session's settings would not be the ones it ran with


def test_comparison_markdown_puts_the_metrics_table_first_then_each_run():
    text = comparison_to_markdown(COMPARISON, load_settings(openai_api_key="sk-secret-123"))
    assert "sk-secret-123" not in text
    assert text.startswith("# Comparison: 스테이크 가격?\n\n2026-01-01 12:00 · 20260101-120000-abc123\n\n## Metrics")
    # a run saved before the claim check: its claim columns are empty, its verification took no time
    assert "| basic | answered |  |  | 1 | 15 | 0.02 | 0.0 | 1 | 3 |" in text
    assert "| adaptive | error |  |  | 0 | 0 | 1.5 | 0.0 | 0 | 0 |" in text
    assert text.index("## Metrics") < text.index("## basic") < text.index("## adaptive")
    assert "## basic\n\n### Answer\n\n₩35,000입니다 [1]." in text
    assert "### Sources" in text and "### Trace" in text
    assert "**Error:** Cannot reach the model" in text


def test_highlight_marks_visited_nodes_and_the_edges_taken():
    text = highlight(MERMAID, ["contextualize", "retrieve", "grade", "generate"])
    assert "\tclass __start__,contextualize,retrieve,grade,generate,__end__ visited" in text
    assert "\tlinkStyle 0,1,2,3,5 stroke:#7b2d26,stroke-width:3px" in text  # not the loop back (4)


def test_highlight_of_a_paused_run_marks_where_it_waits():
    text = highlight(MERMAID, ["contextualize", "retrieve"], paused_at="grade")
    assert "\tclass __start__,contextualize,retrieve visited" in text
    assert "\tclass grade paused" in text
    assert "\tlinkStyle 0,1,2 " in text


def test_highlight_without_a_path_changes_nothing_and_ids_are_escaped():
    assert highlight(MERMAID, []) == MERMAID
    assert mermaid_id("multi:search node") == "multi\\3asearch\\20node"
