"""Thread registry: title, pattern and status of each conversation, plus each finished run's record.

Graph state lives in the checkpointer; this small table is what lists, renames and deletes
threads and keeps each run's result (answer, sources, trace, usage) for display and export.

A run is claimed atomically (a thread runs one turn at a time; a paused review is resumed once)
and records its owner process. A run left ``running`` by a process that is gone is closed by the
next reader: ``interrupted``, or ``waiting`` again when its thread is still paused at a review.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from core.config import refuse_if_read_only
from core.store import owner
from core.store.db import Database, StoreError, database_url, shared_database, store_error, transient_errors

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY, pattern TEXT NOT NULL, title TEXT NOT NULL,
    status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
    origin TEXT NOT NULL DEFAULT 'chat');
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT NOT NULL, started_at REAL NOT NULL,
    finished_at REAL, question TEXT NOT NULL, status TEXT NOT NULL, result TEXT,
    owner_host TEXT, owner_pid INTEGER, owner_started TEXT);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs(thread_id, id);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status);
"""
# cancelled: its process stopped it (the page was left); interrupted: its process died mid-run
STATUSES = ("running", "done", "waiting", "failed", "cancelled", "interrupted")
BUSY = ("running", "waiting")  # a new turn must wait: a turn is running, or a review is pending
WRITE_ATTEMPTS = 5  # closing a run is retried this often while SQLite is busy
# who started a thread: chat threads are listed in the chat sidebars; comparison and evaluation
# runs and what-if forks keep their threads (to inspect or export) without cluttering those lists
ORIGINS = ("chat", "compare", "eval", "fork")


class ThreadBusyError(RuntimeError):
    """The thread cannot take this run now: a turn is running, a review is pending or being resumed."""


# run ids this process is running, per registry (file or database): the only judge of its own runs
_active: dict[str, set[int]] = {}


