"""Settings: explicit value > environment > .env > .streamlit/secrets.toml > default.

Secrets live only in memory. ``Settings.public()`` is the form that may be shown, logged or
stored; it masks every secret field.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from dotenv import dotenv_values

from core.secrets import (
    KEY_FIELDS,
    SECRET_FIELDS,
    URL_FIELDS,
    clean_secret,
    key_problem,
    mask_url,
    refused_key_message,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STANDARD_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "TAVILY_API_KEY")
PROVIDERS = ("embedded", "openai", "ollama", "openai-compatible")
EMBEDDING_PROVIDERS = ("embedded", "ollama", "openai")
SERVER_URL_FIELDS = {"ollama": "ollama_host", "openai-compatible": "compat_base_url"}  # providers with a default URL

# Default model per chat provider; the factory uses these when no model is named.
DEFAULT_CHAT_MODELS = {
    "embedded": "qwen2.5-coder-1.5b-instruct",  # core.llm.model_files.EMBEDDED_MODELS lists the others
    "openai": "gpt-4o-mini",
    "ollama": "qwen2.5:7b",
    "openai-compatible": "local-model",
}
DEFAULT_EMBEDDING_MODELS = {
    "embedded": "multilingual-e5-small",
    "ollama": "bge-m3",
    "openai": "text-embedding-3-small",
}


def default_cache_dir() -> Path:
    """The user's cache directory for assembled models (XDG_CACHE_HOME, else ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentic-rag-studio" / "models"


class ReadOnlyError(Exception):
    """A change refused because the deployment is read-only (``RAG_READ_ONLY``)."""


def refuse_if_read_only(where, action: str) -> None:
    """Raise ReadOnlyError when ``where`` (Settings, or anything with ``read_only``) is read-only."""
    if getattr(where, "read_only", False):
        raise ReadOnlyError(f"read-only mode (RAG_READ_ONLY): {action} is switched off")


