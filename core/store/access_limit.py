"""How often a client address may guess the app password: a counter per address with exponential backoff.

Every submitted guess is counted *before* it is checked, in one atomic step, so parallel sessions
from one address cannot make more guesses than the counter allows, and a client gains nothing by
dropping a slow answer: nothing sleeps. A locked-out client is told how long to wait and its guess
is not checked at all. The counter lives in this process (all sessions share it) or, with
``RAG_DATABASE_URL``, in Postgres, shared by every replica.

Which counters a guess is counted on (``counted_clients``): a client address is only as good as whoever
wrote it. Streamlit's server (uvicorn) takes ``X-Forwarded-For`` from any connection of 127.0.0.1 / ::1, so
behind a local proxy that passes the header on, or from the host itself, a visitor names their own address.
Unless the operator declares the proxies it trusts (``RAG_TRUSTED_PROXIES``), every guess is also counted
on one counter for everybody: a new header on each guess then buys nothing.
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from core.store.db import database_url, shared_database

FREE_ATTEMPTS = 3  # guesses before the first lock: a typo or two costs nothing
MAX_LOCK_SECONDS = 15 * 60  # the backoff stops doubling here
FORGET_AFTER_SECONDS = 24 * 3600  # an address quiet this long starts again from zero
LOCAL_CLIENT = "local"  # no address known (localhost, AppTest): every such session shares one counter
EVERYONE = "*"  # the counter every guess is counted on when no proxy is trusted (an address may be forged)
MIN_PASSWORD_CHARS = 8


def password_problem(password: str) -> str:
    """Why ``password`` cannot guard a shared app (too short to survive guessing), or '' when it can (or is unset)."""
    if 0 < len(password) < MIN_PASSWORD_CHARS:
        return (f"RAG_APP_PASSWORD is refused: a password has at least {MIN_PASSWORD_CHARS} characters; "
                "set a longer one (the app stays closed until then)")
    return ""


def gate_problem(settings) -> str:
    """Why the password gate cannot open for anybody (a password too short, a malformed RAG_TRUSTED_PROXIES), or ''."""
    try:
        trusted_networks(settings.trusted_proxies)
    except ValueError as exc:
        return str(exc)
    return password_problem(settings.app_password)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(setting: str) -> tuple[Network, ...]:
    """``RAG_TRUSTED_PROXIES`` ("10.0.0.5, 127.0.0.1, 10.1.0.0/16") as networks; ValueError names a bad entry."""
    networks = []
    for entry in (part.strip() for part in setting.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"RAG_TRUSTED_PROXIES: {entry!r} is not an IP address or network "
                             "(example: 127.0.0.1, 10.0.0.0/8)") from None
    return tuple(networks)


def _trusted(address: str, networks: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:  # a dual-stack socket's "::ffff:127.0.0.1"
        ip = ip.ipv4_mapped
    return any(ip in network for network in networks)


def counted_clients(address: str | None, forwarded_for: str, networks: tuple[Network, ...]) -> tuple[str, ...]:
    """The counters a guess is counted on, from the address the server saw and the X-Forwarded-For header.

    No trusted proxy: the address (perhaps forged) and EVERYONE. Trusted proxies: the address, unless it is one
    of them; then the right-most X-Forwarded-For entry that is not a trusted proxy (the left part is the
    client's own to write), or the proxy's own address when the header names nobody else.
    """
    address = address or LOCAL_CLIENT
    if not networks:
        return (address, EVERYONE)
    if not _trusted(address, networks):
        return (address,)
    for hop in reversed([part.strip() for part in forwarded_for.split(",") if part.strip()]):
        if not _trusted(hop, networks):
            return (hop,)
    return (address,)


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

    def attempt(self, clients: str | Iterable[str]) -> int:
        """0 when this guess may be checked (it is counted now on each of ``clients``), else the seconds to wait.

        ``clients`` is an address or several counters (counted_clients): the guess waits while any is locked.
        """
        now = self.clock()
        waits = [self.counters.update(client, lambda counter: _counted(counter, now)) for client in _keys(clients)]
        return max(waits)

    def finish(self, clients: str | Iterable[str], right: bool) -> None:
        """Record the checked guess: a right one clears its counters (both cost the same updates: no timing difference)."""
        now = self.clock()
        for client in _keys(clients):
            self.counters.update(client, lambda counter: (Counter(updated_at=now) if right else counter, 0))


def _keys(clients: str | Iterable[str]) -> list[str]:
    """The counter keys of one address or several, an unknown address as LOCAL_CLIENT."""
    return [client or LOCAL_CLIENT for client in ([clients] if isinstance(clients, str) or clients is None else clients)]


_limiters: dict[str, AccessLimiter] = {}
_limiters_lock = threading.Lock()


def limiter_for(settings) -> AccessLimiter:
    """The process's limiter: in memory, or in the shared database when one is configured."""
    url = database_url(settings)
    with _limiters_lock:
        if url not in _limiters:
            _limiters[url] = AccessLimiter(DatabaseCounters(url) if url else MemoryCounters())
        return _limiters[url]
