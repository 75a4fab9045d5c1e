"""Runs: ask a pattern, resume a paused run, list steps and threads, fork a turn (what if?)."""

from __future__ import annotations

import json
import sys

from core.cli import common
from core.config import Settings


def cmd_ask(settings: Settings, args) -> int:
    from core.llm.models import ProviderError
    from core.run.runner import RunInputError, stream_run

    try:
        common.knowledge(settings)
        common.prepare_model(settings)
        result: dict = {}
        chosen = [c.strip() for c in (args.sources or "").split(",") if c.strip()] or None
        for event in stream_run(args.pattern, args.question, settings, thread_id=args.thread, review=args.review,
                                review_answer=args.review_answer, variant=args.variant, source_ids=chosen):
            if event["type"] == "progress":  # e.g. Graph RAG's first graph extraction, which takes minutes
                common.progress(event["done"], event["total"], f"{event['step']} {event['subject']}")
            elif event["type"] in ("done", "error"):
                result = event["result"]
    except (RunInputError, KeyError, ValueError, ProviderError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return common.finish(result, args.json)


def cmd_resume(settings: Settings, args) -> int:
    from core.run.runner import RunInputError, resume

    decision = _decision(args)
    if args.reviewer:
        decision["reviewer"] = args.reviewer
    try:
        result = resume(args.thread_id, decision, settings)
    except RunInputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return common.finish(result, args.json)


def _decision(args) -> dict:
    """The reviewer's decision the resume flags spell (core.runtime.review)."""
    if args.reject:
        return {"action": "reject", "message": args.message or ""}
    # "is not None": an empty --answer "" or --drop "" is a decision the review refuses, not an approval
    if args.question is not None:
        return {"action": "edit", "question": args.question}
    if args.drop is not None:
        return {"action": "drop", "claims": [c.strip() for c in args.drop.split(",") if c.strip()]}
    if args.answer is not None:
        return {"action": "edit", "answer": args.answer}
    if args.revise is not None:
        return {"action": "revise", "message": args.revise}
    return {"action": "approve"}


def cmd_steps(settings: Settings, args) -> int:
    from core.store.fork_store import forks_of
    from core.studio.steps import StepsError, turn_steps

    try:
        steps = turn_steps(settings, args.thread_id, args.turn)
    except StepsError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    forks = [{"thread_id": f["thread_id"], "status": f["status"],
              **{k: f["forked_from"][k] for k in ("step", "node", "changes", "replay")},
              "termination_reason": (f["result"] or {}).get("termination_reason")}
             for f in forks_of(settings, args.thread_id, steps["turn"])]
    if args.json:
        print(json.dumps({**steps, "forks": forks}, ensure_ascii=False, indent=2, default=str))
        return 0
    print(f"thread {steps['thread_id']} · {steps['pattern']} · turn {steps['turn']} (of 0-{steps['turns'] - 1}) · "
          f"{steps['question']}")
    for step in steps["steps"]:
        print(f"{step['n']:>3}  {step['node']:<20} {_step_line(step)}")
    for f in forks:
        what = "replay" if f["replay"] else ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in f["changes"].items())
        print(f"fork {f['thread_id']} at step {f['step']} ({f['node']}): {what} -> {f['termination_reason'] or f['status']}")
    return 0


def cmd_fork(settings: Settings, args) -> int:
    from core.studio.fork import ForkError, stream_fork

    changes = {}
    for pair in args.set or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            sys.stderr.write(f"error: --set needs key=value, got {pair!r}\n")
            return 2
        changes[key.strip()] = value
    try:
        result: dict = {}
        for event in stream_fork(settings, args.thread_id, args.step, changes, turn=args.turn,
                                 thresholds=args.thresholds):
            if event["type"] == "progress":
                common.progress(event["done"], event["total"], f"{event['step']} {event['subject']}")
            elif event["type"] in ("done", "error"):
                result = event["result"]
    except ForkError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    code = common.finish(result, args.json)
    if not args.json and not result.get("error"):
        origin = result["forked_from"]
        what = "replayed" if origin["replay"] else "changed " + json.dumps(origin["changes"], ensure_ascii=False)
        if origin.get("thresholds") is not None:
            what += f", graders deciding with {origin['thresholds']}"
        print(f"-- forked from thread {origin['thread']} at step {origin['step']} ({origin['node']}): {what}")
    return code


