"""Retrieval over collections: dense (embeddings), keyword (BM25 over Kiwi tokens), or both fused by RRF.

Every pattern and agent tool searches through ``search``. Each returned chunk carries in its metadata
where each retriever put it: ``dense`` and ``keyword`` ({"rank", "score"}: cosine similarity, BM25
score, the collections searched together scored as one corpus) and ``fused`` ({"rank", "score"}:
reciprocal rank fusion, the keyword list weighted by the share of the query's tokens it matched), ranks
counted from 1 over all the collections searched together, absent where
that retriever did not list the chunk; ``score`` is the score of the mode's own order, ``matched_terms``
the query's keyword tokens found in the chunk.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from langchain_core.documents import Document

from core.knowledge import keyword_index, korean_tokens
from core.knowledge.loaders import KnowledgeError

MODES = ("hybrid", "dense", "keyword")
DEFAULT_MODE = "hybrid"  # measured: top-3 at least dense's on every set, better on identifiers (docs/BENCHMARKS.md)
RRF_K = 20  # measured (benchmarks/retrieval_modes.py): Cormack's 60 squeezes dense ranks 2..20 into 0.004 of score,
# so a keyword-only nudge reordered them; 20 keeps one list's order stronger. Both sets: k 10..30 gave the same hits
_KEYWORD_SEARCH = ThreadPoolExecutor(max_workers=4, thread_name_prefix="keyword-search")  # see _lists
CANDIDATES = 20  # each retriever lists this many (at least k) before fusion: a chunk 2nd in one list and
# 15th in the other must still be seen by both


def retrieval_mode(value: str | None) -> str:
    """The mode a setting names; anything unknown is the default."""
    value = str(value or "").strip().lower()
    return value if value in MODES else DEFAULT_MODE


def rrf(lists: list[list[str]], k: int = RRF_K, weights: list[float] | None = None) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: key -> sum of weight/(k + rank) over the lists (weight 1 unless given), best first.

    Ties keep the order in which keys were first seen (the first list first): the result is deterministic.
    """
    scores: dict[str, float] = {}
    for ranked, weight in zip(lists, weights or [1.0] * len(lists)):
        for rank, key in enumerate(ranked, 1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def keyword_weight(query_tokens: list[str], keyword_docs: list[Document]) -> float:
    """How much the keyword list counts in the fusion: the share of the query's distinct tokens found in any
    chunk it lists. An English question over Korean chunks matches a stray word or two (a dish's English
    name): that list says little about the question, and at full weight it pushed the answer out of the top 3."""
    wanted = set(query_tokens)
    if not wanted:
        return 0.0
    found = {term for doc in keyword_docs for term in doc.metadata.get("matched_terms", [])}
    return round(len(wanted & found) / len(wanted), 4)


@dataclass
class Retrieval:
    """What one search found: the documents in the mode's order, and every list they came from."""

    query: str
    mode: str
    documents: list[Document]
    dense: list[Document] = field(default_factory=list)
    keyword: list[Document] = field(default_factory=list)
    fused: list[Document] = field(default_factory=list)
    query_tokens: list[str] = field(default_factory=list)
    keyword_weight: float = 1.0  # the keyword list's weight in the fusion (``keyword_weight``)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (collection, why it could not be searched)


def _key(doc: Document) -> str:
    return f"{doc.metadata.get('collection', '')}\x00{doc.id}"


def keyword_documents(kb, indexes: list, query_tokens: list[str], k: int) -> list[Document]:
    """The top-k chunks of these collections' keyword indexes, scored as one corpus (BM25 scores of separate
    indexes are not comparable), with ``collection``, ``keyword_score`` and ``matched_terms`` in metadata."""
    hits = keyword_index.search_collections(indexes, query_tokens, k)
    wanted: dict[str, list[str]] = {}
    for name, hit in hits:
        wanted.setdefault(name, []).append(hit.id)
    found: dict[str, dict[str, Document]] = {}
    for name, ids in wanted.items():
        try:
            found[name] = kb.documents(name, ids)
        except KnowledgeError:  # gone since its index was read: its chunks are no answer any more
            found[name] = {}
    return [found[name][hit.id].model_copy(update={"metadata": {
        **found[name][hit.id].metadata, "keyword_score": hit.score, "matched_terms": hit.matched}})
        for name, hit in hits if hit.id in found[name]]


def _keyword_list(kb, collections: list[str], tokens: list[str], depth: int):
    """The keyword list of every collection's chunks scored together, and the collections that failed."""
    indexes, problems = [], []
    for name in collections:
        try:
            indexes.append(keyword_index.ensure_index(kb, name))
        except KnowledgeError as exc:
            problems.append((name, str(exc)))
    return keyword_documents(kb, indexes, tokens, depth), problems


def _lists(kb, collections: list[str], query: str, depth: int, dense: bool, keyword: bool, tokens: list[str]):
    """The dense list over every collection merged by cosine similarity (one embedder: comparable), and the
    keyword list of every collection's chunks scored together. Hybrid searches both at once: the keyword
    side runs on a worker thread while this one embeds the query and asks Chroma (p50 at 10,000 chunks:
    26.2 ms against 28.8 ms one after the other, benchmarks/retrieval_modes.py)."""
    pending = _KEYWORD_SEARCH.submit(_keyword_list, kb, collections, tokens, depth) if keyword and dense else None
    dense_docs, problems = [], []
    for name in collections if dense else ():
        try:
            dense_docs += kb.search(name, query, depth)
        except KnowledgeError as exc:
            problems.append((name, str(exc)))
    dense_docs.sort(key=lambda d: -float(d.metadata.get("score") or 0.0))
    keyword_docs, failed = (pending.result() if pending else _keyword_list(kb, collections, tokens, depth)) \
        if keyword else ([], [])
    problems += [p for p in failed if p[0] not in {name for name, _ in problems}]
    return dense_docs[:depth], keyword_docs, problems


def search(kb, collections: list[str], query: str, k: int, mode: str = DEFAULT_MODE, explain: bool = False) -> Retrieval:
    """Top-k chunks over ``collections`` in ``mode``; ``explain`` runs both retrievers whatever the mode
    (the retrieval view and the CLI show all three lists). A collection that fails is listed in ``problems``."""
    mode = retrieval_mode(mode)
    use_dense, use_keyword = explain or mode != "keyword", explain or mode != "dense"
    tokens = korean_tokens.tokens(query) if use_keyword else []
    dense, keyword, problems = _lists(kb, collections, query, max(k, CANDIDATES), use_dense, use_keyword, tokens)
    by_key: dict[str, dict] = {}
    for name, docs, score_of in (("dense", dense, "score"), ("keyword", keyword, "keyword_score")):
        for rank, doc in enumerate(docs, 1):
            entry = by_key.setdefault(_key(doc), {"doc": doc})
            entry[name] = {"rank": rank, "score": round(float(doc.metadata.get(score_of) or 0.0), 4)}
            if name == "keyword":
                entry["matched_terms"] = doc.metadata.get("matched_terms", [])
    weight = keyword_weight(tokens, keyword) if use_keyword else 0.0
    if use_dense and use_keyword:
        lists = [[_key(d) for d in dense], [_key(d) for d in keyword]]
        for rank, (key, score) in enumerate(rrf(lists, weights=[1.0, weight]), 1):
            by_key[key]["fused"] = {"rank": rank, "score": round(score, 6)}
    order = {"dense": dense, "keyword": keyword}.get(mode) if mode != "hybrid" else None
    ranked = [e["doc"] for e in sorted(by_key.values(), key=lambda e: e["fused"]["rank"])] if order is None else order
    marked = {key: _marked(entry, mode) for key, entry in by_key.items()}
    view = lambda docs: [marked[_key(d)] for d in docs]  # noqa: E731
    fused = [marked[key] for key in sorted((k_ for k_ in by_key if "fused" in by_key[k_]),
                                           key=lambda k_: by_key[k_]["fused"]["rank"])]
    return Retrieval(query, mode, view(ranked)[:k], view(dense)[:k], view(keyword)[:k], fused[:k], tokens, weight,
                     problems)


def _marked(entry: dict, mode: str) -> Document:
    """The chunk with every retriever's rank and score in its metadata, ``score`` the mode's own."""
    doc = entry["doc"]
    meta = {key: value for key, value in doc.metadata.items() if key not in ("keyword_score", "matched_terms")}
    for name in ("dense", "keyword", "fused"):
        meta.pop(name, None)
        if name in entry:
            meta[name] = dict(entry[name])
    own = {"dense": "dense", "keyword": "keyword", "hybrid": "fused"}[mode]
    meta["score"] = entry.get(own, {}).get("score", meta.get("score"))
    meta["retrieval"] = mode
    if entry.get("matched_terms"):
        meta["matched_terms"] = list(entry["matched_terms"])
    return doc.model_copy(update={"metadata": meta})
