"""The compare runner: concurrent runs, merged events, metrics, saved and reopened."""

import shutil
import threading
import time

import pytest

from core.config import load_settings
from core.runtime.context import make_context
from core.studio.compare import compare, is_running, list_comparisons, load_comparison, metrics_rows, stream_compare
from support.helpers import web_down
from support.processes import child, kill, read_until
from support.scripted import ScriptedChatModel
from support.workflow_script import Script, role_of


def at_answer(hold):
    """A ScriptedChatModel delay that calls ``hold()`` (a gate's or a barrier's wait) before each answer, and no sleep."""
    def delay(messages) -> float:
        if role_of(messages) == "answer":
            hold()
        return 0.0
    return delay


def factory(settings, delay=None):
    def make(pattern_id):
        script = Script(router={"route": "restaurant_menu"}, retrieval={"kind": "lookup"},
                        sources={"sources": ["restaurant_menu"]},
                        relevance={"relevant": "yes"}, grounded={"grounded": "yes"},
                        usefulness={"useful": "yes", "score": 5}, crag={"grade": "correct", "confidence": 0.9},
                        strip=lambda m: {"verdicts": ["yes"] * sum("<document>" in line for line in m[-1].content.splitlines())},
                        answer="시그니처 스테이크는 ₩35,000입니다 [1].")
        model = ScriptedChatModel(responder=script, delay=delay)
        return make_context(settings, llm=model, grader=model, web=web_down)
    return make


def test_patterns_run_concurrently_and_each_column_gets_its_events(sample_settings):
    settings = sample_settings.with_(k=2)
    patterns = ["basic", "adaptive", "self_rag"]
    all_answering = threading.Barrier(len(patterns), timeout=60)  # run one at a time, and it breaks: no answer
    events = list(stream_compare("스테이크 메뉴의 가격은 얼마인가요?", patterns, settings,
                                 ctx_factory=factory(settings, delay=at_answer(all_answering.wait))))
    assert not all_answering.broken
    # concurrent: every run has taken a step before the first one ends (no wall clock: 2 cores are shared)
    first_done = next(i for i, e in enumerate(events) if e.get("type") == "done")
    assert {e["pattern"] for e in events[:first_done] if e.get("type") == "node"} == set(patterns)
    assert events[0]["type"] == "comparing" and is_running(events[0]["comparison"])
    assert {e["pattern"] for e in events if "pattern" in e} == set(patterns)
    assert [e["type"] for e in events].count("done") == 3
    record = events[-1]["comparison"]
    assert not is_running(record) and record["id"] == events[0]["comparison"]["id"]
    assert set(record["results"]) == set(patterns)
    assert len({r["thread_id"] for r in record["results"].values()}) == 3  # one thread per pattern
    rows = {r["pattern"]: r for r in metrics_rows(record)}
    assert rows["self_rag"]["termination_reason"] == "accepted" and rows["basic"]["llm_calls"] == 1
    assert list_comparisons(settings)[0]["id"] == record["id"]
    assert load_comparison(settings, record["id"])["question"] == "스테이크 메뉴의 가격은 얼마인가요?"


def test_a_pattern_that_fails_does_not_stop_the_others(sample_settings):
    record = compare("스테이크 가격?", ["basic", "no_such_pattern"], sample_settings,
                     ctx_factory=factory(sample_settings))
    assert record["results"]["basic"]["answer"]
    assert "unknown pattern" in record["results"]["no_such_pattern"]["error"]


def test_bad_input_is_refused_before_anything_runs(sample_settings):
    with pytest.raises(ValueError):
        list(stream_compare("  ", ["basic"], sample_settings))
    with pytest.raises(ValueError):
        list(stream_compare("질문", [], sample_settings))
    with pytest.raises(KeyError):
        load_comparison(sample_settings, "../../etc/passwd")


def test_a_comparison_left_early_still_completes_on_disk(sample_settings):
    """The page that started it reruns (the generator is closed): the workers save every result."""
    settings = sample_settings.with_(k=2)
    answers = threading.Event()  # no answer before the page has gone
    stream = stream_compare("스테이크 가격?", ["basic", "adaptive"], settings,
                            ctx_factory=factory(settings, delay=at_answer(lambda: answers.wait(60))))
    first = next(stream)
    stream.close()
    assert first["type"] == "comparing"
    started = load_comparison(settings, first["comparison"]["id"])
    assert is_running(started) and started["results"] == {"basic": {}, "adaptive": {}}
    assert {c["id"]: c["running"] for c in list_comparisons(settings)}[started["id"]]  # listed as running
    answers.set()
    deadline = time.time() + 60
    while time.time() < deadline and is_running(load_comparison(settings, started["id"])):
        time.sleep(0.1)
    record = load_comparison(settings, started["id"])
    assert not is_running(record)
    assert all(record["results"][p]["answer"] for p in ("basic", "adaptive"))