@dataclass(frozen=True)
class Settings:
    """Every knob the core reads. Empty provider means "choose automatically"."""

    openai_api_key: str = ""
    openai_base_url: str = ""
    ollama_host: str = "http://localhost:11434"
    tavily_api_key: str = ""
    compat_base_url: str = "http://localhost:1234/v1"
    compat_api_key: str = ""
    data_dir: str = str(PROJECT_ROOT / "data")
    provider: str = ""
    model: str = ""
    grader_model: str = ""
    temperature: float = 0.0
    max_tokens: int = 512
    request_timeout: float = 60.0
    embedding_provider: str = "embedded"
    embedding_model: str = ""
    chunk_size: int = 800
    chunk_overlap: int = 100
    k: int = 3
    # dense | hybrid | keyword (core.knowledge.hybrid). Dense stays the default: hybrid won on our Korean notes but
    # lost top-3 hits on the samples (docs/BENCHMARKS.md), short of "better on every set"
    retrieval: str = "hybrid"
    max_rewrites: int = 2
    max_generations: int = 2
    max_concurrency: int = 8
    max_concurrent_runs: int = 4  # runs at once in this process (chats, comparisons); more wait their turn
    # runs in flight (running or waiting) per browser session and in this process; one more is refused at once
    max_runs_per_visitor: int = 10  # a comparison of all nine patterns and a chat
    max_runs_in_flight: int = 40
    max_iterations: int = 5
    # shared deployments: a password asked once per browser session, a read-only mode, and
    # whether visitors may point the app at their own model servers (off: configured URLs only)
    # (load_settings: both endpoint switches default to off when an app password is set, on otherwise)
    app_password: str = ""
    read_only: bool = False
    allow_custom_endpoints: bool = True
    allow_private_endpoints: bool = True  # typed URLs may name loopback / private addresses (LM Studio on localhost)
    # the reverse proxies whose X-Forwarded-For names the client ("127.0.0.1, 10.0.0.0/8"); empty: none, and wrong
    # password guesses are also counted on one counter for everybody (core.store.access_limit)
    trusted_proxies: str = ""
    # limits per ingested file (server.maxUploadSize in .streamlit/config.toml matches max_file_mb)
    max_file_mb: int = 20
    max_pdf_pages: int = 500
    max_file_chars: int = 2_000_000
    max_file_chunks: int = 5_000
    max_upload_files: int = 50  # files in one upload batch (the Knowledge page); 0: no bound
    max_upload_mb_per_hour: int = 200  # bytes one visitor may upload in an hour, all batches (upload_budget); 0: no bound
    max_question_chars: int = 4000  # characters of a question (chat, compare, a what-if's changed text); 0: no bound
    # question sets: at most this many questions written per set (questions --count, the Evaluation page), and at
    # most this many runs (questions x patterns) per evaluation or advice; 0: no bound
    max_set_questions: int = 200
    max_set_runs: int = 1000
    embedded_model: str = ""  # the embedded provider's model when none is named; empty: DEFAULT_CHAT_MODELS
    model_cache_dir: str = ""  # assembled embedded models; empty: the user's cache (~/.cache/agentic-rag-studio)
    embedded_k: int = 3  # the embedded model reads at most this many documents per retrieval...
    embedded_doc_chars: int = 600  # ...and at most this many characters of each (2 cores read ~40-150 tokens/s)
    embedded_cache_mb: int = 1024  # KV states of recent prompts kept for the embedded model (0: off)
    # prompt-lookup drafts at temperature 0 (core.llm.lookup_decoding); off by default: on 2-core AVX2 machines a
    # batch of drafts costs about as much as the tokens it saves (docs/BENCHMARKS.md, session 16)
    embedded_lookup: bool = False
    graph_wait: bool = False  # Graph RAG: wait for a graph still being built (off: answer from what is built, say so)
    graph_at_ingest: bool = True  # the Knowledge page starts Graph RAG's graph build after indexing (off: at its first question)
    verify_claims: str = "model"  # check every sentence of an answer (core.llm.claims.check): off | rules | model
    claim_checks: int = 8  # at most this many model checks per answer; the rest are left unchecked
    claim_max_chars: int = 1000  # a longer sentence is left unchecked (the rules' figure pairing grows with its square)
    # pause for a reviewer on the checked answer (core.patterns.answer_review): off | unsupported | always
    review_answer: str = "off"
    # verdict thresholds for this run over the calibrated ones (core.llm.thresholds): "relevance=0.6,crag=0.2:0.7"
    grader_thresholds: str = ""
    # teams (docs/DEPLOY.md): empty = the embedded files under data_dir; set = shared servers for every replica
    database_url: str = ""  # postgresql://user:pass@host:5432/rag: threads, runs, checkpoints, comparisons, evaluations
    chroma_url: str = ""  # http://host:8000: a Chroma server for the knowledge base
    # OpenTelemetry (core/run/telemetry.py): every run's spans go to this OTLP/HTTP URL, e.g. Phoenix's
    # http://localhost:6006/v1/traces; empty: no spans, and the OpenTelemetry packages are never imported
    otlp_endpoint: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        for name in (*SECRET_FIELDS, *URL_FIELDS):  # however a key arrives (env, .env, sidebar, code), it is used stripped
            object.__setattr__(self, name, clean_secret(getattr(self, name)))
        refused = [name for name in KEY_FIELDS if key_problem(name, getattr(self, name))]
        if refused:  # never sent, never used to redact texts; the sidebar and the status checks say why
            for name in refused:
                object.__setattr__(self, name, "")
            earlier = self.extra.get("refused_keys", ())
            object.__setattr__(self, "extra", {**self.extra, "refused_keys": tuple(sorted({*earlier, *refused}))})

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    @property
    def refused_keys(self) -> tuple[str, ...]:
        """Key settings that were given a value too short to be a key (core.secrets.key_problem), still unset."""
        return tuple(name for name in self.extra.get("refused_keys", ()) if not getattr(self, name))

    def missing_key(self, name: str, otherwise: str) -> str:
        """Why the key setting ``name`` is empty: refused as too short (core.secrets), or ``otherwise`` (not set)."""
        return refused_key_message(name) if name in self.refused_keys else otherwise

    def unconfigured_server(self, provider: str) -> str:
        """Why ``provider``'s server may not be called: in a shared deployment (custom endpoints off) a URL the
        operator never set is a default (localhost:11434) nobody asked for. '' when it may be called."""
        field_name = SERVER_URL_FIELDS.get(provider)
        given = self.extra.get("configured_fields")  # None: built in code, every value chosen on purpose
        if not field_name or self.custom_endpoints or given is None or field_name in given:
            return ""
        env = field_name.upper() if field_name.upper() in STANDARD_ENV else "RAG_" + field_name.upper()
        return f"{provider} is not configured on this server (set {env}); only configured servers are called"

    @property
    def typed_endpoints(self) -> tuple[str, ...]:
        """URL fields that hold a URL a visitor typed (their error bodies are never echoed)."""
        return tuple(self.extra.get("typed_endpoints", ()))

    @property
    def refused_urls(self) -> dict:
        """URL field -> why the URL a visitor typed there was refused (core.endpoints)."""
        return dict(self.extra.get("refused_urls", {}))

    @property
    def custom_endpoints(self) -> bool:
        """Whether a visitor may type model-server URLs (never in read-only mode)."""
        return self.allow_custom_endpoints and not self.read_only

    @property
    def model_cache_path(self) -> Path:
        return Path(self.model_cache_dir) if self.model_cache_dir else default_cache_dir()

    def public(self) -> dict:
        """Settings as a dict safe to display or persist: secrets become '***' or ''."""
        out = asdict(self)
        for name in SECRET_FIELDS:
            out[name] = "***" if out[name] else ""
        for name in URL_FIELDS:
            out[name] = mask_url(out[name])
        return out

    def with_(self, **changes) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def __repr__(self) -> str:  # never print secrets by accident
        shown = ", ".join(f"{k}={v!r}" for k, v in self.public().items() if k != "extra")
        return f"Settings({shown})"


