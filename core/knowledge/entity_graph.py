"""Entity–relation graphs for Graph RAG: storage next to the collection, linking, expansion.

One graph per collection, extracted by ``core.knowledge.graph_extraction`` into a networkx
MultiDiGraph and stored as plain JSON under ``<data>/graphs/<collection>.json``, keyed by the digest
of the chunks it came from AND the name of the model that read them: a graph from other chunks (the
collection changed) or from another model is never used; it is rebuilt. A build stores its graph as
it goes (``complete: false`` with the chunks done), so a question can answer from what is built and
an interrupted build resumes where it stopped. Every edge remembers its chunk, so answers name sources.

The sample collections ship with graphs built by the default embedded model (``core/samples/graphs``,
``scripts/build_sample_graphs.py``): when no usable graph is stored, a shipped one with the same
digest and model is copied in and nothing is extracted.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Annotated

import networkx as nx
from langchain_core.documents import Document
from pydantic import BaseModel, Field

from core.config import Settings
from core.knowledge import korean_tokens
from core.knowledge.graph_extraction import (
    NAME_CHARS,
    ChunkQueue,
    add_relations,
    clean_name,
    cut,
    extract_into,
    first,
    list_facts,
    meaningful,
    model_label,
    name_key,
)

FORMAT_VERSION = 2  # 2: several chunks per call, keyed by chunk digest and model
GRAPH_MAX_CHUNKS = 40  # per collection: the extraction cost of one build stays bounded
SHIPPED_GRAPHS = Path(__file__).resolve().parent.parent / "samples" / "graphs"

__all__ = ["add_relations", "clean_name", "model_label", "name_key"]  # the names callers take from here


QUESTION_ENTITIES = 5  # names a question's entity list holds (the prompt says so, the schema bounds it)


class QuestionEntities(BaseModel):
    entities: Annotated[list[Annotated[str, Field(max_length=NAME_CHARS), cut(NAME_CHARS)]],
                        Field(max_length=QUESTION_ENTITIES), first(QUESTION_ENTITIES)]


# ---------------------------------------------------------------- keys and records


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


def usable(record: dict | None, digest: str, model: str) -> bool:
    """Whether a stored graph may be used: same format, same chunks, same model (never a stale or foreign one)."""
    return bool(record) and record.get("version") == FORMAT_VERSION and record.get("digest") == digest \
        and record.get("model") == model


def _failed_entirely(record: dict) -> bool:
    """A finished build in which every chunk failed extraction is retried rather than kept."""
    chunks = record.get("chunks") or 0
    return bool(record.get("complete")) and chunks > 0 and len(record.get("failed") or []) >= chunks


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
    """Store a graph whole (a reader never sees half), 0600 in the data directory's 0700 ``graphs/``."""
    from core.store.files import private_folder, write_private

    private_folder(path.parent.parent, path.parent.name)
    write_private(path, json.dumps(record, ensure_ascii=False))


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


_cache: dict[str, tuple[str, str, nx.MultiDiGraph, dict]] = {}  # path -> (digest, model, graph, summary): complete only


def _remember(path: Path, digest: str, model: str, graph: nx.MultiDiGraph, record: dict) -> None:
    """Keep a complete graph in memory with what its info needs (a build that failed entirely is not kept)."""
    if record.get("complete") and not _failed_entirely(record):
        summary = {key: record.get(key) for key in ("complete", "chunks", "errors", "failed")}
        _cache[str(path)] = (digest, model, graph, summary)
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(str(path), threading.Lock())


# ---------------------------------------------------------------- reading without building


def _lookup(settings: Settings, collection: str, digest: str, model: str, docs: list[Document] | None = None
            ) -> tuple[nx.MultiDiGraph | None, dict, str]:
    """The usable graph for these chunks and this model: (graph or None, its record, status).

    status: cached | loaded | shipped (complete) | partial (a build under way or interrupted) | missing.
    ``docs`` (the graph's chunks) let a graph stored before list facts were read get them (``_with_list_facts``).
    """
    path = graph_path(settings, collection)
    cached = _cache.get(str(path))
    if cached and cached[:2] == (digest, model):
        return cached[2], cached[3], "cached"
    stored = _read(path)
    if usable(stored, digest, model):
        graph = import_graph(stored)
        stored = _with_list_facts(path, graph, stored, docs, collection)
        _remember(path, digest, model, graph, stored)
        return graph, stored, "loaded" if stored.get("complete") else "partial"
    shipped = _read(SHIPPED_GRAPHS / f"{collection}.json")
    if usable(shipped, digest, model) and shipped.get("complete") and not _failed_entirely(shipped):
        graph = import_graph(shipped)
        shipped = _with_list_facts(path, graph, shipped, docs, collection)
        _write(path, shipped)  # a fresh data directory: the sample's graph as shipped, nothing extracted
        _remember(path, digest, model, graph, shipped)
        return graph, shipped, "shipped"
    return None, {}, "missing"


