"""One cap on the runs a process makes at once: chats, comparison columns and evaluations share it.

Runs beyond the cap wait in arrival order; the waiting run is told its place in the queue.
"""

from __future__ import annotations

import threading
from collections import deque


class RunSlots:
    """The process's run slots: at most ``limit`` runs at once, the rest waiting in arrival order."""

    def __init__(self):
        """No run holds a slot, none waits."""
        self._cond = threading.Condition()
        self._running = 0
        self._queue: deque[object] = deque()

    def join(self) -> object:
        """Take a place in the queue; the ticket is passed to ``wait`` and ``leave``."""
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
        return ticket

    def wait(self, ticket: object, limit: int, timeout: float | None = None) -> int:
        """0 once the ticket holds a slot, else its place in the queue (1: next) after ``timeout`` seconds."""
        with self._cond:
            self._cond.wait_for(lambda: self._can_start(ticket, limit), timeout)
            if self._can_start(ticket, limit):
                self._queue.popleft()
                self._running += 1
                self._cond.notify_all()
                return 0
            return self._queue.index(ticket) + 1

    def leave(self, ticket: object, started: bool) -> None:
        """Give the slot back (``started``) or the place in the queue."""
        with self._cond:
            if started:
                self._running -= 1
            elif ticket in self._queue:
                self._queue.remove(ticket)
            self._cond.notify_all()

    def _can_start(self, ticket: object, limit: int) -> bool:
        return bool(self._queue) and self._queue[0] is ticket and self._running < max(1, limit)

    @property
    def running(self) -> int:
        """How many runs hold a slot now."""
        return self._running


SLOTS = RunSlots()
