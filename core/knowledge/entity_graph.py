"""Entity–relation graphs for Graph RAG: extraction, storage next to the collection, linking, expansion.

One graph per collection, built by structured-output extraction over its chunks into a networkx
MultiDiGraph, stored as plain JSON under ``<data>/graphs/<collection>.json`` together with a digest
of the chunks it came from. It is rebuilt only when that digest changes (chunks added, removed or
edited). Every edge remembers the chunk it was read from, so answers can name their sources.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Annotated

import networkx as nx
from langchain_core.documents import Document
from pydantic import BaseModel, BeforeValidator, Field

from core.config import Settings
from core.llm import graders
from core.prompts import agents as P
from core.prompts import fence

FORMAT_VERSION = 1
GRAPH_MAX_CHUNKS = 40  # per collection: the extraction cost of one build stays bounded
MAX_RELATIONS_PER_CHUNK = 5
NAME_CHARS, RELATION_CHARS = 30, 20  # short fields also keep constrained decoding fast on small models


def _cut(limit: int) -> BeforeValidator:
    """Trim instead of failing: the limit is a hint for constrained decoders, not a reason to drop a chunk."""
    return BeforeValidator(lambda v: " ".join(str(v).split())[:limit] if v is not None else "")


def _first(limit: int) -> BeforeValidator:
    return BeforeValidator(lambda v: list(v)[:limit] if isinstance(v, (list, tuple)) else v)


class Relation(BaseModel):
    source: Annotated[str, Field(max_length=NAME_CHARS), _cut(NAME_CHARS)]
    relation: Annotated[str, Field(max_length=RELATION_CHARS), _cut(RELATION_CHARS)]
    target: Annotated[str, Field(max_length=NAME_CHARS), _cut(NAME_CHARS)]


class Extraction(BaseModel):
    """The facts of one chunk, as (source, relation, target) triples."""

    relations: Annotated[list[Relation], Field(max_length=MAX_RELATIONS_PER_CHUNK), _first(MAX_RELATIONS_PER_CHUNK)]


class QuestionEntities(BaseModel):
    entities: Annotated[list[Annotated[str, Field(max_length=NAME_CHARS), _cut(NAME_CHARS)]],
                        Field(max_length=5), _first(5)]


# ---------------------------------------------------------------- names


def clean_name(text: str) -> str:
    return " ".join(str(text or "").split()).strip(" \"'`.,;:()[]{}")


def name_key(text: str) -> str:
    """What two names must share to be the same node: case and spacing ignored."""
    return "".join(clean_name(text).casefold().split())


def _meaningful(key: str) -> bool:
    return len(key) >= 2 and not key.replace(".", "").replace(",", "").isdigit()


# ---------------------------------------------------------------- building and storing


def graph_path(settings: Settings, collection: str) -> Path:
    return settings.data_path / "graphs" / f"{collection}.json"


def collection_chunks(kb, collection: str, max_chunks: int) -> tuple[list[Document], str]:
    """The chunks a graph is built from (first ``max_chunks`` in document order) and their digest."""
    chunks = kb.chunks(collection, limit=100_000)
    chunks.sort(key=lambda d: (d.metadata.get("source", ""), d.metadata.get("page", 0), d.metadata.get("chunk_index", 0)))
    used = chunks[:max_chunks]
    digest = hashlib.sha1()
    for doc in used:
        digest.update(f"{doc.id}:{hashlib.sha1(doc.page_content.encode()).hexdigest()}\n".encode())
    digest.update(f"cap={max_chunks};v={FORMAT_VERSION}".encode())
    return used, digest.hexdigest()[:16]


def _label(meta: dict) -> str:
    source = meta.get("source", "?")
    return f"{source} p.{meta.get('page', 1)}" if source.lower().endswith(".pdf") else source


def add_relations(graph: nx.MultiDiGraph, doc: Document, relations: list[Relation], collection: str) -> int:
    """Add one chunk's triples; nodes merge by name key. Returns the number of edges added."""
    meta = doc.metadata
    added = 0
    for rel in relations:
        source, target, relation = clean_name(rel.source), clean_name(rel.target), clean_name(rel.relation)
        s_key, t_key = name_key(source), name_key(target)
        if not (_meaningful(s_key) and _meaningful(t_key)) or s_key == t_key:
            continue
        for key, name in ((s_key, source), (t_key, target)):
            if key not in graph:
                graph.add_node(key, name=name, collections=[collection])
            elif collection not in graph.nodes[key]["collections"]:
                graph.nodes[key]["collections"].append(collection)
        graph.add_edge(s_key, t_key, relation=relation or "related to", chunk_id=meta.get("chunk_id", ""),
                       label=_label(meta), doc_source=meta.get("source", "?"), title=meta.get("title", ""),
                       page=meta.get("page"), collection=collection)
        added += 1
    return added


def build_graph(model, docs: list[Document], collection: str, max_concurrency: int = 4,
                progress=None) -> tuple[nx.MultiDiGraph, list[str]]:
    """Extract triples from every chunk (structured output, one retry) into a graph; errors are listed.

    ``progress(done, total)`` is called as each chunk's extraction ends.
    """
    humans = [fence(d.page_content) for d in docs]
    outcomes = graders.ask_many(model, Extraction, P.GRAPH_EXTRACT_SYSTEM, humans, Extraction(relations=[]),
                                max_concurrency, progress)
    graph = nx.MultiDiGraph()
    errors = []
    for doc, outcome in zip(docs, outcomes):
        if outcome.fallback:
            errors.append(f"{doc.metadata.get('chunk_id', '?')}: {outcome.error[:120]}")
        add_relations(graph, doc, outcome.value.relations, collection)
    return graph, errors


def export_graph(graph: nx.MultiDiGraph) -> dict:
    """Node and edge lists as plain dicts (for display, download and storage)."""
    nodes = [{"id": key, "name": data.get("name", key), "collections": list(data.get("collections", [])),
              "degree": graph.degree(key)} for key, data in graph.nodes(data=True)]
    edges = [{"source": u, "target": v, "source_name": graph.nodes[u].get("name", u),
              "target_name": graph.nodes[v].get("name", v), **data} for u, v, data in graph.edges(data=True)]
    return {"nodes": nodes, "edges": edges}


def import_graph(data: dict) -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    for node in data.get("nodes", []):
        graph.add_node(node["id"], name=node.get("name", node["id"]), collections=list(node.get("collections", [])))
    for edge in data.get("edges", []):
        attrs = {k: v for k, v in edge.items() if k not in ("source", "target", "source_name", "target_name")}
        graph.add_edge(edge["source"], edge["target"], **attrs)
    return graph


def _write(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)  # atomic: a reader never sees half a graph


_cache: dict[str, tuple[str, nx.MultiDiGraph]] = {}  # path -> (digest, graph)
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(str(path), threading.Lock())


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def ensure_graph(settings: Settings, kb, model, collection: str, max_chunks: int = GRAPH_MAX_CHUNKS,
                 model_name: str = "", progress=None) -> tuple[nx.MultiDiGraph, dict]:
    """The collection's graph: from memory or disk when its chunks are unchanged, else built and stored
    (``progress(done, total)`` follows the extraction).

    Returns the graph and an info dict: collection, status (cached | loaded | built), digest,
    chunks, nodes, edges, ms, errors.
    """
    path = graph_path(settings, collection)
    with _lock(path):  # two sessions asking at once build it once
        started = time.perf_counter()
        docs, digest = collection_chunks(kb, collection, max_chunks)
        info = {"collection": collection, "digest": digest, "chunks": len(docs), "errors": []}
        cached = _cache.get(str(path))
        if cached and cached[0] == digest:
            graph, info["status"] = cached[1], "cached"
        elif (stored := _read(path)) and stored.get("digest") == digest and stored.get("version") == FORMAT_VERSION \
                and not (docs and len(stored.get("errors") or []) >= len(docs)):  # a build that failed entirely is retried
            graph, info["status"] = import_graph(stored), "loaded"
            info["model"] = stored.get("model", "")
        else:
            graph, errors = build_graph(model, docs, collection, settings.max_concurrency, progress)
            info.update(status="built", errors=errors, model=model_name)
            _write(path, {"version": FORMAT_VERSION, "collection": collection, "digest": digest, "chunks": len(docs),
                          "max_chunks": max_chunks, "model": model_name, "built_at": int(time.time()),
                          "errors": errors, **export_graph(graph)})
        _cache[str(path)] = (digest, graph)
        info.update(nodes=graph.number_of_nodes(), edges=graph.number_of_edges(),
                    ms=int((time.perf_counter() - started) * 1000))
        return graph, info


def graph_with_digest(settings: Settings, collection: str, digest: str) -> nx.MultiDiGraph | None:
    """The collection's graph if the one in memory (or on disk) was built from chunks with this digest.

    Nodes after the first of a run use it: ``ensure_graph`` already fetched and hashed the chunks once.
    """
    path = graph_path(settings, collection)
    with _lock(path):
        cached = _cache.get(str(path))
        if cached and cached[0] == digest:
            return cached[1]
        stored = _read(path)
        if stored and stored.get("digest") == digest and stored.get("version") == FORMAT_VERSION:
            graph = import_graph(stored)
            _cache[str(path)] = (digest, graph)
            return graph
        return None


