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
    """One line per question written: kept or dropped (and why), the count so far, the time left."""
    left = f", ~{seconds_left:.0f} s left" if seconds_left is not None else ""
    sys.stderr.write(f"  [{kept}/{wanted}{left}] {label}\n")
    sys.stderr.flush()


def _print_set(items: list[dict]) -> None:
    for item in items:
        facts = " | ".join(item["facts"]) or "-"
        where = ", ".join(f"{p['collection']}/{p['file']}" for p in item.get("provenance") or [] if p.get("file"))
        print(f"{item['id']}  {item['kind']:<16} {item['lang'] or '?':<2}  {item['question']}")
        print(f"      facts: {facts}" + (f"   from: {where}" if where else ""))


def cmd_questions(settings: Settings, args) -> int:
    from core.llm.models import get_chat_model
    from core.studio import question_gen
    from core.studio.question_set import count_problem, dump_question_set, save_question_set

    problem = count_problem(args.count, settings)
    if problem:  # before the collections are opened or a model is loaded
        sys.stderr.write(f"error: {problem}\n")
        return 2
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
    sys.stderr.write(f"kept {summary['kept']} of {summary['attempts']} written in {summary['seconds']} s, "
                     f"{summary['model_calls']} model calls ({summary['calls_per_kept'] or '-'} per kept question, at most "
                     f"{summary['call_bound']}) (dropped: {dropped}){'; stopped early' if done.stopped else ''}\n")
    if where:
        sys.stderr.write(f"saved to {where}\n")
    return 0 if done.items else 1


def _advice_set(settings: Settings, args, kb):
    """(name, items, patterns) from --set FILE, or from --collection: the set saved for it before, else a new one.

    Past RAG_MAX_SET_QUESTIONS or RAG_MAX_SET_RUNS it raises QuestionSetError before a new set is written."""
    from core.llm.models import get_chat_model
    from core.studio import question_gen
    from core.studio.question_set import (
        QuestionSetError,
        count_problem,
        load_question_set,
        load_saved_question_set,
        refuse_runs,
        save_question_set,
        saved_question_sets,
        set_file_name,
    )

    def known(name: str, items: list[dict]):
        patterns = _chosen_patterns(settings, args, len(items))
        refuse_runs(len(items), len(patterns), settings)
        return name, items, patterns

    if args.set:
        return known(Path(args.set).name, load_question_set(args.set))
    name = set_file_name(f"{'+'.join(args.collection)}-advice")
    if name in saved_question_sets(settings) and not args.fresh:  # the same set again: finished runs are reused
        sys.stderr.write(f"using the saved set {name} (--fresh writes a new one)\n")
        return known(name, load_saved_question_set(settings, name))
    problem = count_problem(args.count, settings)
    if problem:
        raise QuestionSetError(problem)
    # the set will hold at most --count questions: refused now rather than after writing it
    refuse_runs(args.count, len(_chosen_patterns(settings, args, args.count, quiet=True)), settings)
    common.prepare_model(settings)
    with _stop_on_interrupt() as stop:
        done = question_gen.generate(kb, get_chat_model(settings), args.collection, args.count,
                                     progress=_eta_progress, should_stop=stop.is_set, k=settings.k)
    if not done.items:
        raise ValueError(f"no question could be written from {', '.join(args.collection)}: {done.summary()['dropped']}")
    name, items, patterns = known(name, done.items)
    name = save_question_set(settings, name, items, replace=True)  # --fresh: the collection's set, written anew
    sys.stderr.write(f"wrote {len(items)} questions, saved as {name}\n")
    return name, items, patterns


def _chosen_patterns(settings: Settings, args, questions: int, quiet: bool = False) -> list[str]:
    """--patterns, or every pattern, or those that fit --budget-minutes (``quiet``: without saying what was left out)."""
    from core.patterns import pattern_ids
    from core.studio.advise import estimate, fit_budget

    if args.patterns:
        unknown = [p for p in args.patterns.split(",") if p not in pattern_ids()]
        if unknown:
            raise ValueError(f"unknown pattern(s) {', '.join(unknown)}; choose from {', '.join(pattern_ids())}")
        return args.patterns.split(",")
    estimates = estimate(settings, pattern_ids(), questions)
    if args.budget_minutes is None:
        return pattern_ids()
    chosen, left = fit_budget(estimates, args.budget_minutes * 60)
    if quiet:
        return chosen
    if not any(estimates.values()):
        sys.stderr.write("no timing measured yet for this model: every pattern runs (name some with --patterns)\n")
    elif left:
        sys.stderr.write(f"left out to fit {args.budget_minutes} min: {', '.join(left)}\n")
    return chosen


