"""Child processes for tests that kill a run outright (tests/support/child_run.py), and reading their events."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

CHILD = Path(__file__).resolve().parent / "child_run.py"


def child(settings, *args: str, env: dict | None = None) -> subprocess.Popen:
    """``tests/support/child_run.py`` over ``settings``' data directory (``env``: e.g. the team back ends' URLs)."""
    return subprocess.Popen([sys.executable, str(CHILD), str(settings.data_path), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def read_until(proc: subprocess.Popen, predicate, timeout: float = 120) -> list[dict]:
    """Events printed by the child until one matches (the child must not exit or stall first)."""
    lines: queue.Queue = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(json.loads(line))
        if predicate(seen[-1]):
            return seen
    proc.kill()
    raise AssertionError(f"the child ended or stalled first: {seen} {proc.stderr.read()[-2000:]}")


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL: the process runs no ``finally``, as after a power loss."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def dead_pid() -> int:
    """The pid of a process that has exited (its number is not reused this quickly)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid
