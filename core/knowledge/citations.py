"""Citable sources: the records an answer's numbered citations point to, and `[Source: label]` checks."""

from __future__ import annotations

import re

from langchain_core.documents import Document

from core.prompts import escape_fences, fence

SNIPPET_CHARS = 1200
OBSERVATION_DOC_CHARS = 700  # per chunk, in what an agent reads


def sources_from(docs: list[Document]) -> list[dict]:
    """Citable source records, numbered in the order the answer prompt numbered them."""
    out = []
    for n, doc in enumerate(docs, 1):
        meta = doc.metadata
        out.append({
            "n": n,
            "source": meta.get("source", "?"),
            "title": meta.get("title", ""),
            "page": meta.get("page"),
            "chunk_id": meta.get("chunk_id", ""),
            "collection": meta.get("collection", ""),
            "url": meta.get("url", ""),
            "score": meta.get("score"),
            "text": doc.page_content[:SNIPPET_CHARS],
            # where each retriever ranked it (core.knowledge.hybrid): {"rank", "score"}, absent if it did not
            **{name: dict(meta[name]) for name in ("dense", "keyword", "fused") if isinstance(meta.get(name), dict)},
            **({"retrieval": meta["retrieval"]} if meta.get("retrieval") else {}),
        })
    return out


def source_label(doc: Document) -> str:
    """The label a chunk is cited by: its URL, or the file name (with the page for PDFs)."""
    meta = doc.metadata
    if meta.get("url"):
        return meta["url"]
    source = meta.get("source", "?")
    return f"{source} p.{meta.get('page', 1)}" if source.lower().endswith(".pdf") else source


def label_sources(docs: list[Document]) -> list[dict]:
    """The run's source records (as ``final`` makes them), each with the label it is cited by."""
    return [dict(src, label=source_label(doc)) for src, doc in zip(sources_from(docs), docs)]


def format_labelled(docs: list[Document], chars: int | None = OBSERVATION_DOC_CHARS) -> str:
    """Chunks as the model reads them: a source label, then the text fenced as data."""
    blocks = []
    for doc in docs:
        text = doc.page_content if chars is None else doc.page_content[:chars]
        blocks.append(f"[Source: {escape_fences(source_label(doc))}]\n{fence(text)}")
    return "\n\n".join(blocks)


CITATION = re.compile(r"\[\s*(?:Source|Sources|출처)\s*:\s*([^\]]*)\]", re.IGNORECASE)


def _norm_label(label: str) -> str:
    return "".join(label.casefold().split()).strip("'\"`")


def verify_citations(answer: str, known_labels: list[str]) -> tuple[str, list[str], list[str]]:
    """Keep ``[Source: label]`` citations whose label a tool returned in this run; remove the others.

    Returns the cleaned answer, the verified labels and the removed labels (in order of appearance).
    """
    known = {_norm_label(label) for label in known_labels}
    verified: list[str] = []
    removed: list[str] = []

    def check(match: re.Match) -> str:
        inner = match.group(1).strip()
        parts = [inner] if _norm_label(inner) in known else [p.strip() for p in re.split(r"[;,]", inner) if p.strip()]
        good = [p for p in parts if _norm_label(p) in known]
        verified.extend(good)
        removed.extend(p for p in parts if _norm_label(p) not in known)
        if not parts:
            removed.append(inner or "(empty)")
        return f"[Source: {'; '.join(good)}]" if good else "\x00"

    cleaned = CITATION.sub(check, answer)
    # close the gap a removed citation leaves, and only there (the rest of the layout stays as written)
    cleaned = re.sub(r"[ \t]*\x00+(?=[.,;:!?)]|[ \t]*$)", "", cleaned, flags=re.MULTILINE)
    cleaned = re.sub(r"[ \t]*\x00+[ \t]*", " ", cleaned).strip()
    return cleaned, list(dict.fromkeys(verified)), list(dict.fromkeys(removed))
