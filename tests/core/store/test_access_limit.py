"""Wrong-password counting per client address (core.store.access_limit): backoff, lockout, shared by sessions and replicas."""

from __future__ import annotations

import threading

import pytest

from core.store.access_limit import FREE_ATTEMPTS, MAX_LOCK_SECONDS, AccessLimiter, DatabaseCounters, MemoryCounters, lock_seconds


class Clock:
    """A hand-moved clock: the backoff is checked without waiting for it."""

    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def wrong(limiter: AccessLimiter, client: str = "203.0.113.7") -> int:
    wait = limiter.attempt(client)
    if not wait:
        limiter.finish(client, right=False)
    return wait


def test_the_backoff_doubles_after_the_free_attempts_and_stops_at_the_cap():
    assert [lock_seconds(n) for n in range(1, FREE_ATTEMPTS + 4)] == [0, 0, 1, 2, 4, 8]
    assert lock_seconds(100) == MAX_LOCK_SECONDS


def test_a_locked_out_address_waits_and_its_guess_is_not_counted_or_checked():
    clock = Clock()
    limiter = AccessLimiter(MemoryCounters(), clock)
    assert [wrong(limiter) for _ in range(FREE_ATTEMPTS)] == [0] * FREE_ATTEMPTS  # typos cost nothing...
    assert wrong(limiter) == 1  # ...then the address is told to wait
    assert wrong(limiter, "198.51.100.1") == 0  # another address is not
    clock.now += 1
    assert wrong(limiter) == 0
    assert wrong(limiter) == 2  # the lock doubled
    clock.now += 1.5
    assert wrong(limiter) == 1  # seconds left, rounded up
    clock.now += 0.5
    assert limiter.attempt("203.0.113.7") == 0
    limiter.finish("203.0.113.7", right=True)  # a right guess clears the counter
    assert [wrong(limiter) for _ in range(FREE_ATTEMPTS)] == [0] * FREE_ATTEMPTS


def test_an_address_quiet_for_a_day_starts_again():
    clock = Clock()
    limiter = AccessLimiter(MemoryCounters(), clock)
    for _ in range(FREE_ATTEMPTS + 3):
        clock.now += MAX_LOCK_SECONDS
        wrong(limiter)
    clock.now += 24 * 3600 + 1
    assert [wrong(limiter) for _ in range(FREE_ATTEMPTS)] == [0] * FREE_ATTEMPTS


def race(calls: int, attempt) -> list[int]:
    start, answers = threading.Barrier(calls), [None] * calls

    def go(i):
        start.wait()
        answers[i] = attempt()

    workers = [threading.Thread(target=go, args=(i,)) for i in range(calls)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return answers


def test_forty_parallel_guesses_from_one_address_get_only_the_free_attempts():
    limiter = AccessLimiter(MemoryCounters(), Clock())
    answers = race(40, lambda: limiter.attempt("203.0.113.7"))
    assert answers.count(0) == FREE_ATTEMPTS and all(a >= 1 for a in answers if a)


@pytest.mark.teams
def test_replicas_on_one_postgres_database_share_the_counters(database_url):
    clock = Clock()
    replica_a = AccessLimiter(DatabaseCounters(database_url), clock)
    replica_b = AccessLimiter(DatabaseCounters(database_url), clock)
    answers = race(12, lambda: replica_a.attempt("203.0.113.7")) + race(12, lambda: replica_b.attempt("203.0.113.7"))
    assert answers.count(0) == FREE_ATTEMPTS
    assert replica_b.attempt("203.0.113.7") == 1
    clock.now += 1
    assert replica_b.attempt("203.0.113.7") == 0
    replica_b.finish("203.0.113.7", right=True)
    assert replica_a.attempt("203.0.113.7") == 0


def test_without_trusted_proxies_every_guess_also_counts_for_everybody():
    """A forged X-Forwarded-For gives a new address per guess; the counter for everybody still locks."""
    from core.store.access_limit import EVERYONE, counted_clients

    limiter = AccessLimiter(MemoryCounters(), Clock())
    forged = [counted_clients(f"203.0.113.{n}", f"203.0.113.{n}", ()) for n in range(FREE_ATTEMPTS + 1)]
    assert forged[0] == ("203.0.113.0", EVERYONE)
    assert [wrong(limiter, clients) for clients in forged] == [0] * FREE_ATTEMPTS + [1]


def test_trusted_proxies_name_the_client_by_the_header_they_wrote():
    from core.store.access_limit import counted_clients, trusted_networks

    proxies = trusted_networks("127.0.0.1, 10.0.0.0/8")
    assert counted_clients("10.0.0.5", "203.0.113.9", proxies) == ("203.0.113.9",)  # a proxy on another host
    # what the client wrote is left of what our proxies appended: the right-most untrusted entry is the client
    assert counted_clients("10.0.0.5", "198.51.100.1, 203.0.113.9, 10.0.0.7", proxies) == ("203.0.113.9",)
    assert counted_clients("198.51.100.1", "203.0.113.9", proxies) == ("198.51.100.1",)  # not through a proxy
    assert counted_clients("10.0.0.5", "", proxies) == ("10.0.0.5",)  # the proxy named nobody: its own counter
    assert counted_clients("::ffff:127.0.0.1", "203.0.113.9", proxies) == ("203.0.113.9",)  # a dual-stack socket
    with pytest.raises(ValueError, match="'proxy.internal' is not an IP address"):
        trusted_networks("127.0.0.1, proxy.internal")
