"""The process-wide checkpointer: runs pause, persist and resume across restarts.

SQLite under the data directory by default; with ``RAG_DATABASE_URL`` a ``PostgresSaver`` over the
process's connection pool (core.store.db), so every replica sees every thread.

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

from core.config import refuse_if_read_only
from core.secrets import redact_remembered
from core.store.db import data_dir as data_dir_of
from core.store.db import database_url, get_pool, private_dir, private_file, store_error

# Types our graph states hold beyond LangGraph's built-in safe list (messages, Documents, Send,
# Interrupt, datetimes...): none. State is plain data by design; a new type must be added here.
EXTRA_ALLOWED_TYPES: tuple[tuple[str, str], ...] = ()
_UUID_EPOCH = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 (the UUID clock) to 1970-01-01

_savers: dict[str, object] = {}  # database file or URL -> saver
_lock = threading.Lock()
_SETUP_LOCK = 7_311_015  # pg_advisory_lock key: replicas starting at once run PostgresSaver.setup() one at a time


def database_path(data_dir: Path) -> Path:
    return Path(data_dir) / "checkpoints.sqlite"


class RedactingSerializer(JsonPlusSerializer):
    """Checkpoints without keys: a key typed into a question or echoed in an answer is *** before it is stored."""

    def dumps_typed(self, obj):
        return super().dumps_typed(redact_remembered(obj))


def strict_serde() -> JsonPlusSerializer:
    """Deserialise LangGraph's safe types and ours only (what LANGGRAPH_STRICT_MSGPACK=true does, explicitly);
    serialise with every key a run used redacted."""
    return RedactingSerializer(allowed_msgpack_modules=EXTRA_ALLOWED_TYPES or None)


def get_checkpointer(where):
    """One saver per database (file or Postgres URL) per process; ``where`` is Settings or a data directory.

    SQLite: not ``SqliteSaver.from_conn_string`` (a context manager whose exit closes the database);
    the saver serialises access with its own lock, so one connection serves every thread.
    Postgres: a ``PostgresSaver`` over the shared pool; its tables are set up once.
    """
    url = database_url(where)
    if url:
        return _postgres_saver(url)
    path = database_path(data_dir_of(where))
    key = str(path.resolve())
    with _lock:
        if key not in _savers:
            try:
                _savers[key] = _sqlite_saver(path)
            except (sqlite3.DatabaseError, OSError) as exc:  # damaged, or the data directory not writable
                raise store_error(exc, "the checkpoint database", path.name) or exc from None
        return _savers[key]


def _sqlite_saver(path: Path) -> SqliteSaver:
    private_dir(path.parent)
    conn = sqlite3.connect(str(path.resolve()), check_same_thread=False)
    private_file(path)  # before WAL mode: the -wal and -shm files are created with the database's mode
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across crashes, one fsync less per step
        saver = SqliteSaver(conn, serde=strict_serde())
        saver.setup()
    except Exception:
        conn.close()
        raise
    return saver


def _postgres_saver(url: str):
    from langgraph.checkpoint.postgres import PostgresSaver

    with _lock:
        if url not in _savers:
            pool = get_pool(url)
            saver = PostgresSaver(pool, serde=strict_serde())
            with pool.connection() as conn:  # a session lock: setup() creates indexes outside a transaction
                conn.execute(f"SELECT pg_advisory_lock({_SETUP_LOCK})")
                try:
                    saver.setup()
                finally:
                    conn.execute(f"SELECT pg_advisory_unlock({_SETUP_LOCK})")
            _savers[url] = saver
        return _savers[url]


def latest(data_dir, thread_id: str) -> CheckpointTuple | None:
    """The newest top-level checkpoint of a thread: one row read, however long the thread's history."""
    return get_checkpointer(data_dir).get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})


def interrupts_of(item: CheckpointTuple | None) -> list:
    """The payloads a checkpoint waits on (``interrupt()`` values not yet answered)."""
    out = []
    for _task, channel, value in (item.pending_writes or []) if item else []:
        if channel == "__interrupt__":
            out += [getattr(v, "value", v) for v in (value if isinstance(value, (list, tuple)) else [value])]
    return out


def pending_interrupts(data_dir, thread_id: str) -> list:
    """What the thread's graph waits for at a review pause; empty when it does not wait."""
    return interrupts_of(latest(data_dir, thread_id))


def checkpoint_time(checkpoint_id: str) -> float:
    """When a checkpoint was written (its id is a time-ordered UUID v6), in seconds since the epoch."""
    return (UUID(checkpoint_id).time - _UUID_EPOCH) / 1e7


