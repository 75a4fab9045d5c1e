"""The process-wide SQLite checkpointer: runs pause, persist and resume across restarts.

Every graph step writes a checkpoint, so the database grows with every run; ``prune`` drops old
steps and keeps each thread's latest. Checkpoints deserialise only known types (an allow-list):
a tampered database cannot make the app import and call arbitrary code.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from itertools import groupby
from pathlib import Path

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.base.id import UUID
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

# Types our graph states hold beyond LangGraph's built-in safe list (messages, Documents, Send,
# Interrupt, datetimes...): none. State is plain data by design; a new type must be added here.
EXTRA_ALLOWED_TYPES: tuple[tuple[str, str], ...] = ()
_UUID_EPOCH = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 (the UUID clock) to 1970-01-01

_savers: dict[str, SqliteSaver] = {}
_lock = threading.Lock()


def database_path(data_dir: Path) -> Path:
    return Path(data_dir) / "checkpoints.sqlite"


def strict_serde() -> JsonPlusSerializer:
    """Deserialise LangGraph's safe types and ours only (what LANGGRAPH_STRICT_MSGPACK=true does, explicitly)."""
    return JsonPlusSerializer(allowed_msgpack_modules=EXTRA_ALLOWED_TYPES or None)


def get_checkpointer(data_dir: Path) -> SqliteSaver:
    """One saver per database file per process.

    Not ``SqliteSaver.from_conn_string``: it is a context manager whose exit closes the database.
    The saver serialises access with its own lock, so one connection serves every thread.
    """
    path = database_path(data_dir)
    key = str(path.resolve())
    with _lock:
        if key not in _savers:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(key, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across crashes, one fsync less per step
            saver = SqliteSaver(conn, serde=strict_serde())
            saver.setup()
            _savers[key] = saver
        return _savers[key]


def latest(data_dir: Path, thread_id: str) -> CheckpointTuple | None:
    """The newest top-level checkpoint of a thread: one row read, however long the thread's history."""
    return get_checkpointer(data_dir).get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})


def interrupts_of(item: CheckpointTuple | None) -> list:
    """The payloads a checkpoint waits on (``interrupt()`` values not yet answered)."""
    out = []
    for _task, channel, value in (item.pending_writes or []) if item else []:
        if channel == "__interrupt__":
            out += [getattr(v, "value", v) for v in (value if isinstance(value, (list, tuple)) else [value])]
    return out


def pending_interrupts(data_dir: Path, thread_id: str) -> list:
    """What the thread's graph waits for at a review pause; empty when it does not wait."""
    return interrupts_of(latest(data_dir, thread_id))


def checkpoint_time(checkpoint_id: str) -> float:
    """When a checkpoint was written (its id is a time-ordered UUID v6), in seconds since the epoch."""
    return (UUID(checkpoint_id).time - _UUID_EPOCH) / 1e7


def prune(data_dir: Path, keep_last: int | None = None, older_than_days: float | None = None,
          vacuum: bool = False) -> dict:
    """Delete old checkpoints (and their pending writes); each thread keeps at least its latest.

    ``keep_last``: keep the N newest checkpoints per thread. ``older_than_days``: delete those older.
    Both given: a checkpoint goes only when it is neither among the N newest nor recent. The runs
    (answers, sources, traces) live in the thread registry and are not touched; stepping back in a
    thread's history is possible only to the steps that remain.
    """
    if keep_last is None and older_than_days is None:
        raise ValueError("say what to keep: --keep-last N and/or --older-than DAYS")
    if keep_last is not None and keep_last < 1:
        raise ValueError("--keep-last must be at least 1: a thread's latest checkpoint is its state")
    path = database_path(data_dir)
    if not path.is_file():
        return {"deleted": 0, "kept": 0, "threads": 0, "bytes_before": 0, "bytes_after": 0}
    cutoff = time.time() - older_than_days * 86400 if older_than_days is not None else None
    before = _size(path)
    db = sqlite3.connect(str(path), timeout=30)
    try:
        rows = db.execute("SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                          "ORDER BY thread_id, checkpoint_ns, checkpoint_id DESC").fetchall()
        doomed, threads = [], set()
        for (thread_id, _ns), group in groupby(rows, key=lambda r: (r[0], r[1])):
            threads.add(thread_id)
            for rank, row in enumerate(group):
                unprotected = keep_last is None or rank >= keep_last
                old = cutoff is None or checkpoint_time(row[2]) < cutoff
                if rank and unprotected and old:  # rank 0, the latest, is the thread's state: always kept
                    doomed.append(row)
        with db:
            db.executemany("DELETE FROM writes WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?", doomed)
            db.executemany("DELETE FROM checkpoints WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?", doomed)
        if vacuum:
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return {"deleted": len(doomed), "kept": len(rows) - len(doomed), "threads": len(threads),
            "bytes_before": before, "bytes_after": _size(path)}


def _size(path: Path) -> int:
    """The database with its write-ahead log (where recent pages live until a checkpoint)."""
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