def as_visitor(settings: Settings, session_id: str) -> Settings:
    """``settings`` tagged with the browser session they serve, as a digest (a session id may resume a session)."""
    digest = hashlib.sha256(f"rag-visitor:{session_id}".encode()).hexdigest()[:16] if session_id else ""
    return replace(settings, extra={**settings.extra, "visitor": digest})


def visitor_of(settings) -> str:
    """Whose runs and uploads these settings are ('' for the CLI and code: only the process-wide bounds apply).

    Here rather than in core.run.run_slots: the upload budget (core.knowledge, a lower layer) is kept per visitor too.
    """
    return str((getattr(settings, "extra", None) or {}).get("visitor") or "")


# base-URL field -> the key field sent with it (Ollama has no key)
ENDPOINT_KEYS = {"openai_base_url": "openai_api_key", "compat_base_url": "compat_api_key", "ollama_host": None}


def with_visitor_endpoints(base: Settings, urls: dict, keys: dict) -> Settings:
    """``base`` with the URLs and keys a browser visitor typed, never pairing the server's key with their URL.

    A URL that differs from the configured one is sent the visitor's own key or none at all; with
    custom endpoints off (or read-only) the typed URLs are ignored. A typed URL the server must not
    call (core.endpoints) is refused: the configured one stays, and ``refused_urls`` says why.
    """
    from core.endpoints import typed_endpoint_problem

    changes: dict = {}
    typed_fields, refused = [], {}
    for url_field, key_field in ENDPOINT_KEYS.items():
        configured = getattr(base, url_field)
        url = (urls.get(url_field) or "").strip() if base.custom_endpoints else ""
        custom = bool(url) and url.rstrip("/") != configured.rstrip("/")
        problem = typed_endpoint_problem(url, base.allow_private_endpoints) if custom else ""
        if problem:
            refused[url_field], custom = problem, False
        if custom:
            changes[url_field] = url
            typed_fields.append(url_field)
        if key_field:
            typed = (keys.get(key_field) or "").strip()
            if typed:
                changes[key_field] = typed
            elif custom:
                changes[key_field] = ""
    changes["extra"] = {**base.extra, "typed_endpoints": tuple(typed_fields), "refused_urls": refused}
    return base.with_(**changes)


def with_visitor_embedder(base: Settings, provider: str, model: str, keys: dict) -> Settings:
    """``base`` with the embedder a browser visitor chose, where that spends nobody else's key.

    OpenAI embeddings the operator did not configure need the visitor's own key (typed in the
    sidebar); without one the configured embedder stays. Read-only deployments always keep the
    configured embedder: a switch would re-embed collections every user shares.
    """
    if base.read_only or not provider or (provider, model) == (base.embedding_provider, base.embedding_model):
        return base
    if provider == "openai" and base.embedding_provider != "openai" and not (keys.get("openai_api_key") or "").strip():
        return base
    return replace(base, embedding_provider=provider, embedding_model=model)


def _secrets_toml(root: Path) -> dict:
    path = root / ".streamlit" / "secrets.toml"
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def _coerce(value, default):
    if isinstance(default, bool):
        return str(value).strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    return str(value)


def load_settings(root: Path | None = None, **explicit) -> Settings:
    """Build settings; each field is read from the first source that has it.

    The well-known keys keep their usual names (``OPENAI_API_KEY``, ``OLLAMA_HOST``...); every
    field is also read as ``RAG_`` + its upper-case name (``RAG_PROVIDER``, ``RAG_DATA_DIR``, ``RAG_K``).
    """
    root = root or PROJECT_ROOT
    layers = [
        {k.upper(): v for k, v in _secrets_toml(root).items()},
        {k: v for k, v in dotenv_values(root / ".env").items() if v is not None},
        dict(os.environ),
    ]
    defaults = Settings()
    values: dict = {}
    for f in fields(Settings):
        if f.name == "extra":
            continue
        default = getattr(defaults, f.name)
        for layer in layers:  # later layers win
            names = ((f.name.upper(),) if f.name.upper() in STANDARD_ENV else ()) + ("RAG_" + f.name.upper(),)
            for key in names:
                if key in layer and str(layer[key]) != "":
                    try:
                        values[f.name] = _coerce(layer[key], default)
                    except ValueError:
                        pass  # a malformed number keeps the lower layer's value
        if f.name in explicit and explicit[f.name] is not None:
            values[f.name] = explicit[f.name]
    shared = bool(clean_secret(values.get("app_password")))  # a password means others use this server
    configured = tuple(sorted(values))  # what a source set: a default URL is not the operator's choice
    for name in ("allow_custom_endpoints", "allow_private_endpoints"):
        values.setdefault(name, not shared)
    return Settings(**values, extra={"configured_fields": configured})