def prune(where, keep_last: int | None = None, older_than_days: float | None = None,
          vacuum: bool = False) -> dict:
    """Delete old checkpoints (and their pending writes); each thread keeps at least its latest.

    ``keep_last``: keep the N newest checkpoints per thread. ``older_than_days``: delete those older.
    Both given: a checkpoint goes only when it is neither among the N newest nor recent. The runs
    (answers, sources, traces) live in the thread registry and are not touched; stepping back in a
    thread's history is possible only to the steps that remain.
    """
    refuse_if_read_only(where, "pruning checkpoints")
    if keep_last is None and older_than_days is None:
        raise ValueError("say what to keep: --keep-last N and/or --older-than DAYS")
    if keep_last is not None and keep_last < 1:
        raise ValueError("--keep-last must be at least 1: a thread's latest checkpoint is its state")
    if database_url(where):
        return _prune_postgres(database_url(where), keep_last, older_than_days, vacuum)
    path = database_path(data_dir_of(where))
    if not path.is_file():
        return {"deleted": 0, "kept": 0, "threads": 0, "bytes_before": 0, "bytes_after": 0}
    cutoff = time.time() - older_than_days * 86400 if older_than_days is not None else None
    before = _size(path)
    db = sqlite3.connect(str(path), timeout=30)
    try:
        rows = db.execute("SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                          "ORDER BY thread_id, checkpoint_ns, checkpoint_id DESC").fetchall()
        doomed, threads = _doomed(rows, keep_last, cutoff)
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


def _doomed(rows: list, keep_last: int | None, cutoff: float | None) -> tuple[list[tuple], set]:
    """Of (thread, ns, checkpoint id) rows sorted newest first per thread and namespace: those to delete."""
    doomed, threads = [], set()
    for (thread_id, _ns), group in groupby(rows, key=lambda r: (r[0], r[1])):
        threads.add(thread_id)
        for rank, row in enumerate(group):
            unprotected = keep_last is None or rank >= keep_last
            old = cutoff is None or checkpoint_time(row[2]) < cutoff
            if rank and unprotected and old:  # rank 0, the latest, is the thread's state: always kept
                doomed.append(tuple(row))
    return doomed, threads


_PG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


def _prune_postgres(url: str, keep_last: int | None, older_than_days: float | None, vacuum: bool) -> dict:
    """``prune`` on PostgresSaver's tables; channel values no kept checkpoint refers to go as well."""
    _postgres_saver(url)  # the tables exist
    cutoff = time.time() - older_than_days * 86400 if older_than_days is not None else None
    with get_pool(url).connection() as conn:
        before = _pg_size(conn)
        rows = [(r["thread_id"], r["checkpoint_ns"], r["checkpoint_id"]) for r in conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
            "ORDER BY thread_id, checkpoint_ns, checkpoint_id DESC").fetchall()]
        doomed, threads = _doomed(rows, keep_last, cutoff)
        touched = sorted({(t, ns) for t, ns, _ in doomed})
        with conn.transaction():
            with conn.cursor() as cur:
                cur.executemany("DELETE FROM checkpoint_writes WHERE thread_id=%s AND checkpoint_ns=%s AND checkpoint_id=%s",
                                doomed)
                cur.executemany("DELETE FROM checkpoints WHERE thread_id=%s AND checkpoint_ns=%s AND checkpoint_id=%s",
                                doomed)
                cur.executemany(
                    "DELETE FROM checkpoint_blobs b WHERE b.thread_id=%s AND b.checkpoint_ns=%s AND NOT EXISTS ("
                    "SELECT 1 FROM checkpoints c WHERE c.thread_id=b.thread_id AND c.checkpoint_ns=b.checkpoint_ns "
                    "AND c.checkpoint->'channel_versions'->>b.channel = b.version)", touched)
        if vacuum:  # autocommit connection: VACUUM may not run inside a transaction
            for table in _PG_TABLES:
                conn.execute(f"VACUUM {table}")
        after = _pg_size(conn)
    return {"deleted": len(doomed), "kept": len(rows) - len(doomed), "threads": len(threads),
            "bytes_before": before, "bytes_after": after}


def _pg_size(conn) -> int:
    """The checkpoint tables with their indexes and TOAST data."""
    row = conn.execute("SELECT " + " + ".join(f"pg_total_relation_size('{t}')" for t in _PG_TABLES) + " AS size").fetchone()
    return int(row["size"])


def _size(path: Path) -> int:
    """The database with its write-ahead log (where recent pages live until a checkpoint)."""
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