class ThreadRegistry:
    def __init__(self, data_dir, still_paused: Callable[[str], bool] | None = None, read_only: bool = False):
        """``data_dir``: a data directory (SQLite file), or Settings / a URL naming a Postgres database.

        ``still_paused(thread_id)`` says whether the thread's graph waits at an interrupt (from the checkpoints).
        ``read_only``: renaming and deleting threads is refused (new runs are still recorded).
        """
        self.read_only = read_only
        url = database_url(data_dir)
        self.database = shared_database(url) if url else Database(sqlite_path=Path(data_dir) / "threads.sqlite")
        self.active = _active.setdefault(self.database.key, set())
        self.still_paused = still_paused
        if not url:
            self._sqlite_schema()

    def _sqlite_schema(self) -> None:
        with self.database.transaction() as tx:
            tx.execute("PRAGMA journal_mode=WAL")
            tx.execute("PRAGMA synchronous=NORMAL")
            tx.conn.executescript(_SCHEMA)
            columns = {row["name"] for row in tx.execute("PRAGMA table_info(threads)").rows}
            if "origin" not in columns:  # a registry from before origins: its threads were all chats
                tx.execute("ALTER TABLE threads ADD COLUMN origin TEXT NOT NULL DEFAULT 'chat'")
            run_columns = {row["name"] for row in tx.execute("PRAGMA table_info(runs)").rows}
            for column, kind in (("owner_host", "TEXT"), ("owner_pid", "INTEGER"), ("owner_started", "TEXT")):
                if column not in run_columns:  # from before owners: its running runs count as orphans
                    tx.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")

    @property
    def db(self):
        """The SQLite connection (tests swap in one that reports "database is locked")."""
        return self.database.conn

    @db.setter
    def db(self, conn) -> None:
        self.database.conn = conn

    def _exec(self, sql: str, args: tuple = ()) -> list[dict]:
        return self.database.execute(sql, args).rows

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
        refuse_if_read_only(self, "renaming a thread")
        title = " ".join(title.replace("\x00", "").split())[:80]
        if not title:
            raise ValueError("a thread title cannot be empty")
        self._exec("UPDATE threads SET title=? WHERE thread_id=?", (title, thread_id))

    def get(self, thread_id: str) -> dict | None:
        self.reap()
        rows = self._exec("SELECT * FROM threads WHERE thread_id=?", (thread_id,))
        return dict(rows[0]) if rows else None

    def list(self, pattern: str | None = None, status: str | None = None, origin: str | None = None) -> list[dict]:
        self.reap()
        sql, args = "SELECT * FROM threads WHERE 1=1", []
        for column, value in (("pattern", pattern), ("status", status), ("origin", origin)):
            if value:
                sql, args = sql + f" AND {column}=?", args + [value]
        return [dict(r) for r in self._exec(sql + " ORDER BY updated_at DESC", tuple(args))]

    def delete(self, thread_id: str, checkpointer=None) -> None:
        """Delete a thread, its runs and (given the checkpointer) its checkpoints."""
        refuse_if_read_only(self, "deleting a thread")
        self.discard(thread_id, checkpointer)

    def discard(self, thread_id: str, checkpointer=None) -> None:
        """Remove a thread this process just made and could not finish (a failed fork), read-only or not."""
        self._exec("DELETE FROM runs WHERE thread_id=?", (thread_id,))
        self._exec("DELETE FROM threads WHERE thread_id=?", (thread_id,))
        if checkpointer is not None:
            checkpointer.delete_thread(thread_id)

    # -- runs

    def begin_turn(self, thread_id: str, pattern: str, question: str, origin: str = "chat") -> int:
        """Register a new turn and its run in one step; refused while the thread runs or waits for a review.

        The check and the claim are one statement (an upsert guarded by the thread's status), so two
        processes starting a turn on the same thread cannot both pass.
        """
        if origin not in ORIGINS:
            raise ValueError(f"unknown thread origin {origin!r}; expected one of {', '.join(ORIGINS)}")
        now, me = time.time(), owner.current()
        with self.database.transaction() as tx:
            claimed = tx.execute(
                "INSERT INTO threads(thread_id, pattern, title, status, created_at, updated_at, origin) "
                "VALUES (?,?,?,'running',?,?,?) ON CONFLICT(thread_id) "
                "DO UPDATE SET status='running', updated_at=excluded.updated_at, "
                "origin=CASE WHEN excluded.origin='chat' THEN 'chat' ELSE threads.origin END "
                f"WHERE threads.status NOT IN {BUSY}",
                (thread_id, pattern, question[:80], now, now, origin)).rowcount
            if not claimed:
                status = tx.execute("SELECT status FROM threads WHERE thread_id=?", (thread_id,)).one()["status"]
                raise ThreadBusyError(
                    f"Thread {thread_id} is waiting for a review: approve, edit or reject it first."
                    if status == "waiting" else
                    f"Thread {thread_id} is already running a turn (in another tab or process): wait for it to finish.")
            run_id = int(tx.execute(
                "INSERT INTO runs(thread_id, started_at, question, status, owner_host, owner_pid, owner_started) "
                "VALUES (?,?,?,'running',?,?,?) RETURNING id",
                (thread_id, now, question, me["host"], me["pid"], me["started"])).one()["id"])
            self.active.add(run_id)
        return run_id

    def claim_review(self, thread_id: str) -> dict:
        """Take the paused run of a thread for resuming; of two reviewers at once, exactly one wins."""
        self.reap()
        me = owner.current()
        with self.database.transaction() as tx:
            row = tx.execute("SELECT * FROM runs WHERE thread_id=? ORDER BY id DESC LIMIT 1", (thread_id,)).one()
            claimed = row is not None and tx.execute(
                "UPDATE runs SET status='running', owner_host=?, owner_pid=?, owner_started=? "
                "WHERE id=? AND status='waiting'", (me["host"], me["pid"], me["started"], row["id"])).rowcount == 1
            if not claimed:
                if row is not None:  # the row read above may predate the winner's commit: read it again
                    row = tx.execute("SELECT * FROM runs WHERE id=?", (row["id"],)).one()
                if row is not None and row["status"] == "running":
                    raise ThreadBusyError(f"Thread {thread_id} is already being resumed (in another tab or process).")
                raise ThreadBusyError(f"Thread {thread_id} is not waiting for a review.")
            tx.execute("UPDATE threads SET status='running', updated_at=? WHERE thread_id=?", (time.time(), thread_id))
            self.active.add(row["id"])
        return _run_row(row)

    def finish_run(self, run_id: int, status: str, result: dict) -> None:
        """Close a run, and its thread's status when it is the thread's latest run, in one transaction.

        Retried while SQLite is busy. If it still fails, the run is no longer this process's: the next
        reader closes it as interrupted instead of it staying ``running`` for ever.
        """
        if status not in STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        payload = json.dumps(result, ensure_ascii=False, default=str)
        try:
            for attempt in range(WRITE_ATTEMPTS):
                try:
                    self._close(run_id, status, payload)
                    return
                except transient_errors():  # SQLite "database is locked", a Postgres connection dropped
                    if attempt == WRITE_ATTEMPTS - 1:
                        raise
                    time.sleep(0.2 * 2 ** attempt)
        finally:
            self.active.discard(run_id)

    def _close(self, run_id: int, status: str, payload: str | None, only_if_running: bool = False) -> int:
        with self.database.transaction() as tx:
            closed = tx.execute(
                "UPDATE runs SET finished_at=?, status=?, result=COALESCE(?, result) WHERE id=?"
                + (" AND status='running'" if only_if_running else ""),
                (time.time(), status, payload, run_id)).rowcount
            if closed:
                tx.execute(
                    "UPDATE threads SET status=?, updated_at=? WHERE thread_id=(SELECT thread_id FROM runs WHERE id=?) "
                    "AND NOT EXISTS (SELECT 1 FROM runs later WHERE later.thread_id=threads.thread_id AND later.id>?)",
                    (status, time.time(), run_id, run_id))
            return closed

    def reap(self) -> list[int]:
        """Close the runs whose owner process is gone; return their ids.

        A run of this process is judged by this process's own list; another live process's run
        (the app's, while the CLI looks) is left alone. A thread still paused at a review (its
        checkpoint waits at an interrupt) goes back to ``waiting``, so the review can be resumed.
        """
        closed = []
        try:
            rows = self._exec("SELECT id, thread_id, owner_host, owner_pid, owner_started FROM runs WHERE status='running'")
            for row in rows:
                who = {"host": row["owner_host"], "pid": row["owner_pid"], "started": row["owner_started"]}
                mine = row["owner_host"] is not None and owner.is_current(who)
                if (mine and row["id"] in self.active) or (not mine and not owner.is_gone(who)):
                    continue
                paused = bool(self.still_paused and self.still_paused(row["thread_id"]))
                payload = None if paused else json.dumps(_interrupted_result(row["thread_id"], row["id"]))
                if self._close(row["id"], "waiting" if paused else "interrupted", payload, only_if_running=True):
                    closed.append(row["id"])
        except transient_errors():  # busy: reading must not fail for it; the next reader closes them
            pass
        return closed

    def run_status(self, run_id: int) -> str | None:
        self.reap()
        rows = self._exec("SELECT status FROM runs WHERE id=?", (run_id,))
        return rows[0]["status"] if rows else None

    def last_run(self, thread_id: str) -> dict | None:
        self.reap()
        rows = self._exec("SELECT * FROM runs WHERE thread_id=? ORDER BY id DESC LIMIT 1", (thread_id,))
        return _run_row(rows[0]) if rows else None

    def runs(self, thread_id: str) -> list[dict]:
        self.reap()
        rows = self._exec("SELECT * FROM runs WHERE thread_id=? ORDER BY id", (thread_id,))
        return [_run_row(r) for r in rows]


