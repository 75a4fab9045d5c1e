"""Bytes each visitor may upload per hour, across batches (RAG_MAX_UPLOAD_MB_PER_HOUR; docs/SECURITY.md #10).

Streamlit keeps every uploaded file in memory until its session ends and bounds each file, not how many a session
sends; RAG_MAX_UPLOAD_FILES bounds one batch. This budget bounds the batches: the bytes one visitor's accepted
uploads held in the last hour (a sliding window). It is kept in this process, like core.run.run_slots: each replica
counts its own visitors. The CLI and code are no visitor ('' from core.config.visitor_of) and have no budget.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

WINDOW_SECONDS = 3600.0
MB = 2**20  # as RAG_MAX_FILE_MB counts them


class UploadBudget:
    """Bytes accepted per visitor in the last hour; check and count are one step, so two batches at once cannot
    both pass on the same free bytes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        """An empty budget; ``clock`` (seconds) is injectable so a test can move time."""
        self._clock = clock
        self._lock = threading.Lock()
        self._spent: dict[str, deque[tuple[float, int]]] = {}  # visitor -> (when accepted, bytes), oldest first

    def take(self, visitor: str, size: int, limit: int) -> str:
        """Count ``size`` bytes for ``visitor`` and return '', or why the upload is refused (then nothing is counted).

        ``limit`` is in bytes; 0 or less, or no visitor, means no bound.
        """
        if not visitor or limit <= 0:
            return ""
        if size > limit:
            return (f"refused: this upload ({_mb(size)}) is over the limit of {_mb(limit, whole=True)} uploaded per "
                    "visitor per hour (RAG_MAX_UPLOAD_MB_PER_HOUR); upload fewer or smaller files at a time")
        with self._lock:
            now = self._clock()
            spent = self._spent.setdefault(visitor, deque())
            while spent and spent[0][0] <= now - WINDOW_SECONDS:
                spent.popleft()
            used = sum(n for _, n in spent)
            if used + size > limit:
                return (f"refused: this upload ({_mb(size)}) would pass the limit of {_mb(limit, whole=True)} uploaded "
                        f"per visitor per hour (RAG_MAX_UPLOAD_MB_PER_HOUR): you uploaded {_mb(used)} in the last "
                        f"hour; it fits again in {_wait(spent, used + size - limit, now)}")
            spent.append((now, size))
            return ""


def _wait(spent: deque[tuple[float, int]], excess: int, now: float) -> str:
    """How long until the oldest uploads that make up ``excess`` bytes have left the window, in whole minutes."""
    freed = 0
    for when, size in spent:
        freed += size
        if freed >= excess:
            minutes = max(1, math.ceil((when + WINDOW_SECONDS - now) / 60))
            return f"{minutes} minute" if minutes == 1 else f"{minutes} minutes"
    return "an hour"  # not reached: size <= limit, so the whole window frees enough


def _mb(size: int, whole: bool = False) -> str:
    """``size`` bytes as a reader wants them: whole MB for a limit, 0.1 MB steps, KB (rounded up) below 0.1 MB."""
    if whole and size % MB == 0:
        return f"{size // MB:,} MB"
    return f"{size / MB:,.1f} MB" if size >= MB / 10 else f"{math.ceil(size / 1024):,} KB"


BUDGET = UploadBudget()  # the process's one budget, shared by every session (Streamlit runs them in threads)
