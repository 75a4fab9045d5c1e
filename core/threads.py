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
    status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    origin TEXT NOT NULL DEFAULT 'chat');
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL, started_at REAL NOT NULL,
    finished_at REAL, question TEXT NOT NULL, status TEXT NOT NULL, result TEXT);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs(thread_id, id);
"""
STATUSES = ("running", "done", "waiting", "failed")
# who started a thread: chat threads are listed in the chat sidebars; comparison and evaluation
# runs and what-if forks keep their threads (to inspect or export) without cluttering those lists
ORIGINS = ("chat", "compare", "eval", "fork")


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
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(threads)")}
            if "origin" not in columns:  # a registry from before origins: its threads were all chats
                self.db.execute("ALTER TABLE threads ADD COLUMN origin TEXT NOT NULL DEFAULT 'chat'")

    def _exec(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self.lock, self.db:
            return self.db.execute(sql, args).fetchall()

    # -- threads

    def touch(self, thread_id: str, pattern: str, title: str, status: str, origin: str = "chat") -> None:
        if origin not in ORIGINS:
            raise ValueError(f"unknown thread origin {origin!r}; expected one of {', '.join(ORIGINS)}")
        now = time.time()
        self._exec(
            "INSERT INTO threads(thread_id, pattern, title, status, created_at, updated_at, origin) "
            "VALUES (?,?,?,?,?,?,?) ON CONFLICT(thread_id) "
            "DO UPDATE SET status=excluded.status, updated_at=excluded.updated_at, "
            # a comparison's or evaluation's thread continued in a chat becomes a chat
            "origin=CASE WHEN excluded.origin='chat' THEN 'chat' ELSE threads.origin END",
            (thread_id, pattern, title[:80], status, now, now, origin),
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

    def list(self, pattern: str | None = None, status: str | None = None, origin: str | None = None) -> list[dict]:
        sql, args = "SELECT * FROM threads WHERE 1=1", []
        for column, value in (("pattern", pattern), ("status", status), ("origin", origin)):
            if value:
                sql, args = sql + f" AND {column}=?", args + [value]
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
