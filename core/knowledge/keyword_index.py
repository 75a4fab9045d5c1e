"""The keyword (BM25) index of a collection, kept beside it under ``<data>/keyword/<collection>.json``.

The file stores each chunk's keyword tokens (core.knowledge.korean_tokens) by chunk id; the BM25
index itself (bm25s) is built in memory from them, which takes no Kiwi call. An index is keyed by the
digest of the collection's chunk ids. Chunk ids are derived from each chunk's text, source and
position (core.knowledge.loaders.split_documents), so the ids say what the collection holds: when they
change (an ingest, a deleted document, another replica's write to a shared Chroma server) the index is
updated, tokenising only the chunks it has not seen. Every search checks the digest first: never stale.

Several collections searched together are scored as one corpus (``search_collections``): BM25 scores of
separate indexes are not comparable (each has its own document frequencies and average length; a term
rare in an 8-chunk collection outweighs the same term in a 17-chunk one), so their lists cannot be merged
by score. The union index is built from the stored tokens (no Kiwi call) and kept while its parts last.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from core.knowledge import korean_tokens

FORMAT_VERSION = 1
TOKENIZER = "kiwi+plain/1"  # a change in what tokens mean makes every stored index stale
log = logging.getLogger(__name__)


@dataclass
class KeywordHit:
    id: str
    score: float
    matched: list[str]  # the query's tokens found in the chunk


@dataclass
class KeywordIndex:
    collection: str
    digest: str
    tokens: dict[str, list[str]]  # chunk id -> its keyword tokens
    ids: list[str]
    bm25: object | None  # bm25s.BM25, None for an empty collection
    fingerprint: tuple = ()  # the collection's (count, revision) when its chunks were last checked

    @classmethod
    def build(cls, collection: str, digest: str, tokens: dict[str, list[str]]) -> KeywordIndex:
        ids = sorted(tokens)
        bm25 = None
        if ids:
            import bm25s

            bm25 = bm25s.BM25()
            bm25.index([tokens[i] for i in ids], show_progress=False)
        return cls(collection, digest, tokens, ids, bm25)

    def search(self, query_tokens: list[str], k: int) -> list[KeywordHit]:
        """The ``k`` best chunks for these tokens (BM25 score > 0), best first."""
        if self.bm25 is None or not query_tokens:
            return []
        import numpy as np

        scores = self.bm25.get_scores(list(query_tokens))
        best = [int(i) for i in np.argsort(-scores, kind="stable")[:k] if scores[i] > 0]
        wanted = set(query_tokens)
        return [KeywordHit(self.ids[i], round(float(scores[i]), 4),
                           sorted(wanted.intersection(self.tokens[self.ids[i]]))) for i in best]


def index_path(data_path: Path, collection: str) -> Path:
    return Path(data_path) / "keyword" / f"{collection}.json"


def ids_digest(ids: list[str]) -> str:
    digest = hashlib.sha1(f"v={FORMAT_VERSION};t={TOKENIZER}\n".encode())
    for chunk_id in sorted(ids):
        digest.update(f"{chunk_id}\n".encode())
    return digest.hexdigest()[:16]


_cache: dict[str, KeywordIndex] = {}  # path -> the index last built or loaded in this process
_unions: dict[tuple, KeywordIndex] = {}  # ((collection, digest), ...) -> the index over their chunks together
UNIONS_KEPT = 8  # a few source selections at once (the sidebar's, Compare's); an older one is rebuilt on demand
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(str(path), threading.Lock())


def ensure_index(kb, collection: str) -> KeywordIndex:
    """The collection's index for its current chunks: from memory, from disk, or updated and stored.

    Every search asks: the collection's fingerprint (count and write revision) says cheaply whether the
    index in memory is still the collection's; only when it changed are the chunk ids read and digested.
    """
    path = index_path(kb.settings.data_path, collection)
    fingerprint = kb.chunks_fingerprint(collection)
    cached = _cache.get(str(path))
    if cached is not None and cached.fingerprint == fingerprint:
        return cached
    ids = kb.chunk_ids(collection)
    digest = ids_digest(ids)
    with _lock(path):  # two sessions asking at once update it once
        cached = _cache.get(str(path))
        if cached and cached.digest == digest:
            cached.fingerprint = fingerprint
            return cached
        record = {} if cached else _read(path)
        known = cached.tokens if cached else record.get("tokens") or {}
        missing = [i for i in ids if i not in known]
        texts = kb.chunk_texts(collection, missing) if missing else {}
        tokens = {i: known[i] if i in known else korean_tokens.tokens(texts.get(i, "")) for i in ids}
        index = KeywordIndex.build(collection, digest, tokens)
        index.fingerprint = fingerprint
        if record.get("digest") != digest:  # loaded as stored: nothing to write
            _store(path, {"version": FORMAT_VERSION, "tokenizer": TOKENIZER, "collection": collection,
                          "digest": digest, "tokens": tokens})
        _cache[str(path)] = index
        return index


def union_index(indexes: list[KeywordIndex]) -> KeywordIndex:
    """One index over the chunks of ``indexes`` together (ids ``collection\\x00chunk id``), cached by their digests."""
    key = tuple(sorted((index.collection, index.digest) for index in indexes))  # any order: the same corpus
    with _locks_guard:
        cached = _unions.get(key)
    if cached is not None:
        return cached
    tokens = {f"{index.collection}\x00{chunk_id}": chunk_tokens
              for index in indexes for chunk_id, chunk_tokens in index.tokens.items()}
    union = KeywordIndex.build("+".join(name for name, _ in key), ids_digest(sorted(tokens)), tokens)
    with _locks_guard:
        _unions[key] = union
        while len(_unions) > UNIONS_KEPT:  # dicts keep insertion order: the oldest goes first
            _unions.pop(next(iter(_unions)))
    return union


def search_collections(indexes: list[KeywordIndex], query_tokens: list[str], k: int) -> list[tuple[str, KeywordHit]]:
    """The ``k`` best chunks of several collections scored as one corpus: (collection, hit), best first."""
    if len(indexes) == 1:  # one collection: its own index is the union
        return [(indexes[0].collection, hit) for hit in indexes[0].search(query_tokens, k)]
    hits = union_index(indexes).search(query_tokens, k) if indexes else []
    return [(hit.id.split("\x00", 1)[0], KeywordHit(hit.id.split("\x00", 1)[1], hit.score, hit.matched))
            for hit in hits]


def refresh(kb, collection: str) -> None:
    """Bring the index up to date after a write; a failure is logged, and the next search retries."""
    try:
        ensure_index(kb, collection)
    except Exception as exc:  # the chunks are stored either way; the digest check repairs the index on first search
        log.warning("keyword index of %s not updated: %s: %s", collection, exc.__class__.__name__, exc)


def drop_index(data_path: Path, collection: str) -> None:
    """Forget a deleted collection's index, on disk and in memory."""
    path = index_path(data_path, collection)
    with _lock(path):
        _cache.pop(str(path), None)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:  # a folder in its place: nothing of ours to delete
            log.warning("keyword index %s not deleted (%s)", path, exc.__class__.__name__)


