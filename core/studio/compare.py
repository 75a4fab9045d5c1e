"""Compare patterns on one question: one run per pattern, each in its own thread, concurrently.

``stream_compare`` merges the runs' events into one stream (tagged with the pattern) so a front
end can fill each column as its run progresses, in its own (script) thread. Finished
comparisons are saved and can be reopened. A comparison records the process that runs it: one
left unfinished by a process that is gone (a restart) is closed as interrupted when next read.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator

from core.config import Settings
from core.run.runner import RunInputError, check_question, room_problem, stream_run
from core.store import owner, saved_records
from core.store.files import private_folder, write_private

METRICS = ("termination_reason", "claims_supported", "unsupported_claims", "llm_calls", "tokens", "seconds",
           "verification_seconds", "sources", "steps")
QUEUE_POLL_SECONDS = 1.0  # how often a waiting reader checks that the workers are still alive
INTERRUPTED = {"error": "interrupted: the server stopped before this run finished", "termination_reason": "interrupted"}

# comparison id -> workers still running it in this process (only this process can judge its own)
_workers: dict[str, int] = {}
_workers_lock = threading.Lock()


def stream_compare(question: str, patterns: list[str], settings: Settings,
                   ctx_factory: Callable[[str], object] | None = None) -> Iterator[dict]:
    """Yield ``comparing`` (the saved record, with its id), then {"pattern", **event} from all runs as
    they happen; the last event is ``compared``.

    The record is saved when the comparison starts and again by each worker as its run ends, so
    a comparison whose page was left (the generator closed early) still completes on disk.
    """
    question = check_question(question, settings)
    if not patterns:
        raise ValueError("choose at least one pattern to compare")
    problem = room_problem(settings, len(patterns))  # all its columns or none: a comparison half refused is half written
    if problem:
        raise RunInputError(problem)
    events: queue.Queue = queue.Queue()
    record = {"id": time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6], "date": time.strftime("%Y-%m-%d %H:%M"),
              "question": question, "patterns": patterns, "results": {p: {} for p in patterns}, "owner": owner.current()}
    lock = threading.Lock()
    save_comparison(record, settings)
    with _workers_lock:
        _workers[record["id"]] = len(patterns)
    threads = [threading.Thread(target=_worker, args=(p, question, settings, ctx_factory, record, lock, events),
                                daemon=True, name=f"compare-{p}") for p in patterns]
    for thread in threads:
        thread.start()
    yield {"type": "comparing", "comparison": {**record, "results": {p: {} for p in patterns}}}
    yield from _merged(events, threads)
    with lock:
        snapshot = json.loads(json.dumps(record, default=str))
    yield {"type": "compared", "comparison": snapshot}


def _worker(pattern_id: str, question: str, settings: Settings, ctx_factory: Callable[[str], object] | None,
            record: dict, lock: threading.Lock, events: queue.Queue) -> None:
    """Run one pattern of a comparison: its events go to ``events``, its result into the saved record,
    and (whatever happens) its end signal ``(pattern_id, None)``."""
    result: dict = {}
    try:
        ctx = ctx_factory(pattern_id) if ctx_factory else None
        for event in stream_run(pattern_id, question, settings, ctx=ctx, origin="compare"):
            if event["type"] in ("done", "error"):
                result = event["result"]
            events.put((pattern_id, event))
    except Exception as exc:  # a run that cannot start still reports, the others go on
        result = {"pattern": pattern_id, "error": str(exc)}
        events.put((pattern_id, {"type": "error", "message": str(exc), "result": result}))
    finally:
        try:
            with lock:
                record["results"][pattern_id] = result or {"pattern": pattern_id,
                                                           "error": "the run ended without a result"}
                save_comparison(record, settings)
        except Exception as exc:  # disk full, folder gone: the reader is told, and still gets the end signal
            message = f"the result of {pattern_id} could not be saved: {exc}"
            events.put((pattern_id, {"type": "error", "message": message, "result": {**result, "error": message}}))
        finally:
            with _workers_lock:
                _workers[record["id"]] -= 1
            events.put((pattern_id, None))


def _merged(events: queue.Queue, threads: list[threading.Thread]) -> Iterator[dict]:
    """The workers' events as they arrive, tagged with their pattern, until every worker has ended
    (or is gone without its end signal)."""
    running = len(threads)
    while running:
        try:
            pattern_id, event = events.get(timeout=QUEUE_POLL_SECONDS)
        except queue.Empty:
            if any(t.is_alive() for t in threads):
                continue
            break  # every worker is gone without its end signal: nothing more will come
        if event is None:
            running -= 1
            continue
        yield {"pattern": pattern_id, **event}


def compare(question: str, patterns: list[str], settings: Settings, **kwargs) -> dict:
    record: dict = {}
    for event in stream_compare(question, patterns, settings, **kwargs):
        if event["type"] == "compared":
            record = event["comparison"]
    return record


def is_running(record: dict) -> bool:
    """Some pattern has no result yet: its worker is still going (the page that started it was left)."""
    return not all((record.get("results") or {}).values())


def _settled(record: dict, settings: Settings) -> dict:
    """The record, with the runs a gone process left unfinished closed as interrupted (and saved so)."""
    if not is_running(record):
        return record
    who = record.get("owner")
    if who and owner.is_current(who):
        with _workers_lock:
            alive = _workers.get(record.get("id"), 0) > 0
    else:
        alive = not owner.is_gone(who)
    if alive:
        return record
    record["results"] = {p: r or dict(INTERRUPTED, pattern=p) for p, r in record["results"].items()}
    save_comparison(record, settings)
    return record


def metrics_rows(record: dict) -> list[dict]:
    """One row per pattern: what a metrics table and chart show."""
    rows = []
    for pattern_id, result in record["results"].items():
        rows.append({
            "pattern": pattern_id,
            "termination_reason": result.get("termination_reason") or ("error" if result.get("error") else ""),
            "llm_calls": result.get("llm_calls", 0),
            "tokens": result.get("tokens", 0),
            "seconds": round(result.get("ms", 0) / 1000, 2),
            "sources": len(result.get("sources") or []),
            "steps": len(result.get("path") or []),
            **claim_columns(result),
        })
    return rows


def _folder(settings: Settings):
    return private_folder(settings.data_path, "comparisons")


def save_comparison(record: dict, settings: Settings) -> None:
    if saved_records.in_database(settings):
        saved_records.save(settings, "comparison", record["id"], record)
        return
    path = _folder(settings) / f"{record['id']}.json"
    write_private(path, json.dumps(record, ensure_ascii=False, indent=2, default=str))  # whole, 0600


def list_comparisons(settings: Settings) -> list[dict]:
    """Past comparisons, newest first: id, date, question, patterns, running."""
    out = []
    if saved_records.in_database(settings):
        records = [record for _id, record in saved_records.listed(settings, "comparison")]
    else:
        records = []
        for path in sorted(_folder(settings).glob("*.json"), reverse=True):
            try:
                records.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
    for record in records:
        record = _settled(record, settings)
        out.append({k: record.get(k) for k in ("id", "date", "question", "patterns")} | {"running": is_running(record)})
    return out


def load_comparison(settings: Settings, compare_id: str) -> dict:
    if saved_records.in_database(settings):
        record = saved_records.load(settings, "comparison", compare_id)
        if record is None:
            raise KeyError(f"no saved comparison {compare_id!r}")
        return _settled(record, settings)
    path = _folder(settings) / f"{compare_id}.json"
    if not path.is_file() or path.parent != _folder(settings):
        raise KeyError(f"no saved comparison {compare_id!r}")
    return _settled(json.loads(path.read_text(encoding="utf-8")), settings)


def claim_columns(result: dict) -> dict:
    """The claim check of one run for a table: "3 / 4" supported, the unsupported sentences, its own seconds."""
    support = result.get("claim_support") or {}
    unsupported = [c["text"] for c in result.get("claims") or [] if c.get("verdict") == "unsupported"]
    return {"claims_supported": f"{support['supported']} / {support['claims']}" if support.get("claims") else "",
            "unsupported_claims": " | ".join(unsupported),
            "verification_seconds": round((result.get("verification") or {}).get("ms", 0) / 1000, 2)}
