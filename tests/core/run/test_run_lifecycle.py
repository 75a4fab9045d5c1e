"""Runs that are left, killed or raced: every run ends with a recorded status, turns keep their own runs.

Scripted models make the timing deterministic (only the answer is slow); processes that die are
real child processes killed with SIGKILL.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time

import pytest

from core.config import load_settings
from core.run.runner import RunInputError, resume, run, stream_run
from core.runtime.context import make_context
from core.store.checkpoint import pending_interrupts
from core.store.history import thread_history
from core.store.threads import ThreadRegistry, get_registry
from support.processes import child, dead_pid, kill, read_until
from support.scripted import ScriptedChatModel
from support.workflow_script import Script, role_of

ANSWERS = ["첫 번째 답입니다 [1].", "두 번째 답입니다 [1].", "세 번째 답입니다 [1]."]


@pytest.fixture
def data_settings(sample_data_dir, tmp_path):
    """A private data directory with the indexed sample collections (runs write threads and checkpoints)."""
    shutil.copytree(sample_data_dir / "chroma", tmp_path / "data" / "chroma")
    return load_settings(data_dir=str(tmp_path / "data"), provider="embedded", k=2)


def ctx_for(settings, answer: str, gate: threading.Event | None = None):
    """A scripted context: follow-ups are rewritten to themselves, the answer may wait for a gate."""
    script = Script(router={"route": "restaurant_menu"}, answer=answer, contextualize=lambda m: m[-1].content)

    def delay(messages) -> float:
        if role_of(messages) == "answer" and gate is not None:
            gate.wait(30)
        return 0.0

    model = ScriptedChatModel(responder=script, delay=delay)
    return make_context(settings, llm=model, grader=model, web=lambda q: None)


def leave_mid_run(settings, question: str, thread_id: str | None = None) -> str:
    """Start a run and abandon it after its first step, as a page switch does (the generator is closed)."""
    gate = threading.Event()
    events = stream_run("basic", question, settings, thread_id=thread_id, ctx=ctx_for(settings, "never", gate=gate))
    started = next(events)
    assert started["type"] == "start"
    for event in events:
        if event["type"] == "node" and event["node"] == "retrieve":
            break
    gate.set()  # the answer is released only after the consumer has gone: close must not wait for the model
    events.close()
    return started["thread_id"]


# ---------------------------------------------------------------- 1. a run the user leaves is closed


def test_a_run_left_mid_way_is_closed_as_cancelled(data_settings):
    thread_id = leave_mid_run(data_settings, "스테이크 가격?")
    registry = get_registry(data_settings.data_path)
    last = registry.last_run(thread_id)
    assert last["status"] == "cancelled"
    assert last["result"]["termination_reason"] == "cancelled"
    assert "retrieve" in last["result"]["path"]  # how far it got
    assert registry.get(thread_id)["status"] == "cancelled"


class FlakyConnection:
    """A registry connection whose UPDATEs of runs fail ``failures`` times ("database is locked")."""

    def __init__(self, db, failures: int):
        self.db, self.failures = db, failures

    def execute(self, sql, *args):
        if sql.lstrip().upper().startswith("UPDATE RUNS") and self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError("database is locked")
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)

    def __enter__(self):
        return self.db.__enter__()

    def __exit__(self, *exc):
        return self.db.__exit__(*exc)


def test_a_busy_registry_still_closes_the_run(data_settings):
    registry = get_registry(data_settings.data_path)
    real = registry.db
    registry.db = FlakyConnection(real, failures=2)
    try:
        result = run("basic", "스테이크 가격?", data_settings, ctx=ctx_for(data_settings, ANSWERS[0]))
    finally:
        registry.db = real
    assert result["answer"] == ANSWERS[0]
    assert registry.last_run(result["thread_id"])["status"] == "done"
    assert registry.get(result["thread_id"])["status"] == "done"


def test_a_registry_that_stays_busy_leaves_no_run_running_for_ever(data_settings):
    registry = get_registry(data_settings.data_path)
    real = registry.db
    registry.db = FlakyConnection(real, failures=1000)
    try:
        result = run("basic", "스테이크 가격?", data_settings, ctx=ctx_for(data_settings, ANSWERS[0]))
    finally:
        registry.db = real
    assert result["answer"] == ANSWERS[0]  # the answer still reaches the user
    # the run could not be closed; it is no longer this process's, so the next reader closes it
    assert registry.last_run(result["thread_id"])["status"] == "interrupted"
    assert registry.get(result["thread_id"])["status"] == "interrupted"
    again = run("basic", "다시?", data_settings, ctx=ctx_for(data_settings, ANSWERS[1]),
                thread_id=result["thread_id"])
    assert again["answer"] == ANSWERS[1]


def test_a_run_whose_process_was_killed_is_interrupted_and_its_thread_continues(data_settings):
    proc = child(data_settings, "ask")
    try:
        events = read_until(proc, lambda e: e.get("node") == "retrieve")
        thread_id = events[0]["thread_id"]
        registry = ThreadRegistry(data_settings.data_path)  # a second reader, like the CLI while the app runs
        assert registry.last_run(thread_id)["status"] == "running"  # a live owner is left alone
        assert registry.get(thread_id)["status"] == "running"
    finally:
        kill(proc)
    registry = get_registry(data_settings.data_path)
    assert registry.get(thread_id)["status"] == "interrupted"
    last = registry.last_run(thread_id)
    assert last["status"] == "interrupted" and last["result"]["termination_reason"] == "interrupted"
    follow_up = run("basic", "파스타 가격은?", data_settings, thread_id=thread_id, ctx=ctx_for(data_settings, ANSWERS[1]))
    assert follow_up["answer"] == ANSWERS[1] and follow_up["error"] is None
    turns = thread_history(data_settings, thread_id)
    assert [t["result"]["termination_reason"] for t in turns] == ["interrupted", "answered"]
    assert turns[1]["answer"] == ANSWERS[1]


def test_a_review_paused_by_a_process_that_exited_stays_resumable(data_settings):
    proc = child(data_settings, "review")
    events = read_until(proc, lambda e: e["type"] == "interrupt")
    assert proc.wait(timeout=60) == 0
    thread_id = events[0]["thread_id"]
    registry = get_registry(data_settings.data_path)
    assert registry.get(thread_id)["status"] == "waiting"  # its owner is gone, but nothing was running
    assert registry.last_run(thread_id)["status"] == "waiting"
    done = resume(thread_id, {"action": "approve"}, data_settings, ctx=ctx_for(data_settings, ANSWERS[0]), review=True)
    assert done["answer"] == ANSWERS[0]


def test_a_resume_whose_process_died_before_the_review_ran_can_be_resumed_again(data_settings):
    thread_id = paused(data_settings)
    registry = ThreadRegistry(data_settings.data_path, lambda tid: bool(pending_interrupts(data_settings.data_path, tid)))
    claimed = registry.claim_review(thread_id)  # as another process would, which then dies at once
    registry.db.execute("UPDATE runs SET owner_pid=? WHERE id=?", (dead_pid(), claimed["id"]))
    registry.db.commit()
    registry = get_registry(data_settings.data_path)
    assert registry.get(thread_id)["status"] == "waiting"  # its checkpoint still waits at the review
    assert registry.last_run(thread_id)["result"]["interrupt"]["kind"] == "document_review"
    done = resume(thread_id, {"action": "approve"}, data_settings, ctx=ctx_for(data_settings, ANSWERS[0]), review=True)
    assert done["answer"] == ANSWERS[0]


def test_a_resume_killed_mid_way_leaves_the_thread_usable(data_settings):
    proc = child(data_settings, "review")
    thread_id = read_until(proc, lambda e: e["type"] == "interrupt")[0]["thread_id"]
    proc.wait(timeout=60)
    resumer = child(data_settings, "resume", thread_id)
    try:
        read_until(resumer, lambda e: e.get("node") == "review_documents")
        deadline = time.monotonic() + 30  # the step after the review is on disk: the pause is over
        while pending_interrupts(data_settings.data_path, thread_id) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert get_registry(data_settings.data_path).get(thread_id)["status"] == "running"
    finally:
        kill(resumer)
    registry = get_registry(data_settings.data_path)
    assert registry.get(thread_id)["status"] == "interrupted"  # the review was applied; the answer never came
    follow_up = run("adaptive", "파스타 가격은?", data_settings, thread_id=thread_id,
                    ctx=ctx_for(data_settings, ANSWERS[1]))
    assert follow_up["answer"] == ANSWERS[1]


# ---------------------------------------------------------------- 2. turns are matched to runs by id


def test_after_an_abandoned_turn_each_turn_shows_its_own_run(data_settings):
    first = run("basic", "스테이크 가격?", data_settings, ctx=ctx_for(data_settings, ANSWERS[0]))
    thread_id = first["thread_id"]
    leave_mid_run(data_settings, "와인은?", thread_id=thread_id)
    third = run("basic", "파스타 가격은?", data_settings, thread_id=thread_id, ctx=ctx_for(data_settings, ANSWERS[2]))
    assert third["answer"] == ANSWERS[2]
    turns = thread_history(data_settings, thread_id)
    assert [t["question"] for t in turns] == ["스테이크 가격?", "와인은?", "파스타 가격은?"]
    assert [t["result"]["question"] for t in turns] == ["스테이크 가격?", "와인은?", "파스타 가격은?"]
    assert [t["result"]["termination_reason"] for t in turns] == ["answered", "cancelled", "answered"]
    assert turns[1]["answer"] == "" and turns[2]["answer"] == ANSWERS[2]
    assert turns[2]["result"]["answer"] == ANSWERS[2]
    assert turns[2]["result"]["trace"] == third["trace"] and turns[2]["result"]["sources"] == third["sources"]


# ---------------------------------------------------------------- 3. atomic claims


def paused(settings) -> str:
    result = run("adaptive", "스테이크 가격?", settings, ctx=ctx_for(settings, ANSWERS[0]), review=True)
    assert result["interrupted"]
    return result["thread_id"]


def test_two_reviewers_resuming_at_once_one_is_told_it_is_already_being_resumed(data_settings):
    thread_id = paused(data_settings)
    gate = threading.Event()
    first = stream_run("", None, data_settings, thread_id=thread_id, resume={"action": "approve"},
                       ctx=ctx_for(data_settings, ANSWERS[0], gate=gate), review=True)
    assert next(first)["type"] == "start"  # the first reviewer's run is under way
    with pytest.raises(RunInputError, match="already being resumed"):
        resume(thread_id, {"action": "reject", "message": "no"}, data_settings, ctx=ctx_for(data_settings, "x"),
               review=True)
    gate.set()
    events = list(first)
    assert events[-1]["type"] == "done" and events[-1]["result"]["answer"] == ANSWERS[0]
    assert events[-1]["result"]["termination_reason"] != "user_rejected"
    with pytest.raises(RunInputError, match="not waiting"):
        resume(thread_id, {"action": "reject"}, data_settings, ctx=ctx_for(data_settings, "x"))


def test_claims_from_two_registries_on_one_file_have_one_winner(data_settings):
    """Two processes share threads.sqlite: the check and the claim are one statement, so one wins."""
    thread_id = paused(data_settings)
    from core.store.threads import ThreadBusyError

    app, cli = ThreadRegistry(data_settings.data_path), ThreadRegistry(data_settings.data_path)
    outcomes = []

    def claim(registry):
        try:
            outcomes.append(registry.claim_review(thread_id)["id"])
        except ThreadBusyError as exc:
            outcomes.append(str(exc))

    workers = [threading.Thread(target=claim, args=(r,)) for r in (app, cli)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sum(isinstance(o, int) for o in outcomes) == 1, outcomes
    assert any("already being resumed" in str(o) for o in outcomes), outcomes


def test_a_new_turn_on_a_running_thread_is_refused(data_settings):
    gate = threading.Event()
    busy = stream_run("basic", "스테이크 가격?", data_settings, ctx=ctx_for(data_settings, ANSWERS[0], gate=gate))
    thread_id = next(busy)["thread_id"]
    next(busy)  # running now
    with pytest.raises(RunInputError, match="already running"):
        run("basic", "와인은?", data_settings, thread_id=thread_id, ctx=ctx_for(data_settings, "x"))
    gate.set()
    assert list(busy)[-1]["result"]["answer"] == ANSWERS[0]
    assert [t["question"] for t in thread_history(data_settings, thread_id)] == ["스테이크 가격?"]
