"""Chat-model factory: one table of providers (build, check, list models), and user-facing error messages."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from langchain_core.language_models import BaseChatModel

from core.config import DEFAULT_CHAT_MODELS, PROVIDERS, Settings
from core.llm.model_files import ALIASES, EMBEDDED_MODELS, ModelFileError, Progress, embedded_model
from core.secrets import PROVIDER_KEY_FIELDS, redact, refused_key_message
from core.store.db import StoreError, store_error

CHECK_TIMEOUT = 2.5  # seconds; check() must answer within 3


class ProviderError(RuntimeError):
    """A provider cannot be used as configured; the message says how to fix it."""


@dataclass
class ProviderStatus:
    provider: str
    model: str
    status: str  # ok | unreachable | bad key | model missing | not configured | error
    detail: str = ""
    notes: list[str] = field(default_factory=list)  # what was learnt about the endpoint (structured output, tools)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def line(self) -> str:
        return f"{self.provider} ({self.model}): {self.status}" + (f" - {self.detail}" if self.detail else "")


@dataclass(frozen=True)
class Provider:
    """How the app uses one kind of chat-model provider."""

    id: str
    build: Callable[[Settings, str, dict], BaseChatModel]  # (settings, model name, temperature/max_tokens)
    check: Callable[[Settings, str], ProviderStatus]
    list_models: Callable[[Settings], list[str]]
    endpoint: Callable[[Settings], tuple[str, str]] | None = None  # (base URL, key) of OpenAI-style servers


_probes: dict[str, tuple[float, bool]] = {}


def _ollama_reachable(settings: Settings) -> bool:
    """Probe Ollama, remembering the answer for 30 s (resolved on every run, must stay cheap)."""
    if settings.unconfigured_server("ollama"):  # a shared deployment does not probe localhost:11434 by default
        return False
    host = settings.ollama_host.rstrip("/")
    cached = _probes.get(host)
    if cached and time.monotonic() - cached[0] < 30:
        return cached[1]
    try:
        ok = httpx.get(host + "/api/tags", timeout=0.8).status_code == 200
    except httpx.HTTPError:
        ok = False
    _probes[host] = (time.monotonic(), ok)
    return ok


def resolve_provider(settings: Settings) -> str:
    """The explicit provider, else openai with a key, else ollama if it answers, else embedded."""
    if settings.provider:
        if settings.provider not in PROVIDERS:
            raise ProviderError(f"unknown provider {settings.provider!r}; choose one of {', '.join(PROVIDERS)}")
        return settings.provider
    if settings.openai_api_key:
        return "openai"
    if _ollama_reachable(settings):
        return "ollama"
    return "embedded"


def model_name(settings: Settings, provider: str | None = None, role: str = "main") -> str:
    """The model that runs for this role: the name every result reports (embedded names are canonical)."""
    provider = provider or resolve_provider(settings)
    name = (settings.grader_model if role == "grader" and settings.grader_model else "") or settings.model
    if provider == "embedded":
        if name and settings.provider != "embedded" and name not in EMBEDDED_MODELS and name not in ALIASES:
            name = ""  # chosen automatically (no key, no Ollama): a model named for another provider does not apply
        try:
            return embedded_model(name or settings.embedded_model or DEFAULT_CHAT_MODELS["embedded"]).name
        except ModelFileError as exc:
            raise ProviderError(str(exc)) from None
    return name or DEFAULT_CHAT_MODELS[provider]


def context_size(settings: Settings, provider: str | None = None) -> int | None:
    """The model's context window in tokens, where it is known without asking a server."""
    if (provider or resolve_provider(settings)) == "embedded":
        from core.llm.embedded_llm import N_CTX

        return N_CTX
    return None


def get_chat_model(settings: Settings, role: str = "main") -> BaseChatModel:
    """A LangChain chat model for the configured provider. ``role="grader"`` may pick a cheaper model."""
    provider = resolve_provider(settings)
    if settings.unconfigured_server(provider):
        raise ProviderError(settings.unconfigured_server(provider))
    name = model_name(settings, provider, role)
    limit = context_size(settings, provider)
    max_tokens = min(settings.max_tokens, limit) if limit else settings.max_tokens  # never more than fits
    return PROVIDER_TABLE[provider].build(settings, name, {"temperature": settings.temperature, "max_tokens": max_tokens})


def prepare_model(settings: Settings, progress: Progress | None = None) -> None:
    """Make the model loadable before a run: the embedded GGUF is assembled (once) with progress."""
    if resolve_provider(settings) == "embedded":
        from core.llm.embedded_llm import embedded_model_path

        try:
            embedded_model_path(model_name(settings, "embedded"), settings.model_cache_path, progress)
        except ModelFileError as exc:
            raise ProviderError(str(exc)) from None


# ---------------------------------------------------------------- the providers


def _build_embedded(settings: Settings, name: str, common: dict) -> BaseChatModel:
    from core.llm.embedded_llm import EmbeddedChatModel

    return EmbeddedChatModel(model_name=name, model_cache_dir=str(settings.model_cache_path),
                             cache_mb=settings.embedded_cache_mb, lookup=settings.embedded_lookup, **common)


