"""Thread registry: title, pattern and status of each conversation, plus each finished run's record.

Graph state lives in the checkpointer; this small table is what lists, renames and deletes
threads and keeps each run's result (answer, sources, trace, usage) for display and export.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY, pattern TEXT NOT NULL, title TEXT NOT NULL,
    status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL, started_at REAL NOT NULL,
    finished_at REAL, question TEXT NOT NULL, status TEXT NOT NULL, result TEXT);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs(thread_id, id);
"""
STATUSES = ("running", "done", "waiting", "failed")


class ThreadRegistry:
    def __init__(self, data_dir: Path):
        path = Path(data_dir) / "threads.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self.db = sqlite3.connect(str(path), check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        with self.lock, self.db:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)

    def _exec(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self.lock, self.db:
            return self.db.execute(sql, args).fetchall()

    # -- threads

    def touch(self, thread_id: str, pattern: str, title: str, status: str) -> None:
        now = time.time()
        self._exec(
            "INSERT INTO threads VALUES (?,?,?,?,?,?) ON CONFLICT(thread_id) "
            "DO UPDATE SET status=excluded.status, updated_at=excluded.updated_at",
            (thread_id, pattern, title[:80], status, now, now),
        )

    def set_status(self, thread_id: str, status: str) -> None:
        self._exec("UPDATE threads SET status=?, updated_at=? WHERE thread_id=?", (status, time.time(), thread_id))

    def rename(self, thread_id: str, title: str) -> None:
        title = " ".join(title.split())[:80]
        if not title:
            raise ValueError("a thread title cannot be empty")
        self._exec("UPDATE threads SET title=? WHERE thread_id=?", (title, thread_id))

    def get(self, thread_id: str) -> dict | None:
        rows = self._exec("SELECT * FROM threads WHERE thread_id=?", (thread_id,))
        return dict(rows[0]) if rows else None

    def list(self, pattern: str | None = None, status: str | None = None) -> list[dict]:
        sql, args = "SELECT * FROM threads WHERE 1=1", []
        if pattern:
            sql, args = sql + " AND pattern=?", args + [pattern]
        if status:
            sql, args = sql + " AND status=?", args + [status]
        return [dict(r) for r in self._exec(sql + " ORDER BY updated_at DESC", tuple(args))]

    def delete(self, thread_id: str, checkpointer=None) -> None:
        self._exec("DELETE FROM runs WHERE thread_id=?", (thread_id,))
        self._exec("DELETE FROM threads WHERE thread_id=?", (thread_id,))
        if checkpointer is not None:
            checkpointer.delete_thread(thread_id)

    # -- runs

    def start_run(self, thread_id: str, question: str) -> int:
        with self.lock, self.db:
            cur = self.db.execute(
                "INSERT INTO runs(thread_id, started_at, question, status) VALUES (?,?,?,?)",
                (thread_id, time.time(), question, "running"))
            return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str, result: dict) -> None:
        self._exec("UPDATE runs SET finished_at=?, status=?, result=? WHERE id=?",
                   (time.time(), status, json.dumps(result, ensure_ascii=False, default=str), run_id))

    def last_run(self, thread_id: str) -> dict | None:
        rows = self._exec("SELECT * FROM runs WHERE thread_id=? ORDER BY id DESC LIMIT 1", (thread_id,))
        return _run_row(rows[0]) if rows else None

    def runs(self, thread_id: str) -> list[dict]:
        rows = self._exec("SELECT * FROM runs WHERE thread_id=? ORDER BY id", (thread_id,))
        return [_run_row(r) for r in rows]


def _run_row(row: sqlite3.Row) -> dict:
    out = dict(row)
    out["result"] = json.loads(out["result"]) if out["result"] else None
    return out


_registries: dict[str, ThreadRegistry] = {}
_lock = threading.Lock()


def get_registry(data_dir: Path) -> ThreadRegistry:
    key = str(Path(data_dir).resolve())
    with _lock:
        if key not in _registries:
            _registries[key] = ThreadRegistry(Path(data_dir))
        return _registries[key]