def drop_graph(settings: Settings, collection: str) -> None:
    """Forget a collection's graph, on disk and in memory: the next use extracts it again."""
    path = graph_path(settings, collection)
    with _lock(path):
        path.unlink(missing_ok=True)
        _cache.pop(str(path), None)


def stored_graph(settings: Settings, collection: str) -> dict | None:
    """The stored graph of a collection as node/edge lists plus its build info, without building."""
    record = _read(graph_path(settings, collection))
    if not record:
        return None
    return {key: record.get(key) for key in ("collection", "digest", "chunks", "model", "built_at", "errors",
                                              "nodes", "edges")}


# ---------------------------------------------------------------- answering


def merge_graphs(graphs: list[nx.MultiDiGraph]) -> nx.MultiDiGraph:
    merged = nx.MultiDiGraph()
    for graph in graphs:
        for key, data in graph.nodes(data=True):
            if key in merged:
                cols = merged.nodes[key]["collections"]
                cols.extend(c for c in data.get("collections", []) if c not in cols)
            else:
                merged.add_node(key, **{**data, "collections": list(data.get("collections", []))})
        merged.add_edges_from(graph.edges(data=True))
    return merged


def link_entities(graph: nx.MultiDiGraph, question: str, mentions: list[str], limit: int = 6) -> list[dict]:
    """Graph nodes the question is about: names found in the question, then mentions matched by name.

    Each match: {"node", "name", "mention", "how"} with how = in_question | exact | contains | similar.
    """
    q_key = name_key(question)
    found: dict[str, dict] = {}
    for key, data in graph.nodes(data=True):
        if _meaningful(key) and key in q_key:
            found[key] = {"node": key, "name": data.get("name", key), "mention": data.get("name", key), "how": "in_question"}
    # a name inside a longer matched name ("스테이크" in "시그니처 스테이크") adds nothing but noise
    for key in list(found):
        if any(key != other and key in other for other in found):
            del found[key]
    keys = list(graph.nodes)
    for mention in mentions:
        m_key = name_key(mention)
        if not _meaningful(m_key):
            continue
        if m_key in graph:
            match, how = m_key, "exact"
        else:
            containing = [k for k in keys if _meaningful(k) and (m_key in k or k in m_key)]
            if containing:
                overlap = lambda k: (min(len(k), len(m_key)) / max(len(k), len(m_key)), -len(k))  # noqa: B023
                match, how = max(containing, key=overlap), "contains"
            else:
                close = difflib.get_close_matches(m_key, keys, n=1, cutoff=0.8)
                if not close:
                    continue
                match, how = close[0], "similar"
        found.setdefault(match, {"node": match, "name": graph.nodes[match].get("name", match), "mention": clean_name(mention),
                                 "how": how})
    ranked = sorted(found.values(), key=lambda m: (m["how"] != "in_question", -len(m["node"])))
    return ranked[:limit]


def neighbourhood(graph: nx.MultiDiGraph, seeds: list[str], hops: int = 2, limit: int = 30) -> list[dict]:
    """Relations among the nodes within ``hops`` of the seeds (either direction), nearest first."""
    undirected = graph.to_undirected(as_view=True)
    distance: dict[str, int] = {}
    for seed in seeds:
        if seed not in graph:
            continue
        for node, d in nx.single_source_shortest_path_length(undirected, seed, cutoff=hops).items():
            distance[node] = min(d, distance.get(node, d))
    relations, seen = [], set()
    for u, v, data in graph.edges(data=True):
        if u not in distance or v not in distance:
            continue
        key = (u, data.get("relation"), v)
        if key in seen:
            continue
        seen.add(key)
        relations.append({"source": graph.nodes[u].get("name", u), "relation": data.get("relation", ""),
                          "target": graph.nodes[v].get("name", v), "hops": min(distance[u], distance[v]),
                          "label": data.get("label", ""), "chunk_id": data.get("chunk_id", ""),
                          "doc": {"source": data.get("doc_source"), "title": data.get("title"), "page": data.get("page"),
                                  "collection": data.get("collection")}})
    relations.sort(key=lambda r: r["hops"])
    return relations[:limit]


def relation_line(rel: dict) -> str:
    return f"{rel['source']} --[{rel['relation']}]--> {rel['target']} ({rel['label']})"


def relation_documents(relations: list[dict]) -> list[Document]:
    """The relations grouped by the chunk they came from, as citable Documents."""
    by_chunk: dict[str, list[dict]] = {}
    for rel in relations:
        by_chunk.setdefault(rel["chunk_id"] or rel["label"], []).append(rel)
    docs = []
    for chunk_id, rels in by_chunk.items():
        meta = {**rels[0]["doc"], "chunk_id": chunk_id}
        docs.append(Document(page_content="\n".join(relation_line(r) for r in rels),
                             metadata={k: v for k, v in meta.items() if v is not None}))
    return docs