def cmd_threads(settings: Settings, args) -> int:
    from core.store.threads import get_registry

    # reading the registry closes runs whose process is gone (interrupted); a live process's runs stay running
    for t in get_registry(settings).list(pattern=args.pattern):
        print(f"{t['thread_id']}  {t['pattern']:<12} {t['status']:<11} {t['origin']:<7} {t['title']}")
    return 0


def _step_line(step: dict) -> str:
    """What a step wrote and decided, and what can be changed there, on one line."""
    if step["status"] != "done":
        return f"[{step['status']}] {step['error']}".strip()
    wrote = []
    for key, value in step["wrote"].items():
        if isinstance(value, list) and value and isinstance(value[0], dict) and "id" in value[0]:
            wrote.append(f"{key}: {len(value)} [{', '.join(d['id'] for d in value)}]")
        elif key not in ("messages", "sources", "best"):
            wrote.append(f"{key}={json.dumps(value, ensure_ascii=False)[:60]}")
    decided = [f"{e.get('grader') or e['kind']} {e.get('verdict', '')}".strip() for e in step["events"]
               if e.get("kind") in ("route", "verdict", "rewrite", "error", "info")]
    line = " · ".join(wrote + decided) or "-"
    if step["editable"]:
        line += "  | change: " + ", ".join(
            f"{k} ({'|'.join(map(str, v['choices']))})" if v.get("choices") else
            f"{k} (of {', '.join(c['id'] for c in v['candidates'])})" if v["kind"] == "documents" else k
            for k, v in step["editable"].items())
    if step["changed_by_user"]:
        line = "[changed] " + line
    return line


def register(sub) -> dict:
    """Add this group's sub-commands to ``sub``; return command -> handler."""
    p = sub.add_parser("ask", help="run a pattern on a question")
    p.add_argument("question")
    p.add_argument("--pattern", default="basic")
    p.add_argument("--variant", help="pattern variant, e.g. complexity for adaptive")
    p.add_argument("--sources", help="comma-separated collections this run may use (default: every enabled one)")
    p.add_argument("--thread", help="continue this conversation thread")
    p.add_argument("--review", action="store_true", help="pause for human review before answering")
    p.add_argument("--review-answer", nargs="?", const="always", choices=("off", "unsupported", "always"),
                   help="pause for review of the checked answer: always (the default when given without a value), or "
                        "only when a sentence is unsupported or unchecked (default: RAG_REVIEW_ANSWER, off)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p = sub.add_parser("resume", help="continue a run paused for review")
    p.add_argument("thread_id")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--approve", action="store_true")
    group.add_argument("--reject", action="store_true")
    group.add_argument("--question", help="edit the question (documents are retrieved again)")
    group.add_argument("--drop", metavar="ID,...", help="answer review: drop these sentences (ids as listed: c1,c2)")
    group.add_argument("--answer", metavar="TEXT", help="answer review: replace the answer with this text (checked again)")
    group.add_argument("--revise", metavar="MESSAGE", help="answer review: send the draft back with this note")
    p.add_argument("--message", help="reason given with --reject")
    p.add_argument("--reviewer", help="your name, recorded in the trace with the decision")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("steps", help="list the steps of a run (a thread's turn) and what can be changed at each")
    p.add_argument("thread_id")
    p.add_argument("--turn", type=int, help="which turn of the thread, from 0 (default: the last)")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("fork", help="what if? run a thread's turn again from a step, with a change (or none: replay)")
    p.add_argument("thread_id")
    p.add_argument("--step", type=int, required=True, help="the step to fork at (see: steps THREAD)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a field to change at that step, e.g. route=wine or documents=ID1,ID2 (repeatable)")
    p.add_argument("--thresholds", metavar="GRADER=P,...",
                   help="the graders decide with these thresholds from that step on, e.g. relevance=0.8,crag=0.3:0.7")
    p.add_argument("--turn", type=int, help="which turn of the thread, from 0 (default: the last)")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("threads", help="list conversation threads")
    p.add_argument("--pattern")
    return {"ask": cmd_ask, "resume": cmd_resume, "steps": cmd_steps, "fork": cmd_fork, "threads": cmd_threads}
