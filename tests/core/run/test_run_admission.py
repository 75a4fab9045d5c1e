"""Runs in flight are bounded per visitor and per process; a refused run leaves nothing behind (issue 53, item 2)."""

import threading

import pytest

from core.config import as_visitor, visitor_of
from core.run.run_slots import RunRefused, RunSlots
from core.run.runner import RunInputError, stream_run
from core.runtime.context import make_context
from core.store.threads import get_registry
from core.studio.compare import list_comparisons, stream_compare
from support.scripted import ScriptedChatModel


def test_a_visitor_past_their_limit_is_refused_in_one_line_naming_the_setting():
    slots = RunSlots()
    tickets = [slots.join("v1", per_visitor=3, total=10) for _ in range(3)]
    with pytest.raises(RunRefused, match=r"3 runs in flight.*RAG_MAX_RUNS_PER_VISITOR"):
        slots.join("v1", per_visitor=3, total=10)
    slots.join("v2", per_visitor=3, total=10)  # another visitor is not held up by the first one's runs
    slots.leave(tickets[0], started=False)
    slots.join("v1", per_visitor=3, total=10)  # a place given back is free again


def test_the_process_total_is_refused_with_its_own_setting():
    slots = RunSlots()
    for n in range(4):
        slots.join(f"v{n}", per_visitor=3, total=4)
    with pytest.raises(RunRefused, match=r"4 runs in flight.*RAG_MAX_RUNS_IN_FLIGHT"):
        slots.join("v9", per_visitor=3, total=4)


def test_a_visitor_is_named_by_a_digest_never_by_the_session_id(settings):
    tagged = as_visitor(settings, "session-secret-id")
    assert visitor_of(tagged) and "session-secret-id" not in repr(tagged.public()) and visitor_of(settings) == ""


def test_twenty_runs_at_once_by_one_visitor_past_the_limit_are_refused_and_every_admitted_one_completes(sample_settings):
    settings = as_visitor(sample_settings.with_(max_runs_per_visitor=5, max_concurrent_runs=2), "visitor-a")
    before = {t["thread_id"] for t in get_registry(settings).list()}
    gate = threading.Event()
    llm = ScriptedChatModel(replies=["답입니다."] * 20, delay=lambda _messages: gate.wait(30) and 0)
    streams, refused = [], []
    for _ in range(20):
        stream = stream_run("basic", "스테이크 가격은?", settings, ctx=make_context(settings, llm=llm))
        try:
            assert next(stream)["type"] == "start"
            streams.append(stream)
        except RunInputError as exc:
            refused.append(str(exc))
    assert len(streams) == 5 and len(refused) == 15
    assert all("RAG_MAX_RUNS_PER_VISITOR" in message and "5 runs" in message for message in refused)
    gate.set()
    results = []
    workers = [threading.Thread(target=lambda s=s: results.append(list(s)[-1])) for s in streams]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [r["type"] for r in results] == ["done"] * 5
    assert all(r["result"]["answer"] == "답입니다." for r in results)
    registry = get_registry(settings)
    assert all(registry.get(r["result"]["thread_id"])["status"] == "done" for r in results)
    new = {t["thread_id"] for t in registry.list()} - before  # the refused runs left no thread behind
    assert new == {r["result"]["thread_id"] for r in results}


def test_a_comparison_that_needs_more_places_than_the_visitor_has_is_refused_before_anything_is_saved(sample_settings):
    settings = as_visitor(sample_settings.with_(max_runs_per_visitor=2), "visitor-b")
    before = len(list_comparisons(settings))
    with pytest.raises(RunInputError, match="3 runs at once; .*2 runs in flight .*RAG_MAX_RUNS_PER_VISITOR"):
        next(stream_compare("스테이크 가격은?", ["basic", "rag_fusion", "adaptive"], settings))
    assert len(list_comparisons(settings)) == before


def test_a_fork_past_the_visitors_limit_is_refused_before_its_thread_is_written(settings):
    from core.run.run_slots import SLOTS
    from core.studio.fork import ForkError, stream_fork

    settings = as_visitor(settings.with_(max_runs_per_visitor=1), "visitor-c")
    ticket = SLOTS.join(visitor_of(settings), 1, 0)
    try:
        with pytest.raises(ForkError, match="RAG_MAX_RUNS_PER_VISITOR"):
            stream_fork(settings, "no-such-thread", 1, {"question": "x"})
        assert get_registry(settings).list() == []
    finally:
        SLOTS.leave(ticket, started=False)
