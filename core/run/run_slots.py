"""One cap on the runs a process makes at once: chats, comparison columns and evaluations share it.

Runs beyond the cap wait in arrival order; the waiting run is told its place in the queue. Runs in flight
(running or waiting) are bounded too, per visitor and in total: one past either bound is refused at once.
Whose run it is: ``core.config.visitor_of``.
"""

from __future__ import annotations

import threading
from collections import Counter, deque


class RunRefused(Exception):
    """A run refused before it started: too many runs in flight (the message names the limit and its setting)."""


class _Ticket:
    """A run's place: in the queue, then in a slot; it remembers whose run it is."""

    def __init__(self, visitor: str):
        self.visitor = visitor


class RunSlots:
    """The process's run slots: at most ``limit`` runs at once, the rest waiting in arrival order."""

    def __init__(self):
        """No run holds a slot, none waits."""
        self._cond = threading.Condition()
        self._running = 0
        self._queue: deque[_Ticket] = deque()
        self._mine: Counter[str] = Counter()  # visitor -> runs in flight (running or waiting)

    def refusal(self, visitor: str, wanted: int, per_visitor: int, total: int) -> str:
        """Why ``wanted`` more runs of ``visitor`` may not start now ('' when they may); 0 means no bound."""
        with self._cond:
            return self._refusal(visitor, wanted, per_visitor, total)

    def _refusal(self, visitor: str, wanted: int, per_visitor: int, total: int) -> str:
        in_flight, mine = self._running + len(self._queue), self._mine[visitor] if visitor else 0
        what = "this run" if wanted == 1 else f"this needs {wanted} runs at once; it"
        if visitor and per_visitor > 0 and mine + wanted > per_visitor:
            return (f"refused: {what} would pass the limit of {per_visitor} runs in flight (running or waiting) per "
                    f"visitor (RAG_MAX_RUNS_PER_VISITOR): you have {mine} runs in flight; wait for one to finish")
        if total > 0 and in_flight + wanted > total:
            return (f"refused: {what} would pass the server's limit of {total} runs in flight (RAG_MAX_RUNS_IN_FLIGHT): "
                    f"{in_flight} runs in flight now; try again when some have finished")
        return ""

    def join(self, visitor: str = "", per_visitor: int = 0, total: int = 0) -> object:
        """Take a place in the queue (RunRefused past a bound); the ticket is passed to ``wait`` and ``leave``."""
        ticket = _Ticket(visitor)
        with self._cond:
            problem = self._refusal(visitor, 1, per_visitor, total)
            if problem:
                raise RunRefused(problem)
            self._queue.append(ticket)
            self._mine[visitor] += 1
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
            else:
                return  # left already: its visitor's count was given back then
            self._mine[ticket.visitor] -= 1
            if self._mine[ticket.visitor] <= 0:
                del self._mine[ticket.visitor]
            self._cond.notify_all()

    def _can_start(self, ticket: object, limit: int) -> bool:
        return bool(self._queue) and self._queue[0] is ticket and self._running < max(1, limit)

    @property
    def running(self) -> int:
        """How many runs hold a slot now."""
        return self._running


SLOTS = RunSlots()
