"""Runs share one compiled graph per pattern and database; each run's nodes still read its own context."""

import inspect

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

import core.patterns
from core.knowledge.web_search import WebResult
from core.patterns import Pattern, all_patterns, get_pattern, run_graph
from core.patterns.common import BaseState, final, stop
from core.run.runner import run, stream_run
from core.runtime.context import RunContext, make_context
from core.store.checkpoint import get_checkpointer
from support.scripted import ScriptedChatModel

QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"


def _ctx(settings, *replies, **kw):
    return make_context(settings, llm=ScriptedChatModel(replies=list(replies)), **kw)


def _retrieved(result) -> int:
    [found] = [e for e in result["trace"] if e.get("grader") == "retriever"]
    return len(found["documents"])


def test_the_second_run_reuses_the_compiled_graph(sample_settings, monkeypatch):
    compiled = []
    real = core.patterns.compile_pattern
    monkeypatch.setattr(core.patterns, "compile_pattern", lambda *a, **kw: compiled.append(a[0].id) or real(*a, **kw))
    first = run("basic", QUESTION, sample_settings, ctx=_ctx(sample_settings, "첫 답 [1]."))
    before = list(compiled)  # none when an earlier test of this session already compiled it for this database
    second = run("basic", QUESTION, sample_settings, ctx=_ctx(sample_settings, "둘째 답 [1]."))
    assert (first["answer"], second["answer"]) == ("첫 답 [1].", "둘째 답 [1].")
    assert compiled == before and before in ([], ["basic"])
    saver = get_checkpointer(sample_settings)
    pattern = get_pattern("basic")
    assert run_graph(pattern, saver) is run_graph(pattern, saver)


def test_two_runs_through_one_graph_each_see_their_own_settings_and_models(sample_settings):
    """Run A pauses mid-graph while run B, with other settings and another model, goes through the same
    compiled graph; then A finishes: each retrieved its own k and answered with its own model."""
    one, three = sample_settings.with_(k=1), sample_settings.with_(k=3)
    a = stream_run("basic", QUESTION, one, ctx=_ctx(one, "A의 답 [1]."))
    for event in a:
        if event["type"] == "node" and event["node"] == "retrieve":
            break
    b = run("basic", QUESTION, three, ctx=_ctx(three, "B의 답 [1]."))
    [done] = [e for e in a if e["type"] == "done"]
    assert (done["result"]["answer"], _retrieved(done["result"])) == ("A의 답 [1].", 1)
    assert (b["answer"], _retrieved(b)) == ("B의 답 [1].", 3)


def _step(query):
    return f"Thought: 더 찾아본다\nAction: usa_ict\nAction Input: {query}"


def test_an_agent_stops_at_its_own_runs_step_limit(sample_settings):
    """The step limit is read when the loop routes, from the run's settings, not fixed when the graph was built."""
    results = []
    for limit in (1, 2, 1):
        settings = sample_settings.with_(max_iterations=limit)
        ctx = _ctx(settings, *[_step(f"반도체 정책 {n}") for n in range(4)], "요약",
                   grader=ScriptedChatModel(replies=[]), web=lambda q: WebResult("unavailable", reason="off", query=q))
        results.append(run("react", "미국 반도체 정책은?", settings, ctx=ctx))
    assert [r["termination_reason"] for r in results] == ["max_iterations"] * 3
    stops = [[e for e in r["trace"] if e["kind"] == "stop"][-1] for r in results]
    assert [s["counters"]["max_iterations"] for s in stops] == [1, 2, 1]


def _answers_with_its_runs_limit(state: BaseState, runtime: Runtime[RunContext]) -> dict:
    return {**final(f"{runtime.context.settings.max_iterations}"), **stop("answer", "answered", "done")}


def _one_node_graph():
    builder = StateGraph(BaseState, context_schema=RunContext)
    builder.add_node("answer", _answers_with_its_runs_limit)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder


def test_a_node_reads_the_run_that_executes_it_from_langgraphs_runtime(sample_settings):
    pattern = Pattern(id="reads_settings", title="t", description="d", build=_one_node_graph,
                      max_llm_calls=lambda s, sources=None: 0)
    graph = run_graph(pattern, None)
    assert graph is run_graph(pattern, None)
    answers = [graph.invoke({"question": "q"}, context=_ctx(sample_settings.with_(max_iterations=n)))["answer"]
               for n in (2, 3)]
    assert answers == ["2", "3"]


def test_every_pattern_is_built_without_a_run():
    """No run's context exists while a graph is built: nodes read it from LangGraph's runtime as they run."""
    for pattern in all_patterns():
        assert not inspect.signature(pattern.build).parameters, pattern.id
        assert pattern.build().context_schema is RunContext, pattern.id
