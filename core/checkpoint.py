"""The process-wide SQLite checkpointer: runs pause, persist and resume across restarts."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

_savers: dict[str, SqliteSaver] = {}
_lock = threading.Lock()


def get_checkpointer(data_dir: Path) -> SqliteSaver:
    """One saver per database file per process.

    Not ``SqliteSaver.from_conn_string``: it is a context manager whose exit closes the database.
    The saver serialises access with its own lock, so one connection serves every thread.
    """
    path = Path(data_dir) / "checkpoints.sqlite"
    key = str(path.resolve())
    with _lock:
        if key not in _savers:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(key, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across crashes, one fsync less per step
            saver = SqliteSaver(conn)
            saver.setup()
            _savers[key] = saver
        return _savers[key]
