"""Session state and shared resources: the user's settings, the open thread, cached lookups.

The settings live in ``st.session_state["prefs"]`` (plain values, never widgets), so they survive
reruns and page switches; widgets are re-seeded from them on every page.
"""

from __future__ import annotations

import hashlib
import threading

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from core.config import (
    ENDPOINT_KEYS,
    Settings,
    as_visitor,
    load_settings,
    with_visitor_embedder,
    with_visitor_endpoints,
)
from core.knowledge.hybrid import retrieval_mode
from core.llm.models import ProviderError, ProviderStatus, check, list_models, resolve_provider
from core.patterns.answer_review import review_mode
from core.secrets import PROVIDER_KEY_FIELDS, secret_values
from core.store.threads import get_registry, store_problem
from core.studio.render import plain_markdown
from ui.i18n import default_language, t

SETTING_KEYS = ("provider", "temperature", "max_tokens", "grader_model", "k", "max_rewrites", "max_generations",
                "max_iterations", "ollama_host", "compat_base_url", "openai_base_url", "embedding_provider",
                "embedding_model", "embedded_k", "embedded_doc_chars", "verify_claims", "retrieval", "grader_thresholds")
SECRET_KEYS = tuple(PROVIDER_KEY_FIELDS.values())  # typed in the sidebar; memory only
EMBEDDER_KEYS = ("embedding_provider", "embedding_model")  # a visitor's choice, applied by with_visitor_embedder


def prefs() -> dict:
    """The user's choices for this browser session, initialised once from the environment."""
    if "prefs" not in st.session_state:
        base = load_settings()
        try:  # "automatic" is resolved once per session, not on every rerun (it probes Ollama)
            provider = resolve_provider(base)
        except ProviderError:
            provider = "embedded"
        values = {key: getattr(base, key) for key in SETTING_KEYS}
        values["retrieval"] = retrieval_mode(base.retrieval)  # an unknown RAG_RETRIEVAL must not break the select box
        values.update(provider=provider, models={provider: base.model} if base.model else {},
                      review=False, review_answer=review_mode(base.review_answer), reviewer="",
                      lang=default_language(), **{key: "" for key in SECRET_KEYS})
        st.session_state["prefs"] = values
    return st.session_state["prefs"]


def bound(widget, name: str, label: str, store: dict | None = None, key: str | None = None, **kwargs):
    """A widget whose value lives in ``store`` (default: prefs), so it survives reruns and page switches.

    Streamlit resets a keyed widget to its default when another page renders it, so the widget is
    seeded from the store on a new page (or when code changed the store) and writes back through
    on_change, which runs before the script. It is not re-seeded on every run: pushing even an equal
    value to the browser undoes a change the user made while the run was going (quick clicks on a
    multiselect's tags came back).
    """
    store = prefs() if store is None else store
    key = key or f"sb_{name}"
    synced = st.session_state.setdefault("bound_synced", {})  # key -> (page, value) last exchanged
    if key not in st.session_state or synced.get(key) != (_page(), store[name]):
        st.session_state[key] = store[name]
        synced[key] = (_page(), store[name])
    return widget(label, key=key, on_change=_save, args=(store, name, key), **kwargs)


def _save(store: dict, name: str, key: str) -> None:
    store[name] = st.session_state[key]
    st.session_state.setdefault("bound_synced", {})[key] = (_page(), store[name])


def _page() -> str:
    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx else ""


def current_settings() -> Settings:
    """Settings from the session's choices on top of env / .env / secrets (data_dir stays from env)."""
    p = prefs()
    explicit = {key: p[key] for key in SETTING_KEYS if key not in ENDPOINT_KEYS and key not in EMBEDDER_KEYS}
    explicit["model"] = p["models"].get(p["provider"], "")
    # typed URLs, keys and embedders go through one gate: the server's key never goes to a URL typed
    # here, nor pays for an embedder the operator did not choose
    keys = {key: p[key] for key in SECRET_KEYS}
    settings = with_visitor_endpoints(load_settings(**explicit), urls={key: p[key] for key in ENDPOINT_KEYS}, keys=keys)
    settings = with_visitor_embedder(settings, p["embedding_provider"], p["embedding_model"], keys=keys)
    ctx = get_script_run_ctx()  # whose runs these are: runs in flight are bounded per visitor (core.run.run_slots)
    return as_visitor(settings, ctx.session_id if ctx else "")


def _digest(settings: Settings) -> str:
    """A cache key part that changes with the keys without putting them into the cache key."""
    secret = "|".join(secret_values(settings))
    return hashlib.sha256(secret.encode()).hexdigest()[:12]


@st.cache_data(ttl=60, show_spinner=False)
def _models(provider: str, urls: tuple, digest: str, _settings: Settings) -> list[str]:
    return list_models(_settings, provider)