def test_comparison_threads_stay_out_of_the_chat_lists(sample_settings):
    from core.run.runner import run
    from core.store.threads import get_registry

    settings = sample_settings.with_(k=2)
    compared = compare("스테이크 가격?", ["basic"], settings, ctx_factory=factory(settings))["results"]["basic"]
    chatted = run("basic", "파스타 가격?", settings, ctx=factory(settings)("basic"))
    registry = get_registry(settings.data_path)  # shared by the session's tests: look for these two threads
    chats = {t["thread_id"] for t in registry.list(pattern="basic", origin="chat")}
    comparisons = {t["thread_id"] for t in registry.list(pattern="basic", origin="compare")}
    assert chatted["thread_id"] in chats and chatted["thread_id"] not in comparisons
    assert compared["thread_id"] in comparisons and compared["thread_id"] not in chats


def test_a_result_that_cannot_be_saved_still_ends_the_comparison(sample_settings, monkeypatch):
    """Saving fails (disk full): the page is told, and the stream ends instead of waiting for ever."""
    import core.studio.compare

    settings = sample_settings.with_(k=2)
    real, saves = core.studio.compare.save_comparison, []

    def full_disk(record, s):
        saves.append(record["id"])
        if len(saves) > 1:  # the first save (the record as it starts) works, the results' saves fail
            raise OSError(28, "No space left on device")
        real(record, s)

    monkeypatch.setattr(core.studio.compare, "save_comparison", full_disk)
    seen: list = []
    consumer = threading.Thread(target=lambda: seen.extend(stream_compare("스테이크 가격?", ["basic"], settings,
                                                                          ctx_factory=factory(settings))), daemon=True)
    consumer.start()
    consumer.join(60)
    assert not consumer.is_alive(), "the comparison never ended"
    assert seen[-1]["type"] == "compared" and seen[-1]["comparison"]["results"]["basic"]["answer"]
    assert any("could not be saved" in e.get("message", "") and "No space left" in e["message"] for e in seen)


def test_a_comparison_whose_process_was_killed_does_not_show_running_for_ever(sample_data_dir, tmp_path):
    shutil.copytree(sample_data_dir / "chroma", tmp_path / "data" / "chroma")
    settings = load_settings(data_dir=str(tmp_path / "data"), provider="embedded", k=2)
    proc = child(settings, "compare")
    try:
        started = read_until(proc, lambda e: e["type"] == "comparing")[-1]["comparison"]
        assert list_comparisons(settings)[0]["running"]  # its process is alive: left alone
    finally:
        kill(proc)
    [listed] = list_comparisons(settings)
    assert listed["id"] == started["id"] and not listed["running"]
    record = load_comparison(settings, started["id"])
    assert not is_running(record)
    assert {p: r["termination_reason"] for p, r in record["results"].items()} == {"basic": "interrupted",
                                                                                   "adaptive": "interrupted"}
    assert "server stopped" in record["results"]["basic"]["error"]


def test_runs_beyond_the_process_cap_wait_and_say_they_are_queued(sample_settings):
    settings = sample_settings.with_(k=2, max_concurrent_runs=1)
    answers = threading.Event()  # the run holding the one slot answers only once the other has said it waits
    events = []
    for event in stream_compare("스테이크 가격?", ["basic", "adaptive"], settings,
                                ctx_factory=factory(settings, delay=at_answer(lambda: answers.wait(60)))):
        events.append(event)
        if event.get("type") == "queued":
            answers.set()
    queued = [e for e in events if e.get("type") == "queued"]
    assert queued and queued[0]["place"] == 1 and queued[0]["running"] == 1
    steps = [e["pattern"] for e in events if e.get("type") == "node"]
    first = steps[0]
    assert steps == [first] * steps.count(first) + [p for p in steps if p != first]  # one run, then the other
    assert queued[0]["pattern"] != first
    assert [e["type"] for e in events].count("done") == 2
