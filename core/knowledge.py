"""Knowledge base: Chroma collections, loaders, chunking, ingestion and the sample corpora."""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_text_splitters import RecursiveCharacterTextSplitter

from core.config import Settings
from core.embeddings import embedding_model_id, get_embeddings

SUPPORTED_SUFFIXES = (".txt", ".md", ".pdf")
SAMPLES_DIR = Path(__file__).resolve().parent / "samples"
# collection name -> shipped file; indexed automatically on first use
SAMPLE_COLLECTIONS = {
    "restaurant_menu": "restaurant_menu.md",
    "restaurant_wine": "restaurant_wine.md",
    "japan_ict": "japan_ict_policy.pdf",
    "usa_ict": "usa_ict_policy.pdf",
}
EMBED_BATCH = 32
DESCRIBED = ("display_name", "description", "enabled")  # what core.sources stores with a collection

Progress = Callable[[int, int, str], None]  # (done, total, label)


# Chroma's rule, kept a little stricter so every name we accept is valid everywhere
COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$")


def valid_collection_name(name: str) -> bool:
    return bool(COLLECTION_NAME.match(name)) and ".." not in name


class KnowledgeError(ValueError):
    """A problem the user can fix: bad file, unknown collection, wrong embedder."""


class EmbeddingMismatchError(KnowledgeError):
    pass


@dataclass
class IngestReport:
    collection: str
    added: dict[str, int] = field(default_factory=dict)  # source -> chunk count
    errors: dict[str, str] = field(default_factory=dict)  # file name -> reason

    @property
    def chunks(self) -> int:
        return sum(self.added.values())


# ---------------------------------------------------------------- loading and chunking


def load_file(path: Path, data: bytes | None = None) -> list[Document]:
    """Read one file into page-level Documents (one per PDF page, one for text files)."""
    name = path.name
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise KnowledgeError(f"{name}: unsupported file type {suffix or '(none)'}; use .txt, .md or .pdf")
    raw = data if data is not None else path.read_bytes()
    if suffix == ".pdf":
        return _load_pdf(name, raw)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise KnowledgeError(f"{name}: not UTF-8 text; save it as UTF-8 and try again") from None
    if not text.strip():
        raise KnowledgeError(f"{name}: the file is empty")
    heading = re.search(r"^#\s+(.+)$", text, re.M)
    title = heading.group(1).strip() if heading else path.stem
    return [Document(page_content=text, metadata={"source": name, "title": title, "page": 1})]


def _load_pdf(name: str, raw: bytes) -> list[Document]:
    import io

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(raw))
        title = (reader.metadata.title if reader.metadata else None) or Path(name).stem
        pages = [(i + 1, page.extract_text() or "") for i, page in enumerate(reader.pages)]
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise KnowledgeError(f"{name}: cannot read this PDF ({exc.__class__.__name__}: {exc})") from None
    docs = [
        Document(page_content=text, metadata={"source": name, "title": str(title), "page": number})
        for number, text in pages
        if text.strip()
    ]
    if not docs:
        raise KnowledgeError(f"{name}: the PDF has no extractable text (scanned images are not supported)")
    return docs


def split_documents(pages: list[Document], chunk_size: int, chunk_overlap: int) -> list[Document]:
    """Chunk pages, giving each chunk a stable id derived from source, page and position."""
    if chunk_overlap >= chunk_size:
        raise KnowledgeError(f"chunk overlap ({chunk_overlap}) must be smaller than chunk size ({chunk_size})")
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        separators=["\n## ", "\n### ", "\n\n", "\n", ". ", "다. ", " ", ""],
    )
    chunks: list[Document] = []
    for page in pages:
        for index, text in enumerate(splitter.split_text(page.page_content)):
            meta = dict(page.metadata)
            key = f"{meta['source']}|{meta['page']}|{index}"
            meta["chunk_id"] = hashlib.sha1(key.encode()).hexdigest()[:16]
            meta["chunk_index"] = index
            chunks.append(Document(page_content=text.strip(), metadata=meta, id=meta["chunk_id"]))
    return chunks


# ---------------------------------------------------------------- the store

_clients: dict[str, object] = {}
_clients_lock = threading.Lock()


