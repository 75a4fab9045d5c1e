"""How often a client address may guess the app password: a counter per address with exponential backoff.

Every submitted guess is counted *before* it is checked, in one atomic step, so parallel sessions
from one address cannot make more guesses than the counter allows, and a client gains nothing by
dropping a slow answer: nothing sleeps. A locked-out client is told how long to wait and its guess
is not checked at all. The counter lives in this process (all sessions share it) or, with
``RAG_DATABASE_URL``, in Postgres, shared by every replica.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from core.store.db import database_url, shared_database

FREE_ATTEMPTS = 3  # guesses before the first lock: a typo or two costs nothing
MAX_LOCK_SECONDS = 15 * 60  # the backoff stops doubling here
FORGET_AFTER_SECONDS = 24 * 3600  # an address quiet this long starts again from zero
LOCAL_CLIENT = "local"  # no address known (localhost, AppTest): every such session shares one counter


@dataclass(frozen=True)
class Counter:
    failures: int = 0  # guesses counted since the last right one
    locked_until: float = 0.0
    updated_at: float = 0.0


def lock_seconds(failures: int) -> float:
    """How long an address waits after ``failures`` counted guesses: 0, 0, 0, 1, 2, 4, ... up to the cap."""
    if failures < FREE_ATTEMPTS:
        return 0.0
    return float(min(2 ** (failures - FREE_ATTEMPTS), MAX_LOCK_SECONDS))


def _counted(counter: Counter, now: float) -> tuple[Counter, int]:
    """The counter after one more guess arrives, and the seconds to wait (0: the guess may be checked)."""
    if counter.locked_until > now:
        return counter, max(1, math.ceil(counter.locked_until - now))
    failures = 0 if now - counter.updated_at > FORGET_AFTER_SECONDS else counter.failures
    failures += 1
    return Counter(failures, now + lock_seconds(failures), now), 0


class MemoryCounters:
    """The counters of this process: every session of this server shares them."""

    def __init__(self):
        self._counters: dict[str, Counter] = {}
        self._lock = threading.Lock()

    def update(self, client: str, change: Callable[[Counter], tuple[Counter, int]]) -> int:
        with self._lock:
            counter, answer = change(self._counters.get(client, Counter()))
            self._counters[client] = counter
            return answer


class DatabaseCounters:
    """The counters in Postgres (table ``access_counters``): every replica shares them."""

    def __init__(self, url: str):
        self.database = shared_database(url)

    def update(self, client: str, change: Callable[[Counter], tuple[Counter, int]]) -> int:
        with self.database.transaction() as tx:
            tx.execute("INSERT INTO access_counters(client, failures, locked_until, updated_at) VALUES (?,0,0,0) "
                       "ON CONFLICT(client) DO NOTHING", (client,))
            row = tx.execute("SELECT failures, locked_until, updated_at FROM access_counters WHERE client=? "
                             "FOR UPDATE", (client,)).one()  # the row stays locked until the update commits
            counter, answer = change(Counter(row["failures"], row["locked_until"], row["updated_at"]))
            tx.execute("UPDATE access_counters SET failures=?, locked_until=?, updated_at=? WHERE client=?",
                       (counter.failures, counter.locked_until, counter.updated_at, client))
            return answer


class AccessLimiter:
    """Count a guess before checking it; a right guess clears its address's counter."""

    def __init__(self, counters, clock: Callable[[], float] = time.time):
        self.counters, self.clock = counters, clock

    def attempt(self, client: str) -> int:
        """0 when this guess may be checked (it is counted now), else the seconds the client must wait."""
        now = self.clock()
        return self.counters.update(client or LOCAL_CLIENT, lambda counter: _counted(counter, now))

    def finish(self, client: str, right: bool) -> None:
        """Record the checked guess: a right one clears the counter (both cost one update: no timing difference)."""
        now = self.clock()
        self.counters.update(client or LOCAL_CLIENT,
                             lambda counter: (Counter(updated_at=now) if right else counter, 0))


_limiters: dict[str, AccessLimiter] = {}
_limiters_lock = threading.Lock()


def limiter_for(settings) -> AccessLimiter:
    """The process's limiter: in memory, or in the shared database when one is configured."""
    url = database_url(settings)
    with _limiters_lock:
        if url not in _limiters:
            _limiters[url] = AccessLimiter(DatabaseCounters(url) if url else MemoryCounters())
        return _limiters[url]
