"""Reading files into Documents and chunking them, within the per-file limits of the settings."""

from __future__ import annotations

import hashlib
import io
import re
import unicodedata
from pathlib import Path

from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter

from core.config import Settings

SUPPORTED_SUFFIXES = (".txt", ".md", ".pdf")
_CONTROL_BYTES = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # tab, newlines and form feed are text


class KnowledgeError(ValueError):
    """A problem the user can fix: bad file, unknown collection, wrong embedder."""


class _TooMuchText(Exception):
    pass


def load_file(path: Path, data: bytes | None = None, limits: Settings | None = None) -> list[Document]:
    """Read one file into page-level Documents (one per PDF page, one for text files).

    ``limits`` (default: the default settings) caps bytes, PDF pages and extracted characters.
    """
    limits = limits or Settings()
    name = path.name
    hidden = [c for c in name if unicodedata.category(c) in ("Cc", "Cf")]
    if hidden:  # U+202E turns "gpj.md" into "dm.jpg" on screen; control characters break every listing
        shown = "".join(f"\\u{ord(c):04x}" if c in hidden else c for c in name)
        raise KnowledgeError(f"{shown}: the file name holds invisible or direction-changing characters "
                             f"({', '.join(sorted({f'U+{ord(c):04X}' for c in hidden}))}); rename the file")
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise KnowledgeError(f"{name}: unsupported file type {suffix or '(none)'}; use .txt, .md or .pdf")
    size = len(data) if data is not None else path.stat().st_size
    if size > limits.max_file_mb * 2**20:
        raise KnowledgeError(f"{name}: {size / 2**20:.1f} MB is over the {limits.max_file_mb} MB limit "
                             "(RAG_MAX_FILE_MB); split the file")
    raw = data if data is not None else path.read_bytes()
    if suffix == ".pdf":
        return _load_pdf(name, raw, limits)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise KnowledgeError(f"{name}: not UTF-8 text; save it as UTF-8 and try again") from None
    if _CONTROL_BYTES.search(text):
        raise KnowledgeError(f"{name}: contains NUL or other control bytes, so it is not a text file")
    if not text.strip():
        raise KnowledgeError(f"{name}: the file is empty")
    if len(text) > limits.max_file_chars:
        raise KnowledgeError(_too_long(name, limits))
    heading = re.search(r"^#\s+(.+)$", text, re.M)
    title = heading.group(1).strip() if heading else path.stem
    return [Document(page_content=text, metadata={"source": name, "title": title, "page": 1})]


def _too_long(name: str, limits: Settings) -> str:
    return f"{name}: more than {limits.max_file_chars:,} characters of text (RAG_MAX_FILE_CHARS); split the file"


def _load_pdf(name: str, raw: bytes, limits: Settings) -> list[Document]:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            raise KnowledgeError(f"{name}: the PDF is password-protected; save an unprotected copy")
        if len(reader.pages) > limits.max_pdf_pages:
            raise KnowledgeError(f"{name}: {len(reader.pages)} pages is over the {limits.max_pdf_pages} page limit "
                                 "(RAG_MAX_PDF_PAGES); split the file")
        title = (reader.metadata.title if reader.metadata else None) or Path(name).stem
        pages, budget = [], limits.max_file_chars
        for number, page in enumerate(reader.pages, 1):
            text = _page_text(page, budget)
            budget -= len(text)
            pages.append((number, text))
    except KnowledgeError:
        raise
    except _TooMuchText:
        raise KnowledgeError(_too_long(name, limits)) from None
    except DependencyError:
        raise KnowledgeError(f"{name}: the PDF is encrypted with a method this installation cannot read") from None
    except Exception as exc:  # hostile PDFs raise anything (LimitReachedError, RecursionError...): this file fails, not the batch
        raise KnowledgeError(f"{name}: cannot read this PDF ({exc.__class__.__name__}: {exc})") from None
    docs = [
        Document(page_content=text, metadata={"source": name, "title": str(title), "page": number})
        for number, text in pages
        if text.strip()
    ]
    if not docs:
        raise KnowledgeError(f"{name}: the PDF has no extractable text (scanned images are not supported)")
    return docs


def _page_text(page, budget: int) -> str:
    """A page's text, stopping pypdf as soon as it passes ``budget`` characters (a small PDF can expand to millions)."""
    seen = 0

    def count(text, *_):
        nonlocal seen
        seen += len(text)
        if seen > budget:
            raise _TooMuchText

    text = page.extract_text(visitor_text=count) or ""
    if len(text) > budget:
        raise _TooMuchText
    return text


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
            # the text is part of the id: a changed chunk gets a new id, so a re-ingest can add the new
            # chunks before removing the old ones
            key = f"{meta['source']}|{meta['page']}|{index}|{text.strip()}"
            meta["chunk_id"] = hashlib.sha1(key.encode()).hexdigest()[:16]
            meta["chunk_index"] = index
            chunks.append(Document(page_content=text.strip(), metadata=meta, id=meta["chunk_id"]))
    return chunks
