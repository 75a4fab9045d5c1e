"""Knowledge base: Chroma collections, ingestion, re-indexing and the sample corpora (files: core.knowledge.loaders)."""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from core.config import ReadOnlyError as SettingsReadOnlyError
from core.config import Settings, refuse_if_read_only, visitor_of
from core.knowledge import keyword_index, upload_budget
from core.knowledge.loaders import KnowledgeError, load_file, split_documents
from core.llm.embeddings import embedding_model_id, get_embeddings

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "samples"
# collection name -> shipped file; indexed automatically on first use
SAMPLE_COLLECTIONS = {
    "restaurant_menu": "restaurant_menu.md",
    "restaurant_wine": "restaurant_wine.md",
    "japan_ict": "japan_ict_policy.pdf",
    "usa_ict": "usa_ict_policy.pdf",
}
EMBED_BATCH = 32
log = logging.getLogger(__name__)
REINDEX_OF = "reindex_of"  # marks a re-index's temporary collection (never shown, never a user's)
REVISION = "chunks_revision"  # changed at every write of chunks: the keyword index's cheap staleness check
ORIGIN = "origin"  # where a file from disk came from: two folders' notes.md must not replace each other
DESCRIBED = ("display_name", "description", "enabled")  # what core.knowledge.sources stores with a collection
RESERVED = ("web", "direct")  # route ids the routers use for web search and a direct answer, in any case

Progress = Callable[[int, int, str], None]  # (done, total, label)


# Chroma's rule, kept a little stricter so every name we accept is valid everywhere
COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$")


def valid_collection_name(name: str) -> bool:
    return bool(COLLECTION_NAME.fullmatch(name)) and ".." not in name  # fullmatch: "$" would let "menu\n" pass


class EmbeddingMismatchError(KnowledgeError):
    pass


class ReadOnlyError(KnowledgeError, SettingsReadOnlyError):
    """A change to the knowledge base in read-only mode."""


@dataclass
class IngestReport:
    collection: str
    added: dict[str, int] = field(default_factory=dict)  # source -> chunk count
    errors: dict[str, str] = field(default_factory=dict)  # file name -> reason

    @property
    def chunks(self) -> int:
        return sum(self.added.values())


# ---------------------------------------------------------------- the store

_clients: dict[str, object] = {}
_generations: dict[str, int] = {}  # directory -> how many clients were opened on it (a recreated store counts up)
_clients_lock = threading.Lock()


def local_client(path: Path):
    """One Chroma client per directory per process (Chroma itself expects that).

    A store folder deleted while the process runs gets a fresh, empty store here; a client kept on
    the deleted files would answer "attempt to write a readonly database" until a restart.
    """
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    key = str(path.resolve())
    with _clients_lock:
        if key in _clients and not (path / "chroma.sqlite3").is_file():
            _clients.pop(key).close()
        if key not in _clients:
            from core.store.db import private_dir  # Chroma's files: the app's user only (0700), data dir created 0700

            private_dir(path, ours=True)
            _clients[key] = chromadb.PersistentClient(
                path=key, settings=ChromaSettings(anonymized_telemetry=False, allow_reset=True)
            )
            _generations[key] = _generations.get(key, 0) + 1
        return _clients[key]


def server_client(url: str):
    """One client per Chroma server per process (``RAG_CHROMA_URL``): every replica shares its collections."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    with _clients_lock:
        if url not in _clients:
            parts = urlsplit(url)
            ssl = parts.scheme == "https"
            headers = {}
            if parts.password:  # a server behind a proxy with basic auth: user:password in the URL
                token = base64.b64encode(f"{unquote(parts.username or '')}:{unquote(parts.password)}".encode()).decode()
                headers["Authorization"] = f"Basic {token}"
            _clients[url] = chromadb.HttpClient(host=parts.hostname or "localhost", port=parts.port or (443 if ssl else 8000),
                                                ssl=ssl, headers=headers or None,
                                                settings=ChromaSettings(anonymized_telemetry=False))
            _generations[url] = 1
        return _clients[url]


def store_client(settings: Settings):
    """The Chroma client of these settings: the server of ``chroma_url``, or the files under the data directory."""
    return server_client(settings.chroma_url) if settings.chroma_url else local_client(settings.data_path / "chroma")


def store_generation(where) -> int:
    """A number that changes when the store was recreated: cached facts about it expire.

    ``where``: Settings (their Chroma server when one is set) or a data directory.
    """
    if getattr(where, "chroma_url", ""):
        return 1  # a server's store is not recreated under a running replica
    path = Path(getattr(where, "data_dir", where)) / "chroma"
    local_client(path)
    return _generations[str(path.resolve())]


class KnowledgeBase:
    """Named Chroma collections sharing one embedder."""

    def __init__(self, settings: Settings, embeddings: Embeddings | None = None):
        self.settings = settings
        self.embeddings = embeddings or get_embeddings(settings)
        self.model_id = embedding_model_id(self.embeddings)
        self.client = store_client(settings)
        # one embedding per query text, however many collections it is searched in
        self.embed_query = functools.lru_cache(maxsize=256)(self.embeddings.embed_query)

    # -- collections

    def names(self) -> list[str]:
        """The collections, without the temporary one of a re-index in progress."""
        return sorted(c.name for c in self.client.list_collections() if REINDEX_OF not in (c.metadata or {}))

    def _writable(self, action: str) -> None:
        try:
            refuse_if_read_only(self.settings, action)
        except SettingsReadOnlyError as exc:
            raise ReadOnlyError(str(exc)) from None

    def exists(self, name: str) -> bool:
        return name in self.names()

    def _raw(self, name: str, create: bool = False):
        if create:
            return self.client.get_or_create_collection(
                name, metadata={"hnsw:space": "cosine", "embedding_model": self.model_id}
            )
        if not self.exists(name):
            raise KnowledgeError(f"collection {name!r} does not exist; known: {', '.join(self.names()) or 'none'}")
        return self.client.get_collection(name)

    def check_embedder(self, name: str) -> None:
        stored = (self._raw(name).metadata or {}).get("embedding_model")
        if stored and stored != self.model_id:
            raise EmbeddingMismatchError(
                f"collection {name!r} was indexed with {stored}, but the current embedder is "
                f"{self.model_id}; re-index it with the current embedder or switch back to {stored}"
            )

    def store(self, name: str, create: bool = False):
        """The LangChain Chroma vector store for a collection (checked against the embedder)."""
        from langchain_chroma import Chroma

        self._raw(name, create=create)
        self.check_embedder(name)
        return Chroma(client=self.client, collection_name=name, embedding_function=self.embeddings)

    def info(self, name: str) -> dict:
        col = self._raw(name)
        metas = col.get(include=["metadatas"])["metadatas"] or []
        sources = sorted({m.get("source", "?") for m in metas})
        meta = col.metadata or {}
        return {"name": name, "chunks": col.count(), "embedding_model": meta.get("embedding_model", "?"),
                "sources": sources}

    # -- descriptive metadata (what the patterns read through core.knowledge.sources)

    def metadata(self, name: str) -> dict:
        """The collection's stored metadata, without Chroma's own index settings."""
        return {k: v for k, v in (self._raw(name).metadata or {}).items() if not k.startswith("hnsw:")}

    def catalogue(self) -> dict[str, dict]:
        """name -> metadata of every collection, in one listing (no embedder involved)."""
        return {c.name: {k: v for k, v in (c.metadata or {}).items() if not k.startswith("hnsw:")}
                for c in sorted(self.client.list_collections(), key=lambda c: c.name)}

    def set_metadata(self, name: str, **values: str | bool | int | float) -> None:
        """Merge values into the collection's metadata (display name, description, switch...)."""
        self._writable("changing a collection's name, description or switch")
        self._merge_metadata(name, values)

    def _merge_metadata(self, name: str, values: dict) -> None:
        """Chroma refuses hnsw:* keys in modify(), even unchanged: they are left out."""
        col = self._raw(name)
        kept = {k: v for k, v in (col.metadata or {}).items() if not k.startswith("hnsw:")}
        col.modify(metadata={**kept, **values})

    def delete_collection(self, name: str) -> None:
        self._writable("deleting a collection")
        self._raw(name)
        self.client.delete_collection(name)
        keyword_index.drop_index(self.settings.data_path, name)

    def delete_source(self, name: str, source: str) -> int:
        self._writable("deleting a document")
        col = self._raw(name)
        ids = col.get(where={"source": source})["ids"]
        if ids:
            col.delete(ids=ids)
            self._chunks_changed(name)
        return len(ids)

    def chunks_fingerprint(self, name: str) -> tuple:
        """(chunk count, revision): changes at every write of chunks through this class, in any process or
        replica, and costs two small calls where reading every chunk id (the digest) took 20 ms at 10,000 chunks."""
        col = self._raw(name)
        return col.count(), (col.metadata or {}).get(REVISION)

    def _chunks_changed(self, name: str) -> None:
        """After chunks were added or deleted: a new revision (so other processes' indexes see it), then our index."""
        try:
            self._merge_metadata(name, {REVISION: uuid.uuid4().hex[:12]})
        except Exception as exc:  # the chunks are stored; a missed revision is caught by the next write's
            log.warning("revision of %s not updated: %s: %s", name, exc.__class__.__name__, exc)
        keyword_index.refresh(self, name)

    def chunk_ids(self, name: str) -> list[str]:
        """Every chunk id of a collection (ids only: what the keyword index's digest is made of)."""
        return list(self._raw(name).get(include=[])["ids"])

    def chunk_texts(self, name: str, ids: list[str]) -> dict[str, str]:
        """id -> text of these chunks."""
        got = self._raw(name).get(ids=list(ids), include=["documents"])
        return dict(zip(got["ids"], got["documents"]))

    def documents(self, name: str, ids: list[str]) -> dict[str, Document]:
        """id -> the chunk as a Document with ``collection`` in its metadata."""
        got = self._raw(name).get(ids=list(ids), include=["documents", "metadatas"])
        return {i: Document(page_content=d, metadata=dict(m or {}, collection=name), id=i)
                for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])}

    def chunks(self, name: str, source: str | None = None, limit: int | None = 50) -> list[Document]:
        col = self._raw(name)
        got = col.get(where={"source": source} if source else None, limit=limit,
                      include=["documents", "metadatas"])
        return [Document(page_content=d, metadata=m, id=i)
                for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])]

    # -- ingestion

    def ingest(self, paths: list[Path], collection: str, progress: Progress | None = None,
               files: dict[str, bytes] | None = None, replace: bool = False) -> IngestReport:
        """Index files into a collection; a bad file is reported and the others still go in.

        ``files`` maps file names to bytes (uploads); ``paths`` are read from disk. A file from disk
        replaces a same-named document indexed from another folder only with ``replace``.
        """
        self._writable("indexing files")
        if not valid_collection_name(collection):
            raise KnowledgeError(f"{collection!r} is not a valid collection name: use 3-63 letters, digits, '.', "
                                 "'_' or '-', starting and ending with a letter or digit")
        if collection.lower() in RESERVED:
            use = "web search" if collection.lower() == "web" else "a direct answer"
            raise KnowledgeError(f"{collection!r} is reserved (the routers use it for {use}); choose another collection name")
        most = int(self.settings.max_upload_files or 0)
        if files and most > 0 and len(files) > most:  # before a byte is read or a chunk embedded
            raise KnowledgeError(f"refused: {len(files):,} files in one upload would pass the limit of {most:,} files "
                                 "per upload (RAG_MAX_UPLOAD_FILES); upload fewer at a time")
        if files:  # counted when accepted, indexed or not: Streamlit holds the bytes of a bad file all the same
            problem = upload_budget.BUDGET.take(visitor_of(self.settings), sum(len(data) for data in files.values()),
                                                int(self.settings.max_upload_mb_per_hour or 0) * upload_budget.MB)
            if problem:
                raise KnowledgeError(problem)
        return self._ingest(paths, collection, progress, files, replace)

    def _ingest(self, paths: list[Path], collection: str, progress: Progress | None,
                files: dict[str, bytes] | None, replace: bool = False) -> IngestReport:
        report = IngestReport(collection)
        items: list[tuple[Path, bytes | None]] = [(Path(p), None) for p in paths]
        items += [(Path(name), data) for name, data in (files or {}).items()]
        origins: dict[str, str] = {}  # file name -> where it came from, in this batch
        store = None
        for path, data in items:
            origin = str(path.resolve()) if data is None else ""
            try:
                if path.name in origins:
                    raise KnowledgeError(f"{path.name}: two files of this name in one batch ({origins[path.name] or 'upload'}"
                                         f" and {origin or 'upload'}); rename one or index them into different collections")
                origins[path.name] = origin
                if data is None and not path.is_file():
                    raise KnowledgeError(f"{path.name}: file not found")
                chunks = split_documents(load_file(path, data, self.settings), self.settings.chunk_size,
                                         self.settings.chunk_overlap)
                if len(chunks) > self.settings.max_file_chunks:
                    raise KnowledgeError(f"{path.name}: {len(chunks):,} chunks is over the {self.settings.max_file_chunks:,}"
                                         " chunk limit (RAG_MAX_FILE_CHUNKS); split the file or raise the chunk size")
                store = store or self.store(collection, create=True)
                old = self._source_ids(collection, path.name, origin, replace)
            except KnowledgeError as exc:
                report.errors[path.name] = str(exc)
                continue
            except OSError as exc:
                report.errors[path.name] = f"{path.name}: {exc.strerror or exc}"
                continue
            for chunk in chunks:
                if origin:
                    chunk.metadata[ORIGIN] = origin
            # new chunks first, stale ones last: a failure half-way leaves the old document whole
            try:
                self._add(store, chunks, progress, path.name)
            except Exception as exc:  # an embedding server gone, a full disk: this file fails, the old one stays
                self._rollback(collection, sorted({c.id for c in chunks} - set(old)))
                report.errors[path.name] = f"{path.name}: not indexed ({exc.__class__.__name__}: {exc})"
                continue
            stale = sorted(set(old) - {c.id for c in chunks})
            if stale:
                self._raw(collection).delete(ids=stale)
            report.added[path.name] = len(chunks)
        if report.added:
            self._chunks_changed(collection)
        return report

    def _rollback(self, collection: str, added: list[str]) -> None:
        """Remove the chunks a failed ingest added; if the store fails here too, the first error is the one reported."""
        try:
            if added:
                self._raw(collection).delete(ids=added)
        except Exception:
            pass

    def _source_ids(self, collection: str, source: str, origin: str, replace: bool) -> list[str]:
        """Ids of the chunks a re-ingest of ``source`` replaces; refuses a same-named file from another folder."""
        got = self._raw(collection).get(where={"source": source}, include=["metadatas"])
        before = {(m or {}).get(ORIGIN) or "" for m in got["metadatas"] or []}
        others = sorted(o for o in before if o and origin and o != origin)
        if others and not replace:
            raise KnowledgeError(f"{source}: a file of this name from {others[0]} is already in {collection!r}; rename "
                                 "this one, use another collection, or replace it (ingest --replace)")
        return got["ids"]

    def reindex(self, name: str, progress: Progress | None = None) -> int:
        """Re-embed a collection's chunks with this knowledge base's embedder; return the chunk count.

        The new index is built beside the old one and swapped in at the end (``_rebuild``): a failing
        embedder leaves the collection as it was.
        """
        self._writable("re-indexing")
        chunks = self.chunks(name, limit=None)
        old_meta = {k: v for k, v in (self.client.get_collection(name).metadata or {}).items()
                    if not k.startswith("hnsw:") and k != "embedding_model"}
        self._rebuild(name, chunks, old_meta, progress)
        return len(chunks)

    def _rebuild(self, name: str, chunks: list[Document], metadata: dict, progress: Progress | None) -> None:
        """Replace collection ``name`` by ``chunks`` embedded with this embedder, never deleting first.

        The chunks go into a temporary collection of a fresh name marked as ours; only when all are in
        is the old collection dropped and the new one renamed (with ``metadata``). No user collection
        is ever overwritten, and other readers never see an empty collection for longer than the swap.
        """
        from langchain_chroma import Chroma

        for leftover in self.client.list_collections():  # an interrupted rebuild of this collection
            if (leftover.metadata or {}).get(REINDEX_OF) == name:
                self.client.delete_collection(leftover.name)
        temp = f"{name[:40]}-reindex-{uuid.uuid4().hex[:12]}"
        self.client.create_collection(temp, metadata={"hnsw:space": "cosine", "embedding_model": self.model_id,
                                                      REINDEX_OF: name})  # raises rather than reuse a name
        try:
            self._add(Chroma(client=self.client, collection_name=temp, embedding_function=self.embeddings),
                      chunks, progress, name)
        except Exception:
            self.client.delete_collection(temp)
            raise
        if self.exists(name):
            self.client.delete_collection(name)
        fresh = self.client.get_collection(temp)
        kept = {k: v for k, v in (fresh.metadata or {}).items() if not k.startswith("hnsw:") and k != REINDEX_OF}
        # Chroma refuses hnsw:* keys in modify(), even unchanged
        fresh.modify(name=name, metadata={**metadata, **kept})
        self._chunks_changed(name)

    @staticmethod
    def _add(store, chunks: list[Document], progress: Progress | None, label: str) -> None:
        for start in range(0, len(chunks), EMBED_BATCH):
            batch = chunks[start:start + EMBED_BATCH]
            store.add_documents(batch, ids=[c.id for c in batch])
            if progress:
                progress(start + len(batch), len(chunks), label)

    # -- retrieval

    def search(self, name: str, query: str, k: int = 3) -> list[Document]:
        """Top-k chunks with ``score`` (cosine similarity, 0..1) and ``collection`` in metadata."""
        self.check_embedder(name)
        got = self._raw(name).query(query_embeddings=[self.embed_query(query)], n_results=k,
                                    include=["documents", "metadatas", "distances"])
        docs = []
        for doc_id, text, meta, distance in zip(got["ids"][0], got["documents"][0], got["metadatas"][0],
                                                got["distances"][0]):
            meta = dict(meta or {}, score=round(1.0 - float(distance), 4), collection=name)
            docs.append(Document(page_content=text, metadata=meta, id=doc_id))
        return docs

    # -- sample corpora

    def ensure_samples(self, progress: Progress | None = None) -> list[str]:
        """Index the shipped sample corpora when missing; rebuild them when changed or embedded otherwise.

        A missing sample is indexed even in read-only mode (the app needs it, and nothing is lost).
        A stale one is rebuilt beside the old one and swapped in, never deleted first, and never in
        read-only mode: a visitor's embedder must not empty a collection every user shares.
        """
        rebuilt = []
        for name, filename in SAMPLE_COLLECTIONS.items():
            path = SAMPLES_DIR / filename
            digest = hashlib.sha1(path.read_bytes()).hexdigest()[:16] if path.is_file() else ""
            if not self.exists(name):
                report = self._ingest([path], name, progress, None)
                if report.errors:
                    raise KnowledgeError("; ".join(report.errors.values()))
                self._merge_metadata(name, {"sample_digest": digest})
            else:
                meta = self._raw(name).metadata or {}
                if (meta.get("sample_digest") == digest and meta.get("embedding_model") == self.model_id) \
                        or self.settings.read_only:
                    continue
                chunks = split_documents(load_file(path, None, self.settings), self.settings.chunk_size,
                                         self.settings.chunk_overlap)
                described = {k: v for k, v in meta.items() if k in DESCRIBED}  # the user's edits outlive a rebuild
                try:
                    self._rebuild(name, chunks, {**described, "sample_digest": digest}, progress)
                except Exception as exc:  # an embedding server down: the old collection stays as it was
                    raise KnowledgeError(f"{name}: not re-indexed with {self.model_id} ({exc.__class__.__name__}: "
                                         f"{exc}); it keeps its {meta.get('embedding_model', '?')} index") from exc
            rebuilt.append(name)
        return rebuilt