def _build_openai(settings: Settings, name: str, common: dict) -> BaseChatModel:
    if not settings.openai_api_key:
        raise ProviderError(settings.missing_key("openai_api_key", "OpenAI needs OPENAI_API_KEY: set it in the "
                                                 "environment, .env or .streamlit/secrets.toml, or choose another provider"))
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=name, api_key=settings.openai_api_key, base_url=settings.openai_base_url or None,
                      timeout=settings.request_timeout, max_retries=1, http_client=_no_redirects(settings), **common)


def _build_ollama(settings: Settings, name: str, common: dict) -> BaseChatModel:
    from langchain_ollama import ChatOllama

    return ChatOllama(model=name, base_url=settings.ollama_host, temperature=common["temperature"],
                      num_predict=common["max_tokens"],
                      client_kwargs={"timeout": settings.request_timeout, "follow_redirects": False})


def _build_compat(settings: Settings, name: str, common: dict) -> BaseChatModel:
    from core.llm.structured import CompatChatModel  # LM Studio, llama.cpp server, vLLM: capabilities negotiated

    return CompatChatModel(model=name, base_url=settings.compat_base_url, api_key=settings.compat_api_key or "not-needed",
                           timeout=settings.request_timeout, max_retries=1, http_client=_no_redirects(settings),
                           echo_errors="compat_base_url" not in settings.typed_endpoints, **common)


def _no_redirects(settings: Settings) -> httpx.Client:
    """The OpenAI SDK follows redirects by default: a server (a visitor's) could point the app at an internal one."""
    return httpx.Client(follow_redirects=False, timeout=settings.request_timeout)


def _check_embedded(settings: Settings, model: str) -> ProviderStatus:
    import llama_cpp  # noqa: F401  (the build is the usual failure)

    from core.llm.embedded_llm import N_CTX

    entry = embedded_model(model)
    cache = settings.model_cache_path
    if entry.split and not entry.split.ready(cache):  # every part present: assembled on first use
        entry.split.part_paths()
        return ProviderStatus("embedded", model, "ok", f"in-process; the {entry.size_mib} MiB GGUF is assembled on "
                                                       f"first use into {cache} ({entry.licence})")
    path = entry.locate(cache, None)
    return ProviderStatus("embedded", model, "ok", f"in-process, {path.stat().st_size // 2**20} MiB GGUF, "
                                                   f"{N_CTX}-token context ({entry.licence})")


def _list_embedded(settings: Settings) -> list[str]:
    return list(EMBEDDED_MODELS)


def _openai_endpoint(settings: Settings) -> tuple[str, str]:
    return settings.openai_base_url or "https://api.openai.com/v1", settings.openai_api_key


def _compat_endpoint(settings: Settings) -> tuple[str, str]:
    return settings.compat_base_url, settings.compat_api_key or "not-needed"


def _openai_style_check(provider: str, base_url: str, key: str, model: str) -> ProviderStatus:
    try:
        resp = httpx.get(base_url.rstrip("/") + "/models", headers={"Authorization": f"Bearer {key}"},
                         timeout=CHECK_TIMEOUT)
    except httpx.HTTPError as exc:
        return ProviderStatus(provider, model, "unreachable", f"{base_url}: {exc.__class__.__name__}")
    if resp.status_code in (401, 403):
        return ProviderStatus(provider, model, "bad key", "the server rejected the API key")
    if resp.status_code != 200:
        return ProviderStatus(provider, model, "error", f"HTTP {resp.status_code} from {base_url}/models")
    names = [m.get("id", "") for m in resp.json().get("data", [])]
    if names and model not in names:
        return ProviderStatus(provider, model, "model missing", f"available: {', '.join(names[:8])}")
    return ProviderStatus(provider, model, "ok")


def _check_openai(settings: Settings, model: str) -> ProviderStatus:
    if not settings.openai_api_key:
        return ProviderStatus("openai", model, "not configured", "set OPENAI_API_KEY")
    return _openai_style_check("openai", *_openai_endpoint(settings), model)


def _check_compat(settings: Settings, model: str) -> ProviderStatus:
    return _openai_style_check("openai-compatible", *_compat_endpoint(settings), model)


def _check_ollama(settings: Settings, model: str) -> ProviderStatus:
    try:
        resp = httpx.get(settings.ollama_host.rstrip("/") + "/api/tags", timeout=CHECK_TIMEOUT)
    except httpx.HTTPError as exc:
        return ProviderStatus("ollama", model, "unreachable", f"{settings.ollama_host}: {exc.__class__.__name__}")
    names = [m["name"] for m in resp.json().get("models", [])]
    if model not in names and f"{model}:latest" not in names:
        return ProviderStatus("ollama", model, "model missing", f"run: ollama pull {model}")
    return ProviderStatus("ollama", model, "ok")