def _with_list_facts(path: Path, graph: nx.MultiDiGraph, record: dict, docs: list[Document] | None,
                     collection: str) -> dict:
    """A graph stored before builds read list facts (``list_facts``) gets those of the chunks it has read.

    Read without the model, so no graph is extracted again for them (the digest, and so every stored and
    shipped graph, stays valid). Stored at once: a build resuming a partial graph stores a superset of it.
    """
    if record.get("list_facts") or docs is None:
        return record
    done = None if record.get("complete") else set(record.get("done") or [])
    for doc in docs:
        if done is None or doc.id in done:
            listed = list_facts(doc)
            fields = {name_key(t.r) for t in listed}  # the model's copies of listed fields go (with_list_facts)
            graph.remove_edges_from([(u, v, k) for u, v, k, d in graph.edges(keys=True, data=True)
                                     if d.get("chunk_id") == doc.id and name_key(d.get("relation", "")) in fields])
            add_relations(graph, doc, listed, collection)
    graph.remove_nodes_from([n for n in list(graph.nodes) if graph.degree(n) == 0])
    record = {**record, "list_facts": True, **export_graph(graph)}
    _write(path, record)
    return record


def _info(collection: str, digest: str, docs: list, model: str, record: dict, status: str) -> dict:
    done = len(docs) if record.get("complete") else len(record.get("done") or [])
    return {"collection": collection, "digest": digest, "chunks": len(docs), "model": model, "status": status,
            "ready": bool(record.get("complete")), "failed": _failed_entirely(record), "done": done,
            "errors": list(record.get("errors") or [])}


def current_graph(settings: Settings, kb, collection: str, model: str,
                  max_chunks: int = GRAPH_MAX_CHUNKS) -> tuple[nx.MultiDiGraph, dict]:
    """The graph as far as it is built, never extracting: what a question that does not wait reads.

    Info: collection, digest, chunks, model, status (see ``_lookup``), ready, failed (every chunk failed: a
    build retries it), done, errors, nodes, edges.
    """
    docs, digest = collection_chunks(kb, collection, max_chunks)
    graph, record, status = _lookup(settings, collection, digest, model, docs)
    info = _info(collection, digest, docs, model, record, status)
    graph = graph if graph is not None else nx.MultiDiGraph()
    info.update(nodes=graph.number_of_nodes(), edges=graph.number_of_edges())
    return graph, info


# ---------------------------------------------------------------- building


def ensure_graph(settings: Settings, kb, model, collection: str, max_chunks: int = GRAPH_MAX_CHUNKS,
                 model_name: str = "", progress=None, queue: ChunkQueue | None = None) -> tuple[nx.MultiDiGraph, dict]:
    """The collection's complete graph: stored (or shipped) when usable, else extracted, resuming a partial
    build; stored after every batch. ``progress(done, total)`` follows the extraction; ``queue`` is the order
    it reads chunks in (a question may move its own to the front: ``graph_builds.GraphBuild.read_first``).

    Info as ``current_graph``'s plus ms; status built when anything was extracted.
    """
    model_name = model_name or model_label(model)
    path = graph_path(settings, collection)
    with _lock(path):  # two callers asking at once build it once
        started = time.perf_counter()
        docs, digest = collection_chunks(kb, collection, max_chunks)
        graph, record, status = _lookup(settings, collection, digest, model_name, docs)
        if _failed_entirely(record):  # every chunk failed last time: start again
            graph, record = None, {}
        if not record.get("complete"):
            graph, record = _extract(settings, model, docs, collection, digest, model_name, max_chunks,
                                     graph, record, progress, queue)
            _remember(path, digest, model_name, graph, record)
            status = "built"
        info = _info(collection, digest, docs, model_name, record, status)
        info.update(nodes=graph.number_of_nodes(), edges=graph.number_of_edges(),
                    ms=int((time.perf_counter() - started) * 1000))
        return graph, info