def _read(path: Path) -> dict:
    """The stored index, or {} when there is none or it cannot be used (then it is rebuilt from the chunks)."""
    if not path.exists():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        log.warning("keyword index %s cannot be read (%s); rebuilt from the collection's chunks", path,
                    exc.__class__.__name__)
        return {}
    if not _usable(record):
        log.warning("keyword index %s is damaged or from another version; rebuilt from the collection's chunks", path)
        return {}
    return record


def _usable(record) -> bool:
    """A record of this format whose tokens are lists of strings (a hand-edited file may hold anything)."""
    tokens = record.get("tokens") if isinstance(record, dict) else None
    return isinstance(record, dict) and record.get("version") == FORMAT_VERSION and \
        record.get("tokenizer") == TOKENIZER and isinstance(tokens, dict) and isinstance(record.get("digest"), str) and \
        all(isinstance(v, list) and all(isinstance(t, str) for t in v) for v in tokens.values())


def _store(path: Path, record: dict) -> None:
    """Write the index; when its place cannot be written (``keyword`` a file, the ``.json`` a folder, a read-only
    disk) the index lives in memory for this process, with one warning naming the path: searches go on."""
    try:
        _write(path, record)
    except OSError as exc:
        if str(path) not in _unwritable:
            _unwritable.add(str(path))
            log.warning("keyword index %s cannot be written (%s: %s); kept in memory only", path,
                        exc.__class__.__name__, exc.strerror or exc)


_unwritable: set[str] = set()  # paths already warned about


def _write(path: Path, record: dict) -> None:
    """Store an index whole (another process never reads half of one), 0600 in the data directory's 0700 ``keyword/``."""
    from core.store.files import private_folder, write_private

    private_folder(path.parent.parent, path.parent.name)
    write_private(path, json.dumps(record, ensure_ascii=False))
