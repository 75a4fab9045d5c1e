"""The checkpoint store: reads that stay cheap as history grows, pruning, and an allow-list for loading."""

from __future__ import annotations

import shutil
from http import HTTPStatus

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener

from core.cli.main import main
from core.config import load_settings
from core.run.runner import resume, run
from core.runtime.context import make_context
from core.store.checkpoint import get_checkpointer, prune
from core.store.history import pending_reviews, thread_history
from support.app_support import happy_script
from support.scripted import ScriptedChatModel

QUESTIONS = ["스테이크 가격?", "파스타 가격은?", "와인은?"]


@pytest.fixture
def data_settings(sample_data_dir, tmp_path):
    shutil.copytree(sample_data_dir / "chroma", tmp_path / "data" / "chroma")
    return load_settings(data_dir=str(tmp_path / "data"), provider="embedded", k=2)


def ctx(settings):
    script = happy_script()
    script.replies["contextualize"] = lambda m: m[-1].content  # follow-ups stand alone
    model = ScriptedChatModel(responder=script)
    return make_context(settings, llm=model, grader=model, web=lambda q: None)


class CountingSerde:
    """Wraps the saver's serializer and counts what it deserialises."""

    def __init__(self, serde):
        self.serde, self.loads = serde, 0

    def loads_typed(self, data):
        self.loads += 1
        return self.serde.loads_typed(data)

    def __getattr__(self, name):
        return getattr(self.serde, name)


def test_a_thread_is_read_back_from_its_latest_checkpoint_whatever_its_length(data_settings, monkeypatch):
    saver = get_checkpointer(data_settings.data_path)
    counting = CountingSerde(saver.serde)
    monkeypatch.setattr(saver, "serde", counting)
    thread_id = run("adaptive", QUESTIONS[0], data_settings, ctx=ctx(data_settings))["thread_id"]
    counting.loads = 0
    assert len(thread_history(data_settings, thread_id)) == 1
    after_one = counting.loads
    for question in QUESTIONS[1:]:
        run("adaptive", question, data_settings, ctx=ctx(data_settings), thread_id=thread_id)
    counting.loads = 0
    turns = thread_history(data_settings, thread_id)
    assert [t["question"] for t in turns] == QUESTIONS and all(t["answer"] for t in turns)
    assert counting.loads == after_one  # one checkpoint (and its pending writes), not the whole history


def test_the_review_list_comes_from_the_registry_not_from_every_checkpoint(data_settings, monkeypatch):
    done = run("adaptive", QUESTIONS[0], data_settings, ctx=ctx(data_settings))
    paused = run("adaptive", QUESTIONS[1], data_settings, ctx=ctx(data_settings), review=True)
    saver = get_checkpointer(data_settings.data_path)

    def no_scan(*args, **kwargs):
        raise AssertionError("the review list read every checkpoint in the database")

    monkeypatch.setattr(saver, "list", no_scan)
    [item] = pending_reviews(data_settings)
    assert item["thread_id"] == paused["thread_id"] != done["thread_id"]
    assert item["interrupt"]["kind"] == "document_review" and item["question"] == QUESTIONS[1]


def _checkpoints(settings) -> dict:
    """(thread_id, namespace) -> how many checkpoints it has."""
    db = get_checkpointer(settings.data_path).conn
    rows = db.execute("SELECT thread_id, checkpoint_ns, COUNT(*) FROM checkpoints GROUP BY 1, 2").fetchall()
    return {(t, ns): n for t, ns, n in rows}