def _extract(settings: Settings, model, docs: list[Document], collection: str, digest: str, model_name: str,
             max_chunks: int, graph, record: dict, progress, queue: ChunkQueue | None = None
             ) -> tuple[nx.MultiDiGraph, dict]:
    """Extract the chunks a partial record has not done yet, storing the graph after every batch."""
    done = [i for i in record.get("done") or [] if i in {d.id for d in docs}] if graph is not None else []
    graph = graph if graph is not None else nx.MultiDiGraph()
    failed = list(record.get("failed") or []) if done else []
    earlier_errors = list(record.get("errors") or []) if done else []
    todo = [d for d in docs if d.id not in set(done)]
    path = graph_path(settings, collection)

    def store(complete: bool, errors: list[str]) -> dict:
        stored = {"version": FORMAT_VERSION, "collection": collection, "digest": digest, "model": model_name,
                  "chunks": len(docs), "max_chunks": max_chunks, "complete": complete, "list_facts": True,
                  "done": list(done),
                  "failed": failed, "errors": earlier_errors + errors, "built_at": int(time.time()),
                  **export_graph(graph)}
        _write(path, stored)
        return stored

    def on_batch(batch: list[Document], error: str) -> None:
        done.extend(d.id for d in batch)
        if error:
            failed.extend(d.id for d in batch)
            new_errors.append(error)
        store(False, new_errors)
        if progress:
            progress(len(done), len(docs))

    new_errors: list[str] = []
    if progress:  # the total is known before the first call returns (minutes on a small local model)
        progress(len(done), len(docs))
    errors = extract_into(graph, model, todo, collection, settings.max_concurrency, on_batch, queue)
    return graph, store(True, errors)


def graph_with_digest(settings: Settings, collection: str, digest: str, model: str) -> nx.MultiDiGraph | None:
    """The collection's graph (complete or as far as built) if it was read from chunks with this digest by
    this model. Nodes after the first of a run use it: the chunks were fetched and hashed once already.
    """
    graph, _, _ = _lookup(settings, collection, digest, model)
    return graph


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
    return {key: record.get(key) for key in ("collection", "digest", "chunks", "max_chunks", "model", "built_at",
                                              "errors", "complete", "done", "nodes", "edges")}


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

    Each match: {"node", "name", "mention", "how"} with how = in_question | head | exact | contains | similar.
    """
    q_key = name_key(question)
    found: dict[str, dict] = {}
    for key, data in graph.nodes(data=True):
        if meaningful(key) and key in q_key:
            found[key] = {"node": key, "name": data.get("name", key), "mention": data.get("name", key), "how": "in_question"}
    named = {name_key(part) for m in found.values() if len(m["name"].split()) > 1 for part in m["name"].split()}
    for word, keys in _heads(graph, question).items():
        if word in named:  # "시그니처 스테이크" asked for by name: its head is no other steak's
            continue
        for key in keys:
            found.setdefault(key, {"node": key, "name": graph.nodes[key].get("name", key), "mention": word, "how": "head"})
    # a name inside a longer matched name ("스테이크" in "시그니처 스테이크") adds nothing but noise
    for key in list(found):
        if any(key != other and key in other for other in found):
            del found[key]
    keys = list(graph.nodes)
    for mention in mentions:
        m_key = name_key(mention)
        if not meaningful(m_key):
            continue
        if m_key in graph:
            match, how = m_key, "exact"
        else:
            containing = [k for k in keys if meaningful(k) and (m_key in k or k in m_key)]
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


HEADS_PER_WORD = 3  # nodes one question word may link by their last word (the best connected first)


def _heads(graph: nx.MultiDiGraph, question: str) -> dict[str, list[str]]:
    """Nodes named by several words whose last word is a word of the question: "스테이크와 어울리는 와인" is about
    "시그니처 스테이크" and "그릴드 연어 스테이크" (a Korean head noun comes last). Question word -> node keys."""
    words = {w for w in korean_tokens.tokens(question) if meaningful(name_key(w))}
    heads: dict[str, list[str]] = {}
    for key, data in graph.nodes(data=True):
        parts = str(data.get("name", "")).split()
        if len(parts) > 1 and (last := name_key(parts[-1]).casefold()) in words:
            heads.setdefault(last, []).append(key)
    return {word: sorted(keys, key=lambda k: -graph.degree(k))[:HEADS_PER_WORD] for word, keys in heads.items()}


def neighbourhood(graph: nx.MultiDiGraph, seeds: list[str], hops: int = 2, limit: int = 30,
                  question: str = "") -> list[dict]:
    """Relations among the nodes within ``hops`` of the seeds (either direction): first the seeds' relations
    sharing words with ``question`` (what it asks of them), then the relations of what those lead to (the
    answers' own facts), then the rest; nearest first within each."""
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
                          "_at": _position(data),
                          "target": graph.nodes[v].get("name", v), "hops": min(distance[u], distance[v]),
                          "label": data.get("label", ""), "chunk_id": data.get("chunk_id", ""),
                          "doc": {"source": data.get("doc_source"), "title": data.get("title"), "page": data.get("page"),
                                  "collection": data.get("collection")}})
        # the words of the relation and of its ends other than a seed: "어울리는 음식" answers "어울리는 와인"
        relations[-1]["_words"] = (data.get("relation", ""), " ".join(graph.nodes[n].get("name", n)
                                                                     for n in (u, v) if n not in seeds))
    asked = set(korean_tokens.tokens(question)) if question else set()
    for rel in relations:
        relation, names = rel.pop("_words")
        # a word of the relation says more of what is asked than a word of a name ("레드와인 소스")
        rel["overlap"] = (2 * len(asked & set(korean_tokens.tokens(relation)))
                          + len(asked & set(korean_tokens.tokens(names)))) if asked else 0
    seed_set = set(seeds)
    asked_of = [r for r in relations if r["overlap"] and r["hops"] == 0]  # what the question asks of the seeds
    answers = {name_key(r[end]) for r in asked_of for end in ("source", "target")} - seed_set

    def rank(rel: dict) -> tuple:
        ends = {name_key(rel["source"]), name_key(rel["target"])}
        tier = 0 if rel["overlap"] and rel["hops"] == 0 else 1 if ends & answers else 2
        return tier, rel["hops"], -rel["overlap"], rel["_at"]

    relations.sort(key=rank)
    for rel in relations:
        del rel["_at"]
    return relations[:limit]


