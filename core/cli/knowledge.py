"""The knowledge base: index files into collections, list and describe them."""

from __future__ import annotations

import argparse
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
    if args.graph and kb.exists(args.collection):
        build_graph(settings, kb, args.collection)
    elif report.added:  # the chunks are searchable now; extraction would hold the prompt for minutes
        sys.stderr.write(f"note: {args.collection}'s Graph RAG graph is not built yet: Graph RAG's first question on it "
                         "starts the build in the background (or add --graph to build it now)\n")
    return 0 if not report.errors else 1


def build_graph(settings: Settings, kb, collection: str) -> None:
    """Graph RAG's graph of a collection just indexed, built now with the grader model, its progress on stderr.

    The build runs in a thread; this process waits for it (a CLI process that ended would take it along).
    Ctrl-C stops waiting: what was extracted is stored, and the next build continues from there.
    """
    from core.knowledge import graph_builds

    common.prepare_model(settings)
    build = graph_builds.build_after_ingest(settings, kb, collection)
    if build is None:
        sys.stderr.write(f"note: no grader model to extract {collection}'s graph with; Graph RAG's first question "
                         "on it starts the build\n")
        return
    sys.stderr.write(f"graph of {collection}: extracting with {build.model} (Ctrl-C stops waiting)\n")
    try:
        build.wait(lambda done, total: common.progress(done, total, f"graph {collection}"))
    except KeyboardInterrupt:
        sys.stderr.write(f"\nstopped: {build.done} of {build.total} chunks' relations are stored; the next ingest or "
                         "Graph RAG question on it continues the build\n")
        return
    if build.state == "failed":
        sys.stderr.write(f"error: the graph of {collection} was not built: {build.error}\n")
        return
    info = build.info
    print(f"graph  {collection}: {info['nodes']} entities, {info['edges']} relations from {info['chunks']} chunks "
          f"({info['status']}, {build.model})" + (f"; {len(info['errors'])} extraction call(s) failed"
                                                   if info["errors"] else ""))


def cmd_collections(settings: Settings, args) -> int:
    """List the collections as sources (with their graphs' state); draft, set or switch a description."""
    from core.knowledge import graph_builds
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
    graphs = {s.id: graph_builds.graph_state(settings, kb, s.id) for s in sources}
    if args.json:
        infos = {s.id: kb.info(s.id) for s in sources}
        rows = [{"name": s.id, "display_name": s.name, "enabled": s.enabled, "description": s.description,
                 "described": s.described, "chunks": infos[s.id]["chunks"], "embedding_model": infos[s.id]["embedding_model"],
                 "graph": graphs[s.id]}
                for s in sources]
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    for s in sources:
        info = kb.info(s.id)
        state = "on " if s.enabled else "off"
        print(f"{s.id:<24} {state} {info['chunks']:>5} chunks  {info['embedding_model']}  {s.name}")
        print(f"    {s.description if s.described else '(no description: ' + s.description + ')'}")
        print(f"    {graph_builds.state_line(graphs[s.id])}")
    return 0


def cmd_search(settings: Settings, args) -> int:
    """One collection searched as the patterns search it: dense, keyword and fused ranks of each chunk."""
    from core.knowledge.base import KnowledgeBase
    from core.knowledge.hybrid import retrieval_mode, search
    from core.knowledge.loaders import KnowledgeError

    query = " ".join(args.query).strip()
    if not query:
        print("error: the query is empty: give the words to search for", file=sys.stderr)
        return 2
    kb = KnowledgeBase(settings)
    if not kb.exists(args.collection):  # the samples are indexed on first use, like for ask
        kb = common.knowledge(settings)
    mode = retrieval_mode(args.mode or settings.retrieval)
    try:
        found = search(kb, [args.collection], query, args.k, mode, explain=True)
        if found.problems:
            raise KnowledgeError(found.problems[0][1])
    except KnowledgeError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    results = [search_row(doc) for doc in found.documents]
    if args.json:
        report = {"query": found.query, "mode": mode, "keyword_weight": found.keyword_weight, "results": results}
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    print(f"{mode} search of {args.collection}: {found.query}  (keyword tokens: {' '.join(found.query_tokens) or '-'}; "
          f"keyword list weight in the fusion {found.keyword_weight:.2f})")
    for row in results:
        ranks = "  ".join(f"{name} {_rank(row[name])}" for name in ("dense", "keyword", "fused"))
        print(f"{ranks}  {row['source']} · chunk {row['chunk']}")
        print(f"    {' '.join(row['text'].split())[:160]}")
    return 0


def search_row(doc) -> dict:
    """One result as ``search --json`` prints it: the chunk and where each retriever ranked it (null: not listed)."""
    meta = doc.metadata
    chunk = meta.get("chunk_index")
    return {"text": doc.page_content, "source": meta.get("source", "?"), "page": meta.get("page"),
            "chunk": int(chunk) + 1 if chunk is not None else None, "chunk_id": meta.get("chunk_id") or doc.id,
            **{name: meta.get(name) for name in ("dense", "keyword", "fused")},
            "matched_terms": meta.get("matched_terms", [])}


def _rank(value: dict | None) -> str:
    return f"#{value['rank']} ({value['score']:g})" if value else "-"


def register(sub) -> dict:
    """Add this group's sub-commands to ``sub``; return command -> handler."""
    p = sub.add_parser("ingest", help="index .txt/.md/.pdf files into a collection")
    p.add_argument("paths", nargs="+")
    p.add_argument("--collection", default="documents", type=common.collection_name)
    p.add_argument("--replace", action="store_true",
                   help="replace a same-named document that was indexed from another folder")
    p.add_argument("--description", help="which questions the collection answers (what the routers read)")
    p.add_argument("--name", help="display name of the collection")
    p.add_argument("--graph", action="store_true",
                   help="extract Graph RAG's entity graph now and wait for it (default: its first question starts it)")
    p.add_argument("--no-graph", action="store_true", help=argparse.SUPPRESS)  # the default since the graph waits
    p = sub.add_parser("collections", help="list the collections (sources) and their descriptions; describe one")
    p.add_argument("--suggest", metavar="NAME", help="draft a description of NAME from its first chunks")
    p.add_argument("--save", action="store_true", help="with --suggest: store the draft as the description")
    p.add_argument("--set", metavar="NAME", help="change NAME: with --description, --name and/or --enabled")
    p.add_argument("--description")
    p.add_argument("--name", help="display name")
    p.add_argument("--enabled", choices=("on", "off"), help="offer the collection to the patterns, or not")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("search", help="search one collection: dense, keyword and fused ranks of each chunk")
    p.add_argument("query", nargs="+")
    p.add_argument("--collection", required=True, type=common.collection_name)
    p.add_argument("--mode", choices=("dense", "keyword", "hybrid"), help="the order shown (default: RAG_RETRIEVAL)")
    p.add_argument("--k", type=common.positive, default=5)
    p.add_argument("--json", action="store_true")
    return {"ingest": cmd_ingest, "collections": cmd_collections, "search": cmd_search}
