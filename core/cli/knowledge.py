"""The knowledge base: index files into collections, list and describe them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core.cli import common
from core.config import ReadOnlyError, Settings, refuse_if_read_only


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
        report = kb.ingest([Path(p) for p in args.paths], args.collection, progress=common.progress, replace=args.replace)
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

    kb = common.knowledge(settings)
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


def register(sub) -> dict:
    """Add this group's sub-commands to ``sub``; return command -> handler."""
    p = sub.add_parser("ingest", help="index .txt/.md/.pdf files into a collection")
    p.add_argument("paths", nargs="+")
    p.add_argument("--collection", default="documents", type=common.collection_name)
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
    return {"ingest": cmd_ingest, "collections": cmd_collections}
