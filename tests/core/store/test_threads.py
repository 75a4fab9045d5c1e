"""The thread registry: origins, and registries written before origins existed."""

import sqlite3

import pytest

from core.store.threads import ThreadRegistry


def test_origin_filters_and_unknown_origins_are_refused(tmp_path):
    registry = ThreadRegistry(tmp_path)
    registry.touch("a", "basic", "chat question", "done")
    registry.touch("b", "basic", "eval question", "done", origin="eval")
    assert [t["thread_id"] for t in registry.list(origin="chat")] == ["a"]
    assert [t["thread_id"] for t in registry.list(pattern="basic", origin="eval")] == ["b"]
    assert len(registry.list(pattern="basic")) == 2
    with pytest.raises(ValueError, match="origin"):
        registry.touch("c", "basic", "x", "done", origin="nightly")


def test_a_registry_from_before_origins_is_migrated_and_keeps_its_threads(tmp_path):
    db = sqlite3.connect(tmp_path / "threads.sqlite")
    db.execute("CREATE TABLE threads (thread_id TEXT PRIMARY KEY, pattern TEXT NOT NULL, title TEXT NOT NULL, "
               "status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL)")
    db.execute("INSERT INTO threads VALUES ('old', 'adaptive', 'old chat', 'done', 1, 1)")
    db.commit()
    db.close()
    registry = ThreadRegistry(tmp_path)
    assert registry.list(origin="chat")[0]["title"] == "old chat"
    registry.touch("new", "adaptive", "from a comparison", "done", origin="compare")
    assert [t["thread_id"] for t in registry.list(pattern="adaptive", origin="chat")] == ["old"]


def test_a_comparison_thread_continued_in_a_chat_becomes_a_chat(tmp_path):
    registry = ThreadRegistry(tmp_path)
    registry.touch("t", "basic", "compared question", "done", origin="compare")
    registry.touch("t", "basic", "compared question", "running", origin="eval")  # another non-chat touch: unchanged
    assert registry.get("t")["origin"] == "compare"
    registry.touch("t", "basic", "follow-up", "running")  # a chat turn in it
    assert registry.get("t")["origin"] == "chat" and registry.get("t")["title"] == "compared question"