def asked_entities(relations: list[dict], seeds: list[str], question: str, most: int = 6) -> list[str]:
    """What the question asks for about its linked entities, when those are things the graph knows: the far end of
    a seed's relation whose own words are words of the question, if that end has facts of its own among the
    relations. "스테이크와 어울리는 와인" gives the wines whose "어울리는 음식" is a steak; "스테이크의 가격" gives
    nothing (a price has no relations of its own), nor does a name that merely shares a word ("라 포레스타 메뉴")."""
    asked = set(korean_tokens.tokens(question))
    seed_keys = {name_key(s) for s in seeds}
    degree: dict[str, int] = {}
    for rel in relations:
        for end in ("source", "target"):
            degree[name_key(rel[end])] = degree.get(name_key(rel[end]), 0) + 1
    found: list[str] = []
    for rel in relations:
        if rel.get("hops") != 0 or not asked & set(korean_tokens.tokens(rel["relation"])):
            continue
        for end in ("source", "target"):
            name, key = rel[end], name_key(rel[end])
            if key not in seed_keys and degree[key] > 1 and name not in found:
                found.append(name)
    return found[:most]


def _position(edge: dict) -> tuple:
    """Where an edge's fact stands in the documents: its file, chunk and place in the chunk. Ties in the ranking
    keep that order, not the order a concurrent build happened to finish its chunks in (which decided what the
    relation limit cut). Edges stored before positions were kept sort by file alone, in their stored order."""
    index, order = edge.get("chunk_index"), edge.get("order")
    return (str(edge.get("doc_source") or ""), index if isinstance(index, int) else -1,
            order if isinstance(order, int) else -1)


def relation_line(rel: dict) -> str:
    return f"{rel['source']} --[{rel['relation']}]--> {rel['target']} ({rel['label']})"


PASSAGE_CHARS = 800  # of a source chunk shown with its relations: about one section of a menu or a list


def passage_chunks(relations: list[dict]) -> list[tuple[str, str]]:
    """(collection, chunk id) of every chunk the relations came from, in the relations' order."""
    chunks: list[tuple[str, str]] = []
    for rel in relations:
        key = (rel["doc"].get("collection") or "", rel["chunk_id"])
        if rel["chunk_id"] and key not in chunks:
            chunks.append(key)
    return chunks


def best_passages(texts: dict[str, str], question: str, most: int) -> dict[str, str]:
    """The ``most`` chunks (id -> text, in the relations' order) sharing the most words with the question:
    the passages an answer reads beside the relations. A relation a small model extracted from prose is
    often vague ("일본 --[전략]--> AI"); the passage it came from says the figure the question asks for."""
    asked = set(korean_tokens.tokens(question))
    order = {chunk: i for i, chunk in enumerate(texts)}
    scored = sorted(texts, key=lambda c: (-len(asked & set(korean_tokens.tokens(texts[c]))), order[c]))
    return {chunk: texts[chunk] for chunk in scored[:most]}


def relation_documents(relations: list[dict], passages: dict[str, str] | None = None) -> list[Document]:
    """The relations grouped by the chunk they came from, as citable Documents; a chunk in ``passages``
    (chunk id -> text) has its text after its relations."""
    by_chunk: dict[str, list[dict]] = {}
    for rel in relations:
        by_chunk.setdefault(rel["chunk_id"] or rel["label"], []).append(rel)
    docs = []
    for chunk_id, rels in by_chunk.items():
        meta = {**rels[0]["doc"], "chunk_id": chunk_id}
        text = "\n".join(relation_line(r) for r in rels)
        if passages and chunk_id in passages:
            text += "\n\n" + passages[chunk_id][:PASSAGE_CHARS]
        docs.append(Document(page_content=text, metadata={k: v for k, v in meta.items() if v is not None}))
    docs.sort(key=lambda d: d.metadata["chunk_id"] not in (passages or {}))  # stable: the passages first
    return docs