def _client(path: Path):
    """One Chroma client per directory per process (Chroma itself expects that)."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    key = str(path.resolve())
    with _clients_lock:
        if key not in _clients:
            path.mkdir(parents=True, exist_ok=True)
            _clients[key] = chromadb.PersistentClient(
                path=key, settings=ChromaSettings(anonymized_telemetry=False, allow_reset=True)
            )
        return _clients[key]


class KnowledgeBase:
    """Named Chroma collections sharing one embedder."""

    def __init__(self, settings: Settings, embeddings: Embeddings | None = None):
        self.settings = settings
        self.embeddings = embeddings or get_embeddings(settings)
        self.model_id = embedding_model_id(self.embeddings)
        self.client = _client(settings.data_path / "chroma")
        # one embedding per query text, however many collections it is searched in
        self.embed_query = functools.lru_cache(maxsize=256)(self.embeddings.embed_query)

    # -- collections

    def names(self) -> list[str]:
        return sorted(c.name if hasattr(c, "name") else str(c) for c in self.client.list_collections())

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

    # -- descriptive metadata (what the patterns read through core.sources)

    def metadata(self, name: str) -> dict:
        """The collection's stored metadata, without Chroma's own index settings."""
        return {k: v for k, v in (self._raw(name).metadata or {}).items() if not k.startswith("hnsw:")}

    def catalogue(self) -> dict[str, dict]:
        """name -> metadata of every collection, in one listing (no embedder involved)."""
        return {c.name: {k: v for k, v in (c.metadata or {}).items() if not k.startswith("hnsw:")}
                for c in sorted(self.client.list_collections(), key=lambda c: c.name)}

    def set_metadata(self, name: str, **values: str | bool | int | float) -> None:
        """Merge values into the collection's metadata (Chroma refuses hnsw:* keys in modify, even unchanged)."""
        col = self._raw(name)
        kept = {k: v for k, v in (col.metadata or {}).items() if not k.startswith("hnsw:")}
        col.modify(metadata={**kept, **values})

    def delete_collection(self, name: str) -> None:
        self._raw(name)
        self.client.delete_collection(name)

    def delete_source(self, name: str, source: str) -> int:
        col = self._raw(name)
        ids = col.get(where={"source": source})["ids"]
        if ids:
            col.delete(ids=ids)
        return len(ids)

    def chunks(self, name: str, source: str | None = None, limit: int | None = 50) -> list[Document]:
        col = self._raw(name)
        got = col.get(where={"source": source} if source else None, limit=limit,
                      include=["documents", "metadatas"])
        return [Document(page_content=d, metadata=m, id=i)
                for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])]

    # -- ingestion

    def ingest(self, paths: list[Path], collection: str, progress: Progress | None = None,
               files: dict[str, bytes] | None = None) -> IngestReport:
        """Index files into a collection; a bad file is reported and the others still go in.

        ``files`` maps file names to bytes (uploads); ``paths`` are read from disk.
        """
        report = IngestReport(collection)
        items: list[tuple[Path, bytes | None]] = [(Path(p), None) for p in paths]
        items += [(Path(name), data) for name, data in (files or {}).items()]
        store = None
        for path, data in items:
            try:
                if data is None and not path.is_file():
                    raise KnowledgeError(f"{path.name}: file not found")
                chunks = split_documents(load_file(path, data), self.settings.chunk_size,
                                         self.settings.chunk_overlap)
            except KnowledgeError as exc:
                report.errors[path.name] = str(exc)
                continue
            except OSError as exc:
                report.errors[path.name] = f"{path.name}: {exc.strerror or exc}"
                continue
            store = store or self.store(collection, create=True)
            self.delete_source(collection, path.name)  # re-ingest replaces, never duplicates
            for start in range(0, len(chunks), EMBED_BATCH):
                batch = chunks[start:start + EMBED_BATCH]
                store.add_documents(batch, ids=[c.id for c in batch])
                if progress:
                    progress(start + len(batch), len(chunks), path.name)
            report.added[path.name] = len(chunks)
        return report

    def reindex(self, name: str, progress: Progress | None = None) -> int:
        """Re-embed a collection's chunks with this knowledge base's embedder; return the chunk count.

        The new index is built beside the old one and swapped in at the end, so a failing embedder
        leaves the collection as it was.
        """
        chunks = self.chunks(name, limit=None)
        old_meta = {k: v for k, v in (self.client.get_collection(name).metadata or {}).items()
                    if not k.startswith("hnsw:") and k != "embedding_model"}
        temp = f"{name[:50]}-reindex"
        if self.exists(temp):
            self.client.delete_collection(temp)
        store = self.store(temp, create=True)
        try:
            for start in range(0, len(chunks), EMBED_BATCH):
                batch = chunks[start:start + EMBED_BATCH]
                store.add_documents(batch, ids=[c.id for c in batch])
                if progress:
                    progress(start + len(batch), len(chunks), name)
        except Exception:
            self.client.delete_collection(temp)
            raise
        self.client.delete_collection(name)
        fresh = self.client.get_collection(temp)
        kept = {k: v for k, v in (fresh.metadata or {}).items() if not k.startswith("hnsw:")}
        # Chroma refuses hnsw:* keys in modify(), even unchanged; the sample digest carries over
        fresh.modify(name=name, metadata={**old_meta, **kept})
        return len(chunks)

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
        """Index the shipped sample corpora when missing, changed, or embedded with another model."""
        rebuilt = []
        for name, filename in SAMPLE_COLLECTIONS.items():
            path = SAMPLES_DIR / filename
            digest = hashlib.sha1(path.read_bytes()).hexdigest()[:16] if path.is_file() else ""
            described = {}
            if self.exists(name):
                meta = self._raw(name).metadata or {}
                if meta.get("sample_digest") == digest and meta.get("embedding_model") == self.model_id:
                    continue
                described = {k: v for k, v in meta.items() if k in DESCRIBED}  # the user's edits outlive a rebuild
                self.client.delete_collection(name)  # ours, derived from a shipped file: safe to rebuild
            report = self.ingest([path], name, progress)
            if report.errors:
                raise KnowledgeError("; ".join(report.errors.values()))
            self.set_metadata(name, sample_digest=digest, **described)
            rebuilt.append(name)
        return rebuilt