def render_advice(report: dict) -> str:
    """The per-pattern table, the quality per kind, the recommendation and its rule, as text."""
    from core.studio.recommend import VERIFICATION_COLUMNS

    cols = ("quality", "key_fact_rate", "faithfulness", "correct_decline_rate", "answered_rate", "route_accuracy",
            "mean_seconds", "mean_llm_calls", "mean_tokens", *VERIFICATION_COLUMNS)
    rows = [[p, str(row["questions"])] + [str(row.get(c)) for c in cols] for p, row in report["patterns"].items()]
    header = ["pattern", "n", *cols]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    lines = [f"advice {report['date']} on {report['set']}: {report['provider']} ({report['model']}), "
             f"{report['finished_runs']} of {report['total_runs']} runs", "  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    for pattern, row in report["patterns"].items():
        lines.append(f"{pattern} per kind: " + ", ".join(f"{k} {v['quality']} ({v['questions']})"
                                                         for k, v in row["kinds"].items()))
        if row.get("routed"):  # Auto: how often it read the kind the set labels, and what it ran
            ran = ", ".join(f"{p} {n}" for p, n in sorted(row["routed"].items(), key=lambda x: (-x[1], x[0])))
            lines.append(f"{pattern}: kind read as labelled {row.get('kind_accuracy')}; ran {ran}")
    rec = report["recommendation"]
    lines += ["", f"recommended: {rec['pattern'] or '-'}"] + [f"  - {r}" for r in rec["reasons"]]
    lines.append(f"rule: {rec['rule']}")
    return "\n".join(lines)


def cmd_advise(settings: Settings, args) -> int:
    from core.store import owner
    from core.studio import advise
    from core.studio.question_set import QuestionSetError

    kb = common.knowledge(settings)
    try:
        set_name, items, patterns = _advice_set(settings, args, kb)
    except (QuestionSetError, ValueError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    for name in advise.undescribed(kb, items) if kb is not None else []:
        sys.stderr.write(f"note: {name} has no description, and routers and agents choose collections by theirs: "
                         f"its questions may go to the web or a direct answer. Describe it first: python -m core "
                         f"collections --suggest {name} --save (or ingest --description)\n")
    common.prepare_model(settings)
    sys.stderr.write(f"{len(items)} questions x {len(patterns)} patterns ({', '.join(patterns)}); Ctrl-C stops, "
                     "and the same command continues where it stopped\n")
    with _stop_on_interrupt() as stop:
        report = advise.advise(settings, items, patterns, progress=common.progress, should_stop=stop.is_set,
                               set_name=set_name, margin=args.margin)
    advise.save_advice({"id": time.strftime("%Y%m%d-%H%M%S-cli"), "date": report["date"], "set": set_name,
                        "patterns": patterns, "items": items, "owner": owner.current(),
                        "status": "stopped" if report["stopped"] else "done", "report": report}, settings)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else render_advice(report))
    if report["reused_runs"]:
        sys.stderr.write(f"{report['reused_runs']} finished run(s) reused from an earlier start\n")
    return 0 if not report["stopped"] else 1


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
    p = sub.add_parser("advise", help="which pattern for my documents? run a set through patterns and recommend one",
                       description="Scores each pattern per kind of question (key facts, claim support, declining, "
                       "route) and cost; recommends the cheapest within --margin of the best quality. A stopped or "
                       "killed advice continues where it stopped when started again with the same set.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--set", help="a JSONL question set")
    source.add_argument("--collection", action="append", type=common.collection_name,
                        help="write a set from this collection first (repeatable; reused when run again)")
    p.add_argument("--count", type=common.positive, default=10, help="with --collection: questions to write")
    p.add_argument("--fresh", action="store_true", help="with --collection: write a new set even if one is saved")
    p.add_argument("--patterns", help="comma-separated pattern ids (default: all, or those that fit --budget-minutes)")
    p.add_argument("--budget-minutes", type=float, help="run only the patterns whose measured time fits")
    p.add_argument("--margin", type=float, default=0.05, help="quality a cheaper pattern may trail by (default 0.05)")
    p.add_argument("--json", action="store_true")
    return {"questions": cmd_questions, "advise": cmd_advise}
