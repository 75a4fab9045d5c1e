"""Which process owns a run (or a comparison), and whether that process is still there.

A process killed outright (kill -9, power loss) runs no ``finally``: what it left ``running`` on
disk must be recognised by whoever reads it next. An owner is (host, pid, process start time);
the start time tells a live owner from a new process that happens to reuse its pid.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

HOST = socket.gethostname()


def process_start(pid: int) -> str:
    """The kernel's start time of a process (clock ticks since boot), or '' where /proc cannot tell."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[-1].split()[19]  # field 22; the command name before ')' may hold spaces


def current() -> dict:
    """This process as an owner: host, pid, start time."""
    pid = os.getpid()
    return {"host": HOST, "pid": pid, "started": process_start(pid)}


def is_current(owner: dict) -> bool:
    me = current()
    return owner.get("host") == me["host"] and owner.get("pid") == me["pid"] and owner.get("started") == me["started"]


def is_gone(owner: dict | None) -> bool:
    """True when the owner process surely no longer runs; a process on another host is never judged.

    A record without an owner was written before owners were recorded: nothing runs it any more.
    The current process is not judged here either: only its own bookkeeping knows what it still runs.
    """
    if not owner or not owner.get("pid"):
        return True
    if owner.get("host") != HOST or is_current(owner):
        return False
    try:
        os.kill(int(owner["pid"]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, under another user
    except (OSError, ValueError):
        return True
    started = process_start(int(owner["pid"]))
    return bool(owner.get("started") and started and started != owner["started"])  # the pid was reused
