"""Where shared state lives: SQLite files under the data directory, or one Postgres database.

The registries (threads and runs, forks, saved comparisons and evaluations) speak one small SQL
dialect that both engines understand (``INSERT ... ON CONFLICT``, ``UPDATE ... WHERE status=...``
with its row count, ``RETURNING``); ``Database`` hides the rest: the ``?`` / ``%s`` paramstyle, how
a transaction is opened, the DDL types. Postgres connections come from one pool per URL per process,
shared with the checkpointer (autocommit, dict rows, no prepared statements: PgBouncer-safe).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
POOL_MAX_SIZE = 10  # per process; a replica runs at most RAG_MAX_CONCURRENT_RUNS runs at once

# Postgres schema of the registries, one entry per version; a database records the version it has.
# Two replicas starting at once take an advisory lock, so each migration runs once.
PG_MIGRATIONS: list[list[str]] = [
    [  # 1: threads, runs, forks, saved records (comparisons, evaluations)
        "CREATE TABLE IF NOT EXISTS threads (thread_id TEXT PRIMARY KEY, pattern TEXT NOT NULL, title TEXT NOT NULL, "
        "status TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL, "
        "origin TEXT NOT NULL DEFAULT 'chat')",
        "CREATE TABLE IF NOT EXISTS runs (id BIGSERIAL PRIMARY KEY, thread_id TEXT NOT NULL, "
        "started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION, question TEXT NOT NULL, "
        "status TEXT NOT NULL, result TEXT, owner_host TEXT, owner_pid INTEGER, owner_started TEXT)",
        "CREATE INDEX IF NOT EXISTS runs_by_thread ON runs(thread_id, id)",
        "CREATE INDEX IF NOT EXISTS runs_by_status ON runs(status)",
        "CREATE TABLE IF NOT EXISTS forks (thread_id TEXT PRIMARY KEY, parent TEXT NOT NULL, turn INTEGER NOT NULL, "
        "record TEXT NOT NULL, runs_before INTEGER NOT NULL, created_at DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX IF NOT EXISTS forks_by_parent ON forks(parent, turn)",
        "CREATE TABLE IF NOT EXISTS saved_records (kind TEXT NOT NULL, id TEXT NOT NULL, record TEXT NOT NULL, "
        "updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (kind, id))",
    ],
    [  # 2: wrong-password counters per client address, shared by the replicas (core.store.access_limit)
        "CREATE TABLE IF NOT EXISTS access_counters (client TEXT PRIMARY KEY, failures INTEGER NOT NULL, "
        "locked_until DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL)",
    ],
]
SCHEMA_VERSION = len(PG_MIGRATIONS)
_MIGRATION_LOCK = 7_311_014  # pg_advisory_xact_lock key: "apply the schema" (any constant of ours)


def is_postgres(url: str) -> bool:
    return str(url or "").startswith(POSTGRES_SCHEMES)


def database_url(where) -> str:
    """The Postgres URL of ``where`` (Settings, URL or data directory), or '' for the files."""
    url = getattr(where, "database_url", None)
    if url is None:
        url = str(where) if is_postgres(str(where)) else ""
    return url


def data_dir(where) -> Path:
    """The data directory of ``where`` (Settings or a path)."""
    return Path(getattr(where, "data_dir", where))


def errors() -> tuple[type[Exception], ...]:
    """Exceptions a database call may raise on either engine (busy, gone, refused)."""
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


def transient_errors() -> tuple[type[Exception], ...]:
    """The ones worth a retry: SQLite busy, a Postgres connection dropped or a serialisation failure."""
    try:
        import psycopg
    except ImportError:
        return (sqlite3.OperationalError,)
    return (sqlite3.OperationalError, psycopg.OperationalError, psycopg.errors.SerializationFailure)


PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600  # data files hold every question, answer and document: the app's user only


def private_dir(path: Path, ours: bool = False) -> Path:
    """Create ``path`` (and its missing parents) 0700; a directory that already existed keeps its mode,
    unless it is ``ours`` (a folder of the app inside the data directory, such as Chroma's).

    chmod after mkdir, not a umask: the process umask is shared by every thread of the server.
    """
    path = Path(path)
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    for created in missing + ([path] if ours else []):
        _chmod(created, PRIVATE_DIR)
    return path


def private_file(path: Path) -> None:
    """Make a data file the app created 0600 (SQLite gives its -wal and -shm files the same mode)."""
    if Path(path).exists():
        _chmod(path, PRIVATE_FILE)


def _chmod(path: Path, mode: int) -> None:
    try:
        os.chmod(path, mode)
    except OSError:  # not ours (a mounted volume's root): its owner decides
        pass


class StoreError(RuntimeError):
    """A data file cannot be opened, read or written; the message says which (by name) and what to do."""


# what SQLite says when a file is not a database (or no longer one), and when it cannot be written
_DAMAGED = ("file is not a database", "malformed", "not a database", "disk image")
_UNWRITABLE = ("unable to open", "readonly", "read-only", "disk i/o", "permission")


def store_error(exc: BaseException, what: str, filename: str) -> StoreError | None:
    """The clear form of a failure to use a data file (no server path in it); None when it is not one.

    ``what`` names the store for a reader ("the thread registry"); a busy database is not a store error.
    """
    text = str(exc).lower()
    if isinstance(exc, sqlite3.DatabaseError) and any(s in text for s in _DAMAGED):
        return StoreError(f"{what.capitalize()} ({filename} in the data directory) is damaged and cannot be read. "
                          f"Stop the app, move {filename} aside (keep it: nothing was deleted) and start again; "
                          "a new, empty one is made.")
    if isinstance(exc, OSError) or (isinstance(exc, sqlite3.OperationalError) and any(s in text for s in _UNWRITABLE)):
        return StoreError(f"{what.capitalize()} ({filename}) cannot be created or written: the data directory "
                          "(RAG_DATA_DIR) is not writable by the app. Give the app's user write access to it, "
                          "or point RAG_DATA_DIR at a writable directory.")
    return None


_pools: dict[str, object] = {}
_pools_lock = threading.Lock()


def get_pool(url: str):
    """The process's connection pool for a Postgres URL (checkpointer and registries share it)."""
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    with _pools_lock:
        if url not in _pools:
            _pools[url] = ConnectionPool(url, min_size=1, max_size=POOL_MAX_SIZE, open=True, timeout=30,
                                         kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0})
        return _pools[url]


class Result:
    def __init__(self, rows: list[dict], rowcount: int):
        self.rows, self.rowcount = rows, rowcount

    def one(self) -> dict | None:
        return self.rows[0] if self.rows else None


class Transaction:
    """Statements run inside one transaction; ``?`` placeholders on both engines."""

    def __init__(self, conn, postgres: bool):
        self.conn, self.postgres = conn, postgres

    def execute(self, sql: str, args: tuple | list = ()) -> Result:
        if self.postgres:
            cursor = self.conn.execute(sql.replace("%", "%%").replace("?", "%s"), tuple(args))
            rows = cursor.fetchall() if cursor.description else []
            return Result([dict(r) for r in rows], cursor.rowcount)
        cursor = self.conn.execute(sql, tuple(args))
        rows = cursor.fetchall() if cursor.description else []
        return Result([dict(r) for r in rows], cursor.rowcount)

    def executemany(self, sql: str, rows: list) -> None:
        for args in rows:
            self.execute(sql, args)


class Database:
    """A SQLite file (one connection, one lock) or a Postgres database (the shared pool)."""

    def __init__(self, sqlite_path: Path | None = None, url: str = ""):
        self.url = url
        self.postgres = bool(url)
        self.lock = threading.Lock()
        if self.postgres:
            self.pool = get_pool(url)
            self.key = url
        else:
            private_dir(sqlite_path.parent)
            self.key = str(sqlite_path.resolve())
            self.conn = sqlite3.connect(str(sqlite_path), check_same_thread=False)
            private_file(sqlite_path)
            self.conn.row_factory = sqlite3.Row

    @classmethod
    def of(cls, where, filename: str = "threads.sqlite") -> Database:
        url = database_url(where)
        return cls(url=url) if url else cls(sqlite_path=data_dir(where) / filename)

    @contextmanager
    def transaction(self):
        if self.postgres:
            with self.pool.connection() as conn, conn.transaction():
                yield Transaction(conn, True)
        else:
            with self.lock, self.conn:
                yield Transaction(self.conn, False)

    def execute(self, sql: str, args: tuple | list = ()) -> Result:
        with self.transaction() as tx:
            return tx.execute(sql, args)

    def migrate(self) -> int:
        """Bring a Postgres database to ``SCHEMA_VERSION``; returns the version it had."""
        with self.transaction() as tx:
            tx.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
            tx.execute("CREATE TABLE IF NOT EXISTS rag_schema (version INTEGER NOT NULL)")
            row = tx.execute("SELECT max(version) AS version FROM rag_schema").one()
            had = int(row["version"] or 0) if row else 0
            for version, statements in enumerate(PG_MIGRATIONS[had:], start=had + 1):
                for statement in statements:
                    tx.execute(statement)
                tx.execute("INSERT INTO rag_schema(version) VALUES (?)", (version,))
        return had


_databases: dict[str, Database] = {}
_databases_lock = threading.Lock()


def shared_database(url: str) -> Database:
    """The process's Postgres ``Database`` for a URL, its schema brought up to date on first use."""
    with _databases_lock:
        if url not in _databases:
            database = Database(url=url)
            database.migrate()
            _databases[url] = database
        return _databases[url]