def test_prune_keeps_each_threads_latest_and_every_thread_still_works(data_settings, capsys):
    chat = run("adaptive", QUESTIONS[0], data_settings, ctx=ctx(data_settings))["thread_id"]
    run("adaptive", QUESTIONS[1], data_settings, ctx=ctx(data_settings), thread_id=chat)
    paused = run("adaptive", QUESTIONS[2], data_settings, ctx=ctx(data_settings), review=True)["thread_id"]
    before = _checkpoints(data_settings)
    assert before[(chat, "")] > 4

    assert main(["--data-dir", str(data_settings.data_path), "prune", "--keep-last", "1"]) == 0
    printed = capsys.readouterr().out
    assert f"deleted {sum(before.values()) - len(before)} checkpoint(s), kept {len(before)}" in printed
    assert set(_checkpoints(data_settings).values()) == {1}
    turns = thread_history(data_settings, chat)
    assert [t["question"] for t in turns] == QUESTIONS[:2] and all(t["answer"] for t in turns)
    assert [p["thread_id"] for p in pending_reviews(data_settings)] == [paused]
    answered = resume(paused, {"action": "approve"}, data_settings, ctx=ctx(data_settings), review=True)
    assert answered["answer"] and answered["error"] is None
    follow_up = run("adaptive", "디저트는?", data_settings, ctx=ctx(data_settings), thread_id=chat)
    assert follow_up["answer"] and len(thread_history(data_settings, chat)) == 3


def test_prune_by_age_and_its_refusals(data_settings, capsys):
    thread_id = run("basic", QUESTIONS[0], data_settings, ctx=ctx(data_settings))["thread_id"]
    count = _checkpoints(data_settings)[(thread_id, "")]
    assert prune(data_settings.data_path, older_than_days=1)["deleted"] == 0  # all are recent
    assert prune(data_settings.data_path, keep_last=2, older_than_days=0)["deleted"] == count - 2
    report = prune(data_settings.data_path, older_than_days=0, vacuum=True)
    assert report["deleted"] == 1 and report["kept"] == 1  # the latest stays, however old
    assert report["bytes_after"] <= report["bytes_before"]
    assert main(["--data-dir", str(data_settings.data_path), "prune"]) == 2
    assert "--keep-last" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--data-dir", str(data_settings.data_path), "prune", "--keep-last", "0"])


@pytest.mark.blocked_types_expected
def test_checkpoints_load_only_allowed_types(data_settings):
    """A type outside the allow-list is never rebuilt from a checkpoint (a tampered database runs no code)."""
    saver = get_checkpointer(data_settings.data_path)
    events = []
    unregister = register_serde_event_listener(events.append)
    try:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"odd": HTTPStatus.OK, "note": "plain data"}  # an Enum: rebuilt by import
        config = {"configurable": {"thread_id": "tampered", "checkpoint_ns": ""}}
        saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
        values = saver.get_tuple(config).checkpoint["channel_values"]
    finally:
        unregister()
    assert values["note"] == "plain data"
    assert not isinstance(values["odd"], HTTPStatus)
    assert {"kind": "msgpack_blocked", "module": "http", "name": "HTTPStatus"} in events


def test_checkpoints_of_the_patterns_load_whole_under_the_allow_list(data_settings):
    """Messages, documents and review pauses survive the allow-list (other patterns: tests/conftest.py guard)."""
    settings = data_settings
    run("basic", QUESTIONS[0], settings, ctx=ctx(settings))
    run("self_rag", QUESTIONS[0], settings, ctx=ctx(settings))
    paused = run("adaptive", QUESTIONS[0], settings, ctx=ctx(settings), review=True)
    resume(paused["thread_id"], {"action": "approve"}, settings, ctx=ctx(settings), review=True)
    call = {"name": "usa_ict", "args": {"query": "반도체 정책"}, "id": "c1", "type": "tool_call"}
    agent = ScriptedChatModel(replies=[AIMessage("", tool_calls=[call]), "미국은 527억 달러를 배정했습니다."])
    run("react_native", "미국 반도체 정책은?", settings, ctx=make_context(settings, llm=agent, grader=agent, web=lambda q: None))
    events = []
    unregister = register_serde_event_listener(events.append)
    try:
        items = list(get_checkpointer(settings.data_path).list(None))
    finally:
        unregister()
    assert events == []
    assert len({i.config["configurable"]["thread_id"] for i in items}) == 4
    values = [v for i in items for v in i.checkpoint["channel_values"].values()]
    flat = [x for v in values for x in (v if isinstance(v, list) else [v])]
    assert any(isinstance(x, Document) for x in flat) and any(isinstance(x, BaseMessage) and x.type == "tool"
                                                                for x in flat)
