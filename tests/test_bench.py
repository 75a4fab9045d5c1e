"""The benchmark's measuring code: critical-path counting and the concurrency comparison."""

import threading

from core import bench


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
    from core.graders import Route

    assert model.with_structured_output(Route).invoke("q").route == "menu"
    assert len(model._intervals) == 1


def test_grading_bench_compares_concurrent_with_sequential():
    rows = bench.bench_grading(latency=0.05)
    assert [r["documents"] for r in rows] == [4, 8]
    for row in rows:
        assert row["sequential_s"] > row["concurrent_s"]
        assert row["speedup"] > 1.5
