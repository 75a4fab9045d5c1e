"""Command line: python -m core doctor | ingest | ask | resume | steps | fork | threads | eval | bench."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.config import PROVIDERS, Settings, load_settings


def _progress(done: int, total: int, label: str) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r  {label[:40]:<40} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (zero questions would save an empty evaluation)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _knowledge(settings: Settings):
    from core.knowledge import KnowledgeBase

    kb = KnowledgeBase(settings)
    rebuilt = kb.ensure_samples(progress=_progress)
    if rebuilt:
        sys.stderr.write(f"indexed sample collections: {', '.join(rebuilt)}\n")
    return kb


def cmd_doctor(settings: Settings, args) -> int:
    from core.embeddings import get_embeddings
    from core.models import check
    from core.web_search import web_status

    status = check(settings)
    print(f"chat model     : {status.line()}")
    try:
        emb = get_embeddings(settings)
        dim = len(emb.embed_query("상태 확인"))
        print(f"embeddings     : {emb.model_id}: ok ({dim} dimensions)")
    except Exception as exc:
        print(f"embeddings     : {settings.embedding_provider}: error - {exc}")
    print(f"web search     : {web_status(settings)}")
    print(f"data directory : {settings.data_path}")
    try:
        kb = _knowledge(settings)
        for name in kb.names():
            info = kb.info(name)
            print(f"collection     : {name}: {info['chunks']} chunks, {info['embedding_model']}, "
                  f"{len(info['sources'])} source(s)")
    except Exception as exc:
        print(f"knowledge base : error - {exc}")
    return 0 if status.ok else 1


def cmd_ingest(settings: Settings, args) -> int:
    from core.knowledge import KnowledgeBase

    kb = KnowledgeBase(settings)
    report = kb.ingest([Path(p) for p in args.paths], args.collection, progress=_progress)
    for source, count in report.added.items():
        print(f"ok     {source}: {count} chunks -> {args.collection}")
    for _name, reason in report.errors.items():
        print(f"error  {reason}")
    return 0 if not report.errors else 1


def _print_result(result: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
        return
    if result.get("interrupted"):
        print(f"paused for review in thread {result['thread_id']}: {json.dumps(result['interrupt'], ensure_ascii=False)[:400]}")
        print(f"continue with: python -m core resume {result['thread_id']} --approve | --reject | --question TEXT")
        return
    print(result.get("answer", ""))
    for src in result.get("sources", []):
        where = src.get("url") or f"{src['source']} p.{src.get('page')}"
        print(f"  [{src['n']}] {src.get('title', '')} ({where})")
    print(f"-- {result.get('termination_reason')}: {result.get('termination_message')} | "
          f"{result.get('llm_calls', 0)} LLM calls, {result.get('ms', 0)} ms, thread {result.get('thread_id')}")


def _finish(result: dict, as_json: bool) -> int:
    if result.get("error"):
        sys.stderr.write(f"error: {result['error']}\n")
        if as_json:
            _print_result(result, True)
        return 1
    _print_result(result, as_json)
    return 0


def cmd_ask(settings: Settings, args) -> int:
    from core.runner import RunInputError, stream_run

    try:
        _knowledge(settings)
        result: dict = {}
        for event in stream_run(args.pattern, args.question, settings, thread_id=args.thread, review=args.review,
                                variant=args.variant):
            if event["type"] == "progress":  # e.g. Graph RAG's first graph extraction, which takes minutes
                _progress(event["done"], event["total"], f"{event['step']} {event['subject']}")
            elif event["type"] in ("done", "error"):
                result = event["result"]
    except (RunInputError, KeyError, ValueError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return _finish(result, args.json)


def cmd_resume(settings: Settings, args) -> int:
    from core.runner import RunInputError, resume

    if args.reject:
        decision = {"action": "reject", "message": args.message or ""}
    elif args.question:
        decision = {"action": "edit", "question": args.question}
    else:
        decision = {"action": "approve"}
    try:
        result = resume(args.thread_id, decision, settings)
    except RunInputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return _finish(result, args.json)


def cmd_steps(settings: Settings, args) -> int:
    from core.fork_store import forks_of
    from core.steps import StepsError, turn_steps

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


def cmd_fork(settings: Settings, args) -> int:
    from core.fork import ForkError, stream_fork

    changes = {}
    for pair in args.set or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            sys.stderr.write(f"error: --set needs key=value, got {pair!r}\n")
            return 2
        changes[key.strip()] = value
    try:
        result: dict = {}
        for event in stream_fork(settings, args.thread_id, args.step, changes, turn=args.turn):
            if event["type"] == "progress":
                _progress(event["done"], event["total"], f"{event['step']} {event['subject']}")
            elif event["type"] in ("done", "error"):
                result = event["result"]
    except ForkError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    code = _finish(result, args.json)
    if not args.json and not result.get("error"):
        origin = result["forked_from"]
        what = "replayed" if origin["replay"] else "changed " + json.dumps(origin["changes"], ensure_ascii=False)
        print(f"-- forked from thread {origin['thread']} at step {origin['step']} ({origin['node']}): {what}")
    return code


def cmd_bench(settings: Settings, args) -> int:
    from core.bench import main as bench_main

    return bench_main(settings, args.json, args.large, args.latency)


def cmd_eval(settings: Settings, args) -> int:
    from core import evaluate
    from core.patterns import pattern_ids

    patterns = args.patterns.split(",") if args.patterns else pattern_ids()
    unknown = [p for p in patterns if p not in pattern_ids()]
    if unknown:
        sys.stderr.write(f"error: unknown pattern(s) {', '.join(unknown)}; choose from {', '.join(pattern_ids())}\n")
        return 2
    items = evaluate.load_evalset()
    if args.category:
        items = [i for i in items if i["category"] == args.category]
    items = evaluate.spread(items, args.limit)
    _knowledge(settings)
    report = evaluate.evaluate(settings, patterns, items, progress=_progress)
    path = evaluate.save(report, settings)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else evaluate.render(report))
    sys.stderr.write(f"saved to {path}\n")
    return 0


def cmd_patterns(settings: Settings, args) -> int:
    from core.patterns import all_patterns

    for p in all_patterns():
        print(f"{p.id:<13} {p.title:<24} at most {p.max_llm_calls(settings):>3} LLM calls "
              f"(k={settings.k}, rewrites={settings.max_rewrites}, regenerations={settings.max_generations}), "
              f"recursion limit {p.recursion_limit(settings)}")
    return 0


def cmd_threads(settings: Settings, args) -> int:
    from core.threads import get_registry

    for t in get_registry(settings.data_path).list(pattern=args.pattern):
        print(f"{t['thread_id']}  {t['pattern']:<12} {t['status']:<8} {t['origin']:<7} {t['title']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core", description="Agentic RAG Studio command line")
    parser.add_argument("--provider", choices=PROVIDERS, help="chat-model provider (default: automatic)")
    parser.add_argument("--model", help="chat model name")
    parser.add_argument("--data-dir", help="where collections, checkpoints and threads are stored")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("doctor", help="show what is in use and whether it works")

    p = sub.add_parser("ingest", help="index .txt/.md/.pdf files into a collection")
    p.add_argument("paths", nargs="+")
    p.add_argument("--collection", default="documents")

    p = sub.add_parser("ask", help="run a pattern on a question")
    p.add_argument("question")
    p.add_argument("--pattern", default="basic")
    p.add_argument("--variant", help="pattern variant, e.g. complexity for adaptive")
    p.add_argument("--thread", help="continue this conversation thread")
    p.add_argument("--review", action="store_true", help="pause for human review before answering")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("resume", help="continue a run paused for review")
    p.add_argument("thread_id")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--approve", action="store_true")
    group.add_argument("--reject", action="store_true")
    group.add_argument("--question", help="edit the question (documents are retrieved again)")
    p.add_argument("--message", help="reason given with --reject")
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
    p.add_argument("--turn", type=int, help="which turn of the thread, from 0 (default: the last)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("bench", help="measure graph overhead, grading concurrency and the offline stack")
    p.add_argument("--json", action="store_true")
    p.add_argument("--large", action="store_true", help="also measure Chroma at 100,000 chunks (slow)")
    p.add_argument("--latency", type=float, default=1.0, help="injected seconds per model call (default 1.0)")

    p = sub.add_parser("eval", help="score patterns on the shipped question set")
    p.add_argument("--patterns", help="comma-separated pattern ids (default: all)")
    p.add_argument("--limit", type=_positive, help="only N questions, taken in turn from each category")
    p.add_argument("--category", help="only one category (menu, wine, pairing, policy_both, ...)")
    p.add_argument("--json", action="store_true")

    sub.add_parser("patterns", help="list the patterns and the most LLM calls each run can make")

    p = sub.add_parser("threads", help="list conversation threads")
    p.add_argument("--pattern")

    for name in ("ask", "resume", "fork", "eval"):  # allow the global options after the sub-command too
        sub.choices[name].add_argument("--provider", choices=PROVIDERS, dest="provider_late")
        sub.choices[name].add_argument("--model", dest="model_late")

    args = parser.parse_args(argv)
    provider = getattr(args, "provider_late", None) or args.provider
    model = getattr(args, "model_late", None) or args.model
    settings = load_settings(provider=provider, model=model, data_dir=args.data_dir)
    handler = {"doctor": cmd_doctor, "ingest": cmd_ingest, "ask": cmd_ask, "resume": cmd_resume,
               "threads": cmd_threads, "patterns": cmd_patterns,
               "steps": cmd_steps, "fork": cmd_fork, "bench": cmd_bench, "eval": cmd_eval}[args.command]
    return handler(settings, args)


if __name__ == "__main__":
    sys.exit(main())