def _list_ollama(settings: Settings) -> list[str]:
    resp = httpx.get(settings.ollama_host.rstrip("/") + "/api/tags", timeout=CHECK_TIMEOUT)
    return sorted(m["name"] for m in resp.json().get("models", []))


def _openai_style_list(endpoint: Callable[[Settings], tuple[str, str]]) -> Callable[[Settings], list[str]]:
    def list_models(settings: Settings) -> list[str]:
        base, key = endpoint(settings)
        if not key:
            return []
        resp = httpx.get(base.rstrip("/") + "/models", headers={"Authorization": f"Bearer {key}"}, timeout=CHECK_TIMEOUT)
        return sorted(m.get("id", "") for m in resp.json().get("data", []))

    return list_models


PROVIDER_TABLE: dict[str, Provider] = {p.id: p for p in (
    Provider("embedded", _build_embedded, _check_embedded, _list_embedded),
    Provider("openai", _build_openai, _check_openai, _openai_style_list(_openai_endpoint), _openai_endpoint),
    Provider("ollama", _build_ollama, _check_ollama, _list_ollama),
    Provider("openai-compatible", _build_compat, _check_compat, _openai_style_list(_compat_endpoint), _compat_endpoint),
)}
assert tuple(PROVIDER_TABLE) == PROVIDERS, "config.PROVIDERS and the provider table must list the same providers"


def list_models(settings: Settings, provider: str) -> list[str]:
    """Model names the provider offers right now; empty when it cannot be asked."""
    if provider != "embedded" and not settings.custom_endpoints:
        return []  # shared deployments do not probe model servers for visitors (RAG_ALLOW_CUSTOM_ENDPOINTS)
    try:
        return PROVIDER_TABLE[provider].list_models(settings)
    except (httpx.HTTPError, ValueError, KeyError):
        return []


def check(settings: Settings, provider: str | None = None, negotiate: bool = False) -> ProviderStatus:
    """Short status of a provider; never raises, answers within about 3 seconds.

    ``negotiate=True`` (doctor, the sidebar's "test connection") also asks an OpenAI-compatible server
    which structured-output method and tool calling it honours; that takes a few model calls.
    """
    try:
        provider = provider or resolve_provider(settings)
        model = model_name(settings, provider)
        if PROVIDER_KEY_FIELDS.get(provider) in settings.refused_keys:  # a key too short to be one: say so
            return ProviderStatus(provider, model, "bad key", refused_key_message(PROVIDER_KEY_FIELDS[provider]))
        if settings.unconfigured_server(provider):  # a shared deployment never probes a default URL
            return ProviderStatus(provider, model, "not configured", settings.unconfigured_server(provider))
        status = PROVIDER_TABLE[provider].check(settings, model)
        if negotiate and status.ok and provider == "openai-compatible":
            from core.llm.structured import describe, negotiate_endpoint

            negotiate_endpoint(get_chat_model(settings))
            status.notes = describe(get_chat_model(settings))
        return status
    except Exception as exc:  # a status check must never take the caller down
        detail = redact(f"{exc.__class__.__name__}: {exc}", settings)
        return ProviderStatus(provider or "?", settings.model or "?", "error", detail)


def friendly_error(exc: BaseException, settings: Settings | None = None) -> str:
    """One line that says what went wrong with a model call and how to fix it."""
    name = exc.__class__.__name__
    text = str(exc)
    if isinstance(exc, (ProviderError, ModelFileError, StoreError)):  # already one clear line
        return text
    if isinstance(exc, sqlite3.DatabaseError):  # the checkpoints a run writes: a store problem, not the model's
        problem = store_error(exc, "the checkpoint database", "checkpoints.sqlite")
        if problem:
            return str(problem)
    text = redact(text, settings)  # never echo a key back, in any form it takes
    lowered = (name + " " + text).lower()
    if "authentication" in lowered or "401" in lowered or "invalid api key" in lowered:
        return "The provider rejected the API key: check OPENAI_API_KEY (or the server's key) and try again."
    if "timeout" in lowered or "timed out" in lowered:
        return "The model did not answer in time: check the server, or raise the timeout / lower max tokens."
    if "connect" in lowered or "connection" in lowered:
        return "Cannot reach the model server: start it (e.g. `ollama serve`) or check its URL in the settings."
    if "not found" in lowered and ("model" in lowered or "404" in lowered):
        return "The model is not available on this server: pull or load it first, or pick another model."
    if "context window" in lowered or "exceed context" in lowered:
        return "The conversation is too long for this model's context: start a new chat or lower k."
    if settings is not None and settings.typed_endpoints:  # a visitor's URL: its error body may be anyone's page
        code = _status_code(exc)
        return f"The model call failed ({name})" + (f": the server answered HTTP {code}." if code else ".")
    return f"The model call failed ({name}): {text[:200]}"


def _status_code(exc: BaseException) -> int | None:
    """The HTTP status of a failed call (openai, httpx and ollama errors each keep it somewhere)."""
    response = getattr(exc, "response", None)
    code = getattr(exc, "status_code", None) or getattr(response, "status_code", None)
    return code if isinstance(code, int) else None
