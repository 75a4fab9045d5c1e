"""Which thread is a fork of which: a small table next to the thread registry, and reading forks back."""

from __future__ import annotations

import json
import threading
import time

from core.config import Settings
from core.store.db import Database, data_dir, database_url, shared_database
from core.store.threads import get_registry


class ForkStore:
    """Which thread is a fork of which (turn, step, changes): a table next to the thread registry."""

    _stores: dict[str, ForkStore] = {}
    _lock = threading.Lock()

    def __init__(self, where):
        url = database_url(where)
        self.database = shared_database(url) if url else Database(sqlite_path=data_dir(where) / "threads.sqlite")
        if not url:  # Postgres has the table from its schema (core.store.db)
            with self.database.transaction() as tx:
                tx.execute("CREATE TABLE IF NOT EXISTS forks (thread_id TEXT PRIMARY KEY, parent TEXT NOT NULL, "
                           "turn INTEGER NOT NULL, record TEXT NOT NULL, runs_before INTEGER NOT NULL, "
                           "created_at REAL NOT NULL)")
                tx.execute("CREATE INDEX IF NOT EXISTS forks_by_parent ON forks(parent, turn)")

    @classmethod
    def of(cls, where) -> ForkStore:
        """The fork table of a data directory or of Settings (their database when one is set)."""
        get_registry(where)  # the registry creates the database and its threads table
        key = database_url(where) or str(data_dir(where).resolve())
        with cls._lock:
            if key not in cls._stores:
                cls._stores[key] = ForkStore(where)
            return cls._stores[key]

    def add(self, thread_id: str, forked_from: dict, runs_before: int, copied: int) -> None:
        self.database.execute("INSERT INTO forks(thread_id, parent, turn, record, runs_before, created_at) "
                              "VALUES (?,?,?,?,?,?)",
                              (thread_id, forked_from["thread"], forked_from["turn"],
                               json.dumps({**forked_from, "checkpoints_copied": copied}, ensure_ascii=False),
                               runs_before, time.time()))

    def rows(self, where: str, args: tuple) -> list[dict]:
        # forks whose thread was deleted are left out
        return self.database.execute(f"SELECT f.* FROM forks f JOIN threads t USING(thread_id) WHERE {where} "
                                     "ORDER BY f.created_at", args).rows


def forks_of(settings: Settings, thread_id: str, turn: int | None = None) -> list[dict]:
    """The forks made from a thread (one turn, or all), oldest first, each with its run result so far."""
    store = ForkStore.of(settings)
    rows = store.rows("f.parent=?" + (" AND f.turn=?" if turn is not None else ""),
                      (thread_id,) if turn is None else (thread_id, turn))
    return [_fork_entry(settings, row) for row in rows]


def fork_info(settings: Settings, thread_id: str) -> dict | None:
    """The fork record of a thread (None when it is not a fork)."""
    rows = ForkStore.of(settings).rows("f.thread_id=?", (thread_id,))
    return _fork_entry(settings, rows[0]) if rows else None


def _fork_entry(settings: Settings, row: dict) -> dict:
    runs = get_registry(settings).runs(row["thread_id"])
    run = runs[row["runs_before"]] if len(runs) > row["runs_before"] else None
    record = json.loads(row["record"])
    result = dict((run or {}).get("result") or {})
    if result:
        result["forked_from"] = {k: record[k] for k in ("thread", "turn", "step", "node", "checkpoint_id", "changes", "replay")}
    return {"thread_id": row["thread_id"], "forked_from": record, "status": (run or {}).get("status", "running"),
            "result": result or None, "created_at": row["created_at"]}
