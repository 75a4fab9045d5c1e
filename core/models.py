"""Chat-model factory per provider, provider checks and user-facing error messages."""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx
from langchain_core.language_models import BaseChatModel

from core.config import DEFAULT_CHAT_MODELS, PROVIDERS, Settings
from core.secrets import redact

CHECK_TIMEOUT = 2.5  # seconds; check() must answer within 3


class ProviderError(RuntimeError):
    """A provider cannot be used as configured; the message says how to fix it."""


@dataclass
class ProviderStatus:
    provider: str
    model: str
    status: str  # ok | unreachable | bad key | model missing | not configured | error
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def line(self) -> str:
        return f"{self.provider} ({self.model}): {self.status}" + (f" - {self.detail}" if self.detail else "")


_probes: dict[str, tuple[float, bool]] = {}


def _ollama_reachable(settings: Settings) -> bool:
    """Probe Ollama, remembering the answer for 30 s (resolved on every run, must stay cheap)."""
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
    provider = provider or resolve_provider(settings)
    if role == "grader" and settings.grader_model:
        return settings.grader_model
    return settings.model or DEFAULT_CHAT_MODELS[provider]


def get_chat_model(settings: Settings, role: str = "main") -> BaseChatModel:
    """A LangChain chat model for the configured provider. ``role="grader"`` may pick a cheaper model."""
    provider = resolve_provider(settings)
    name = model_name(settings, provider, role)
    common = {"temperature": settings.temperature, "max_tokens": settings.max_tokens}
    if provider == "embedded":
        from core.embedded_llm import EmbeddedChatModel

        return EmbeddedChatModel(model_name=DEFAULT_CHAT_MODELS["embedded"], **common)
    if provider == "openai":
        if not settings.openai_api_key:
            raise ProviderError("OpenAI needs OPENAI_API_KEY: set it in the environment, .env or "
                                ".streamlit/secrets.toml, or choose another provider")
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=name, api_key=settings.openai_api_key, base_url=settings.openai_base_url or None,
                          timeout=settings.request_timeout, max_retries=1, **common)
    if provider == "ollama":
        from langchain_ollama import ChatOllama

        return ChatOllama(model=name, base_url=settings.ollama_host, temperature=settings.temperature,
                          num_predict=settings.max_tokens, client_kwargs={"timeout": settings.request_timeout})
    from langchain_openai import ChatOpenAI  # openai-compatible: LM Studio, llama.cpp server, vLLM

    return ChatOpenAI(model=name, base_url=settings.compat_base_url, api_key=settings.compat_api_key or "not-needed",
                      timeout=settings.request_timeout, max_retries=1, **common)


# ---------------------------------------------------------------- status checks


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


def list_models(settings: Settings, provider: str) -> list[str]:
    """Model names the provider offers right now; empty when it cannot be asked."""
    if provider != "embedded" and not settings.custom_endpoints:
        return []  # shared deployments do not probe model servers for visitors (RAG_ALLOW_CUSTOM_ENDPOINTS)
    try:
        if provider == "ollama":
            resp = httpx.get(settings.ollama_host.rstrip("/") + "/api/tags", timeout=CHECK_TIMEOUT)
            return sorted(m["name"] for m in resp.json().get("models", []))
        if provider in ("openai", "openai-compatible"):
            base, key = ((settings.openai_base_url or "https://api.openai.com/v1", settings.openai_api_key)
                         if provider == "openai" else (settings.compat_base_url, settings.compat_api_key))
            if provider == "openai" and not key:
                return []
            resp = httpx.get(base.rstrip("/") + "/models", headers={"Authorization": f"Bearer {key}"} if key else {},
                             timeout=CHECK_TIMEOUT)
            return sorted(m.get("id", "") for m in resp.json().get("data", []))
    except (httpx.HTTPError, ValueError, KeyError):
        return []
    return [DEFAULT_CHAT_MODELS["embedded"]] if provider == "embedded" else []


def check(settings: Settings, provider: str | None = None) -> ProviderStatus:
    """Short status of a provider; never raises, answers within about 3 seconds."""
    try:
        provider = provider or resolve_provider(settings)
        model = model_name(settings, provider)
        if provider == "embedded":
            import llama_cpp  # noqa: F401  (the build is the usual failure)

            from core.embedded_llm import embedded_model_path

            path = embedded_model_path()
            return ProviderStatus(provider, model, "ok", f"in-process, {path.stat().st_size // 2**20} MiB GGUF")
        if provider == "openai":
            if not settings.openai_api_key:
                return ProviderStatus(provider, model, "not configured", "set OPENAI_API_KEY")
            return _openai_style_check(provider, settings.openai_base_url or "https://api.openai.com/v1",
                                       settings.openai_api_key, model)
        if provider == "ollama":
            try:
                resp = httpx.get(settings.ollama_host.rstrip("/") + "/api/tags", timeout=CHECK_TIMEOUT)
            except httpx.HTTPError as exc:
                return ProviderStatus(provider, model, "unreachable", f"{settings.ollama_host}: {exc.__class__.__name__}")
            names = [m["name"] for m in resp.json().get("models", [])]
            if model not in names and f"{model}:latest" not in names:
                return ProviderStatus(provider, model, "model missing", f"run: ollama pull {model}")
            return ProviderStatus(provider, model, "ok")
        return _openai_style_check(provider, settings.compat_base_url, settings.compat_api_key or "not-needed", model)
    except Exception as exc:  # a status check must never take the caller down
        detail = redact(f"{exc.__class__.__name__}: {exc}", settings)
        return ProviderStatus(provider or "?", settings.model or "?", "error", detail)


def friendly_error(exc: BaseException, settings: Settings | None = None) -> str:
    """One line that says what went wrong with a model call and how to fix it."""
    name = exc.__class__.__name__
    text = str(exc)
    if isinstance(exc, ProviderError):
        return text
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
    return f"The model call failed ({name}): {text[:200]}"
