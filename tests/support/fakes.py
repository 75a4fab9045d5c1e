"""Deterministic stand-ins the tests share (scripted chat models live in scripted.py)."""

import hashlib

import numpy as np
from langchain_core.embeddings import Embeddings


class HashEmbeddings(Embeddings):
    """Deterministic vectors; ``fail_after`` embed calls it raises, like an embedding server going down."""

    model_id = "test:hash"

    def __init__(self, fail_after: int | None = None, model_id: str = "test:hash"):
        self.fail_after, self.calls, self.model_id = fail_after, 0, model_id

    def _vector(self, text: str) -> list[float]:
        vec = np.random.default_rng(int(hashlib.sha1(text.encode()).hexdigest()[:8], 16)).normal(size=16)
        return (vec / np.linalg.norm(vec)).tolist()

    def embed_documents(self, texts):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise ConnectionError("embedding server went away")
        return [self._vector(t) for t in texts]

    def embed_query(self, text):
        return self._vector(text)
