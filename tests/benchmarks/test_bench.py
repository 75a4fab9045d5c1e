"""The benchmark's measuring code: critical-path counting and the concurrency comparison."""

import threading

from benchmarks import overhead as bench


def test_critical_calls_counts_groups_of_overlapping_calls():
    model = bench.LatencyModel(latency=0.05, verdicts=bench.HAPPY)
    model.invoke("one")  # 1 group
    threads = [threading.Thread(target=model.invoke, args=("x",)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()  # 3 overlapping calls: 1 group
    model.invoke("last")  # 1 group
    assert len(model._intervals) == 5
    assert model.critical_calls() == 3


def test_structured_output_returns_the_preset_verdict_and_sleeps():
    model = bench.LatencyModel(latency=0.01, verdicts=bench.HAPPY)
    from core.llm.graders import Route

    assert model.with_structured_output(Route).invoke("q").route == "restaurant_menu"
    assert len(model._intervals) == 1


def test_grading_bench_compares_concurrent_with_sequential():
    rows = bench.bench_grading(latency=0.05)
    assert [r["documents"] for r in rows] == [4, 8]
    for row in rows:  # rounds of overlapping calls, not seconds: the same on a busy machine
        assert row["sequential_rounds"] == row["documents"] and row["concurrent_rounds"] < row["documents"]


def test_a_worker_pool_counts_one_latency_per_round():
    from concurrent.futures import ThreadPoolExecutor

    model = bench.LatencyModel(latency=0.05, verdicts=bench.HAPPY)
    with ThreadPoolExecutor(max_workers=2) as pool:  # 5 calls, 2 at a time: 3 rounds
        list(pool.map(model.invoke, ["a"] * 5))
    assert model.critical_calls() == 3


def test_tool_calls_then_an_answer_and_the_react_text_protocol():
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    model = bench.LatencyModel(latency=0.0, verdicts=bench.HAPPY, query="AI 정책")
    tools = model.bind_tools([{"type": "function", "function": {"name": "usa_ict"}}])
    first = tools.invoke([HumanMessage("q")])
    assert [(c["name"], c["args"]) for c in first.tool_calls] == [("usa_ict", {"query": "AI 정책"})]
    answer = tools.invoke([HumanMessage("q"), first, ToolMessage("result", tool_call_id=first.tool_calls[0]["id"])])
    assert answer.content == model.answer and not answer.tool_calls

    from core.patterns.react import parse_step

    step = parse_step(model.invoke([HumanMessage("Question: q")], stop=["\nObservation:"]).content)
    assert (step["action"], step["input"]) == ("japan_ict", "AI 정책")
    done = model.invoke([HumanMessage("Question: q"), AIMessage("..."), HumanMessage("Observation: found")],
                        stop=["\nObservation:"])
    assert parse_step(done.content)["final"] == model.answer


def test_every_pattern_reaches_its_answer_on_the_measuring_model(sample_data_dir, tmp_path):
    import shutil

    from core.config import load_settings

    data = tmp_path / "data"
    shutil.copytree(sample_data_dir, data)  # the graph rows delete and rebuild a graph: not in the shared data
    rows = bench.bench_patterns(load_settings(data_dir=str(data)), latency=0.01)
    assert [r["pattern"] for r in rows] == ["basic", "rag_fusion", "adaptive", "adaptive (complexity)", "self_rag",
                                            "corrective", "agentic", "react", "react_native",
                                            "graph_rag (first run: builds the graph)", "graph_rag"]
    terminations = {r["pattern"]: r["termination"] for r in rows}
    assert terminations["self_rag"] == "accepted"
    assert {t for p, t in terminations.items() if p != "self_rag"} == {"answered"}
    calls = {r["pattern"]: r["critical_calls"] for r in rows}
    assert calls["agentic"] == 3 and calls["react"] == calls["react_native"] == calls["graph_rag"] == 2
    assert calls["rag_fusion"] == 2  # the query writer, then the answer (the four searches call no model)
    assert calls["graph_rag (first run: builds the graph)"] > calls["graph_rag"]  # extraction ran only the first time

