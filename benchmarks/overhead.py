"""Graph overhead against an injected model latency, and grading concurrency (``python -m core bench``)."""

from __future__ import annotations

import time

from langchain_core.documents import Document

from benchmarks.latency_model import HAPPY, LATENCY, LatencyModel
from core.config import Settings
from core.llm import graders

__all__ = ["HAPPY", "LATENCY", "LatencyModel", "PATTERN_CASES", "bench_grading", "bench_patterns"]

MENU_QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"
POLICY_QUESTION = "일본의 디지털 정책에서 AI 관련 내용은 무엇인가요?"
# (pattern, run options, question): every pattern on its shortest accepted path
PATTERN_CASES = [
    ("basic", {}, MENU_QUESTION), ("rag_fusion", {}, MENU_QUESTION), ("adaptive", {}, MENU_QUESTION),
    ("adaptive", {"variant": "complexity"}, MENU_QUESTION), ("self_rag", {}, MENU_QUESTION),
    ("corrective", {}, MENU_QUESTION), ("agentic", {}, MENU_QUESTION), ("react", {}, POLICY_QUESTION),
    ("react_native", {}, POLICY_QUESTION), ("graph_rag", {"source_ids": ["restaurant_menu"], "graph_wait": True}, MENU_QUESTION),
]


def _bench_web(query):
    from core.knowledge.web_search import WebResult

    return WebResult("ok", [Document("Steak is 35,000 won.", metadata={"source": "https://example.org",
                                                                       "url": "https://example.org", "title": "w"})],
                     query=query)


def _measure(pattern_id: str, question: str, settings: Settings, model: LatencyModel, ctx, options: dict) -> dict:
    from core.run.runner import run

    model._intervals.clear()
    start = time.perf_counter()
    result = run(pattern_id, question, settings, ctx=ctx, **options)
    wall = time.perf_counter() - start
    critical = model.critical_calls()
    return {"llm_calls": result.get("llm_calls", 0), "critical_calls": critical, "wall_s": round(wall, 3),
            "ratio": round(wall / (max(critical, 1) * model.latency), 3),
            "termination": result.get("termination_reason") or result.get("error", "")}


def bench_patterns(settings: Settings, latency: float = LATENCY, cases=PATTERN_CASES) -> list[dict]:
    """Per pattern: wall time / (critical-path LLM calls x latency).

    A warm-up run first pays the one-off costs (imports, caches; Graph RAG's graph extraction,
    which is reported as its own row), then the measured run asks the same question in a new thread.
    """
    from core.knowledge import entity_graph
    from core.runtime.context import make_context

    rows = []
    for pattern_id, options, question in cases:
        model = LatencyModel(latency=latency, verdicts=HAPPY)
        ctx = make_context(settings, llm=model, grader=model, web=_bench_web)
        name = pattern_id + (f" ({options['variant']})" if "variant" in options else "")
        if pattern_id == "graph_rag":  # measure the one-off graph build, then answer from the stored graph
            for collection in options.get("source_ids", []):
                entity_graph.drop_graph(settings, collection)
            rows.append({"pattern": f"{name} (first run: builds the graph)",
                         **_measure(pattern_id, question, settings, model, ctx, options)})
        else:
            _measure(pattern_id, question, settings, model, ctx, options)
        rows.append({"pattern": name, **_measure(pattern_id, question, settings, model, ctx, options)})
    return rows


def bench_grading(latency: float = LATENCY, max_concurrency: int = 8) -> list[dict]:
    """Grading n documents concurrently vs one call latency and vs the one-by-one loop."""
    rows = []
    for n in (4, 8):
        docs = [Document(f"문서 {i}: 시그니처 스테이크 ₩35,000") for i in range(n)]
        together, one_by_one = LatencyModel(latency=latency, verdicts=HAPPY), LatencyModel(latency=latency, verdicts=HAPPY)
        start = time.perf_counter()
        graders.grade_documents(together, "스테이크 가격?", docs, max_concurrency)
        concurrent = time.perf_counter() - start
        start = time.perf_counter()
        for doc in docs:  # the specification's loop, one call after another
            graders.grade_documents(one_by_one, "스테이크 가격?", [doc], 1)
        sequential = time.perf_counter() - start
        rows.append({"documents": n, "concurrent_s": round(concurrent, 3), "vs_one_call": round(concurrent / latency, 3),
                     "sequential_s": round(sequential, 3), "speedup": round(sequential / concurrent, 2),
                     # latencies end to end: what the wall time cannot go below, whatever else the machine does
                     "concurrent_rounds": together.critical_calls(), "sequential_rounds": one_by_one.critical_calls()})
    return rows
