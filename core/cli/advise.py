"""Which pattern for my documents? Generate a question set from collections, and advise on a pattern."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from pathlib import Path

from core.cli import common
from core.config import Settings


@contextlib.contextmanager
def _stop_on_interrupt():
    """Ctrl-C asks the loop to stop after the current model call (what was done so far is kept);
    the previous handler is back afterwards."""
    stop = threading.Event()

    def handler(_signum, _frame):
        if stop.is_set():
            raise KeyboardInterrupt  # a second Ctrl-C: stop now
        sys.stderr.write("\nstopping after the current step (Ctrl-C again to quit at once)\n")
        stop.set()

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, handler) if main else None
    try:
        yield stop
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def _eta_progress(kept: int, wanted: int, label: str, seconds_left: float | None) -> None:
    left = f" ~{seconds_left:.0f}s left" if seconds_left is not None else ""
    common.progress(kept, wanted, f"{label}{left}")


def _print_set(items: list[dict]) -> None:
    for item in items:
        facts = " | ".join(item["facts"]) or "-"
        where = ", ".join(f"{p['collection']}/{p['file']}" for p in item.get("provenance") or [] if p.get("file"))
        print(f"{item['id']}  {item['kind']:<16} {item['lang'] or '?':<2}  {item['question']}")
        print(f"      facts: {facts}" + (f"   from: {where}" if where else ""))


def cmd_questions(settings: Settings, args) -> int:
    from core.llm.models import get_chat_model
    from core.studio import question_gen
    from core.studio.question_set import dump_question_set, save_question_set

    kb = common.knowledge(settings)
    missing = [c for c in args.collection if not kb.exists(c)]
    if missing:
        sys.stderr.write(f"error: no collection {', '.join(missing)}; known: {', '.join(kb.names())}\n")
        return 2
    common.prepare_model(settings)
    try:
        with _stop_on_interrupt() as stop:
            done = question_gen.generate(kb, get_chat_model(settings), args.collection, args.count,
                                         progress=_eta_progress, should_stop=stop.is_set, seed=args.seed, k=settings.k)
    except ValueError as exc:  # a collection without chunks
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if args.out:
        Path(args.out).write_text(dump_question_set(done.items), encoding="utf-8")
        where = args.out
    elif done.items:
        where = save_question_set(settings, f"{'+'.join(args.collection)}-{time.strftime('%Y%m%d-%H%M%S')}",
                                  done.items)
    else:
        where = ""
    if args.json:
        print(json.dumps({"set": where, "summary": done.summary(), "items": done.items}, ensure_ascii=False, indent=2))
    else:
        _print_set(done.items)
    summary = done.summary()
    dropped = ", ".join(f"{k} {v}" for k, v in sorted(summary["dropped"].items())) or "none"
    sys.stderr.write(f"kept {summary['kept']} of {summary['attempts']} written in {summary['seconds']} s "
                     f"(dropped: {dropped}){'; stopped early' if done.stopped else ''}\n")
    if where:
        sys.stderr.write(f"saved to {where}\n")
    return 0 if done.items else 1


def register(sub) -> dict:
    """Add this group's sub-commands to ``sub``; return command -> handler."""
    p = sub.add_parser("questions", help="write a question set from collections with the configured model",
                       description="Samples chunks across the collections' files; each question is in its chunk's "
                       "language with its key facts quoted from the chunk (checked). Ctrl-C stops and keeps the rest.")
    p.add_argument("--collection", action="append", required=True, type=common.collection_name,
                   help="a collection to write questions from (repeat for several: adds cross-collection questions)")
    p.add_argument("--count", type=common.positive, default=10, help="questions to keep (default 10)")
    p.add_argument("--out", help="write the JSONL here (default: saved under <data dir>/question_sets/)")
    p.add_argument("--seed", type=int, default=0, help="which chunks are sampled (default 0)")
    p.add_argument("--json", action="store_true")
    return {"questions": cmd_questions}