def models_for(settings: Settings) -> list[str]:
    """Models the provider reports (cached a minute: the sidebar reruns on every click)."""
    urls = (settings.ollama_host, settings.compat_base_url, settings.openai_base_url)
    return _models(settings.provider, urls, _digest(settings), settings)


@st.cache_data(ttl=30, show_spinner=False)
def _status(provider: str, model: str, urls: tuple, digest: str, _settings: Settings) -> ProviderStatus:
    return check(_settings, provider)


def provider_status(settings: Settings) -> ProviderStatus:
    urls = (settings.ollama_host, settings.compat_base_url, settings.openai_base_url)
    return _status(settings.provider, settings.model, urls, _digest(settings), settings)


# ---------------------------------------------------------------- the open thread of each pattern


def stores_ready(settings: Settings, sidebar: bool = False) -> bool:
    """Whether threads and checkpoints can be used; if not, core's message is shown (never a traceback)."""
    problem = store_problem(settings)
    if problem:
        (st.caption if sidebar else st.error)(plain_markdown(problem))  # a path may hold Markdown marks
    return not problem



def current_thread(pattern_id: str, settings: Settings) -> str | None:
    """The open thread: a ``?thread=`` link wins (deep links, reloads), else this session's choice."""
    opened = st.session_state.setdefault("threads", {})
    linked = st.query_params.get("thread")
    if linked and linked != opened.get(pattern_id):
        thread = get_registry(settings).get(linked)
        if thread and thread["pattern"] == pattern_id:
            opened[pattern_id] = linked
        else:  # a stale link: the page says so (ui.shell.nav.linked_thread_notice) instead of opening another thread
            return None
    tid = opened.get(pattern_id)
    if tid and st.query_params.get("thread") != tid and get_registry(settings).get(tid):
        st.query_params["thread"] = tid
    return tid


def set_thread(pattern_id: str, thread_id: str | None) -> None:
    st.session_state.setdefault("threads", {})[pattern_id] = thread_id
    if thread_id:
        st.query_params["thread"] = thread_id
    elif "thread" in st.query_params:
        del st.query_params["thread"]


# ---------------------------------------------------------------- sample corpora, once per process


@st.cache_resource
def _indexed() -> tuple[set, threading.Lock]:
    """Data dirs whose samples are known to be indexed; shared by all sessions, guarded by the lock."""
    return set(), threading.Lock()


def ensure_samples(settings: Settings) -> bool:
    """Index the shipped sample corpora on first use, with a progress bar; False (and a message) on failure."""
    from core.knowledge.base import KnowledgeBase, store_generation

    # a store folder deleted while the app runs is recreated empty: its samples are indexed again
    key = (settings.chroma_url or str(settings.data_path.resolve()), settings.embedding_provider, settings.embedding_model,
           store_generation(settings))
    done, lock = _indexed()
    if key in done:
        return True
    with lock:
        if key in done:
            return True
        bar = st.progress(0.0, text=t("indexing_samples"))
        try:
            KnowledgeBase(settings).ensure_samples(
                progress=lambda n, total, label: bar.progress(min(n / max(total, 1), 1.0),
                                                              text=f"{t('indexing_samples')} {label}"))  # md-safe: sample ids
        except Exception as exc:  # a broken embedder must not take the page down
            bar.empty()
            st.error(t("samples_failed", error=plain_markdown(str(exc))))
            return False
        bar.empty()
        done.add(key)
    return ensure_model(settings)


def ensure_model(settings: Settings) -> bool:
    """Assemble the built-in model's file on first use (1.1 GB, once per machine) with a progress bar."""
    from core.llm.models import model_name, prepare_model

    if settings.provider != "embedded":
        return True
    key = ("model", model_name(settings, "embedded"), str(settings.model_cache_path))
    done, lock = _indexed()
    if key in done:
        return True
    with lock:
        if key in done:
            return True
        bar = st.progress(0.0, text=t("preparing_model"))
        try:
            prepare_model(settings, lambda n, total: bar.progress(  # md-safe: numbers
                min(n / max(total, 1), 1.0), text=f"{t('preparing_model')} {n // 2**20:,} / {total // 2**20:,} MiB"))
        except Exception as exc:  # a missing part must not take the page down
            bar.empty()
            st.error(t("model_failed", error=plain_markdown(str(exc))))
            return False
        bar.empty()
        done.add(key)
    return True


def embedded_notice(settings: Settings) -> str:
    """The notice about the built-in model that is in use."""
    from core.llm.models import model_name

    name = model_name(settings, "embedded")
    return t("embedded_notice", model=name, about=t("about_gemma" if name.startswith("gemma") else "about_qwen"))