INTERRUPTED_MESSAGE = "interrupted: the process running it stopped (server restart or crash) before it finished"


def _interrupted_result(thread_id: str, run_id: int) -> dict:
    return {"thread_id": thread_id, "run_id": run_id, "answer": "", "termination_reason": "interrupted",
            "termination_message": INTERRUPTED_MESSAGE, "error": None, "interrupted": False, "interrupt": None,
            "sources": [], "trace": []}


def _run_row(row: dict) -> dict:
    out = dict(row)
    out["result"] = json.loads(out["result"]) if out["result"] else None
    return out


_registries: dict[tuple[str, bool], ThreadRegistry] = {}  # (database, read-only) -> registry
_lock = threading.Lock()


def get_registry(where) -> ThreadRegistry:
    """The process's registry of a data directory or of Settings (their database when one is set).

    Its orphaned runs are closed on first use (app or CLI start).
    """
    from core.store.checkpoint import pending_interrupts

    url = database_url(where)
    path = url or str(Path(getattr(where, "data_dir", where)).resolve())
    read_only = bool(getattr(where, "read_only", False))
    key = (path, read_only)
    with _lock:
        if key not in _registries:
            try:
                registry = ThreadRegistry(url or Path(path), lambda tid: bool(pending_interrupts(url or Path(path), tid)),
                                          read_only=read_only)
                registry.reap()
            except (sqlite3.DatabaseError, OSError) as exc:  # damaged, or the data directory not writable
                raise store_error(exc, "the thread registry", "threads.sqlite") or exc from None
            _registries[key] = registry
        return _registries[key]


def store_problem(where) -> str:
    """Why the thread registry or the checkpoints cannot be used (core.store.db.StoreError's message), or ''."""
    from core.store.checkpoint import get_checkpointer

    try:
        get_registry(where)
        get_checkpointer(where)
    except StoreError as exc:
        return str(exc)
    return ""
