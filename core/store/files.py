"""Every file the app writes under the data directory: 0600, in folders of its own that are 0700.

The files hold the users' questions, answers, documents' words (keyword indexes), graphs and saved sets:
nobody else on the machine reads them. Modes are given when a file is created (``os.open(..., 0o600)``),
not by a umask: the process umask is shared by every thread of the server. A folder of the app inside
the data directory is made 0700 even when an older version created it with the default mode; the data
directory itself keeps the mode its owner gave it (core.store.db.private_dir).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from core.store.db import PRIVATE_DIR, PRIVATE_FILE, _chmod, private_dir


def private_folder(data_path: Path, *parts: str) -> Path:
    """``data_path / parts...``, created; every folder below the data directory made 0700."""
    folder = private_dir(Path(data_path))
    for part in parts:
        folder = folder / part
        folder.mkdir(exist_ok=True)
        _chmod(folder, PRIVATE_DIR)
    return folder


def _open_private(path: Path, flags: int):
    """``path`` opened with ``flags``, created 0600; a file an older version left readable is made 0600."""
    fd = os.open(path, flags | os.O_CREAT, PRIVATE_FILE)
    os.fchmod(fd, PRIVATE_FILE)
    return fd


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (a temporary file renamed over it: a reader never sees half), 0600."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = _open_private(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def append_private(path: Path, line: str) -> None:
    """Append one line to ``path`` (created 0600), flushed before returning: a kill loses at most this line."""
    fd = _open_private(Path(path), os.O_WRONLY | os.O_APPEND)
    with os.fdopen(fd, "a", encoding="utf-8") as out:
        out.write(line)
        out.flush()
