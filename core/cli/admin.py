"""Operating the app: doctor, bench, prune, migrate."""

from __future__ import annotations

import json
import os
import sys

from core.cli import common
from core.config import ReadOnlyError, Settings

MIGRATE_ENV = {"database": "RAG_MIGRATE_DATABASE_URL", "chroma": "RAG_MIGRATE_CHROMA_URL"}


def cmd_doctor(settings: Settings, args) -> int:
    from core.knowledge.web_search import web_status
    from core.llm.embeddings import get_embeddings
    from core.llm.model_files import EMBEDDED_MODELS
    from core.llm.models import ProviderError, check, resolve_provider
    from core.store.access_limit import gate_problem

    backends = report_backends(settings)
    for backend in backends:
        print(backend.line())
    if not all(b.ok for b in backends):
        return 1
    gate = gate_problem(settings)
    if settings.app_password or gate:
        print(f"password gate  : {'refused - ' + gate if gate else 'ok'}")
    try:
        common.prepare_model(settings)
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
        kb = common.knowledge(settings)
        for name in kb.names():
            info = kb.info(name)
            print(f"collection     : {name}: {info['chunks']} chunks, {info['embedding_model']}, "
                  f"{len(info['sources'])} source(s)")
    except Exception as exc:
        print(f"knowledge base : error - {exc}")
    return 0 if status.ok and not gate else 1


def cmd_bench(settings: Settings, args) -> int:
    from core.cli.bench import main as bench_main

    return bench_main(settings, args.json, args.large, args.latency, "embedded" if args.embedded_only else "")


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


def report_backends(settings: Settings):
    from core.cli.backends import report

    return report(settings)


def migrate_target(given: str | None, kind: str) -> str:
    """A migration target URL: as given, ``-`` = the next line of stdin, unset = ``RAG_MIGRATE_*_URL``.

    The stdin and environment forms keep a password off the command line (and out of ``ps`` and shell history).
    """
    if given == "-":
        return sys.stdin.readline().strip()
    return given or os.environ.get(MIGRATE_ENV[kind], "").strip()


def register(sub) -> dict:
    """Add this group's sub-commands to ``sub``; return command -> handler."""
    sub.add_parser("doctor", help="show what is in use and whether it works")
    p = sub.add_parser("bench", help="measure graph overhead, grading concurrency and the offline stack")
    p.add_argument("--json", action="store_true")
    p.add_argument("--large", action="store_true", help="also measure Chroma at 100,000 chunks (slow)")
    p.add_argument("--latency", type=float, default=1.0, help="injected seconds per model call (default 1.0)")
    p.add_argument("--embedded-only", action="store_true", help="only the embedded chat models (both of them)")
    p = sub.add_parser("prune", help="delete old checkpoints (each thread keeps its latest: answers and reviews stay)")
    p.add_argument("--keep-last", type=common.positive, help="keep the N newest checkpoints of each thread")
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
    return {"doctor": cmd_doctor, "bench": cmd_bench, "prune": cmd_prune, "migrate": cmd_migrate}
