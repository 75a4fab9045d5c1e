"""The sidebar every page shows: language, model settings, review switch, web status, threads."""

from __future__ import annotations

import time

import streamlit as st

from core.config import DEFAULT_CHAT_MODELS, PROVIDERS, Settings, load_settings
from core.knowledge.hybrid import MODES as RETRIEVAL_MODES
from core.llm.models import check, list_models, model_name
from core.patterns import get_pattern
from core.patterns.answer_review import REVIEW_MODES
from core.secrets import MIN_KEY_CHARS, PROVIDER_KEY_FIELDS, key_problem
from core.store.checkpoint import get_checkpointer
from core.store.threads import get_registry
from core.studio.render import plain_markdown, safe_markdown
from ui.i18n import LANGUAGES, t
from ui.shell.access import require_access
from ui.shell.nav import nav_links
from ui.shell.state import bound, current_settings, current_thread, embedded_notice, models_for, prefs, set_thread, stores_ready
from ui.shell.thresholds_view import thresholds_settings

STATUS_ICONS = {"running": "⏳", "done": "✅", "waiting": "⏸️", "failed": "⚠️", "cancelled": "⏹️", "interrupted": "⏹️"}
URL_FIELDS = {"openai": "openai_base_url", "ollama": "ollama_host", "openai-compatible": "compat_base_url"}
KEY_FIELDS = PROVIDER_KEY_FIELDS  # core.secrets keeps the one list of secret settings
MAX_THREADS_SHOWN = 30


def sidebar(pattern_id: str | None = None, notice: bool = True) -> tuple[Settings, dict]:
    """Render the sidebar; return the settings to run with and the per-run options.

    ``notice=False`` leaves the demo-model notice to the page (the home page shows it in the main area).
    Every page calls this first, so the password gate (if one is set) stands before every page.
    """
    require_access()
    p = prefs()
    with st.sidebar:
        nav_links()
        bound(st.segmented_control, "lang", t("language"), options=list(LANGUAGES), format_func=LANGUAGES.get,
              required=True)
        with st.expander(t("settings"), expanded=True):
            _model_settings(p)
        settings = current_settings()
        options = _run_options(p, pattern_id)
        web = t("web_ok") if settings.tavily_api_key else t("web_off")
        st.caption(f"{t('web_search')}: {web}")  # md-safe: one of our two labels
        if st.button(t("test_connection"), key="sb_test", width="stretch"):
            status = check(settings, negotiate=True)  # also what the endpoint honours (structured output, tools)
            shown = "  \n".join(plain_markdown(line) for line in [status.line(), *status.notes])  # a server's model ids
            (st.success if status.ok else st.error)(shown)  # md-safe: each line through plain_markdown above
        if notice and settings.provider == "embedded":
            st.info(embedded_notice(settings), icon="ℹ️")
        if pattern_id:
            _threads(pattern_id, settings)
    return settings, options


def _model_settings(p: dict) -> None:
    provider = bound(st.selectbox, "provider", t("provider"), options=list(PROVIDERS))
    _endpoint_fields(provider)
    models = p["models"]
    models.setdefault(provider, "")
    default = DEFAULT_CHAT_MODELS[provider]
    if provider == "embedded":
        models[provider] = models[provider] or model_name(load_settings(provider="embedded"), "embedded")
        bound(st.selectbox, provider, t("model"), store=models, key="sb_model_embedded",
              options=list_models(current_settings(), "embedded"))
    else:
        models[provider] = models[provider] or default
        listed = models_for(current_settings())
        if listed:
            options = listed if models[provider] in listed else [models[provider], *listed]
            bound(st.selectbox, provider, t("model"), store=models, key=f"sb_model_{provider}", options=options,
                  accept_new_options=True, help=t("model_help"))
        else:
            bound(st.text_input, provider, t("model"), store=models, key=f"sb_model_{provider}",
                  help=t("model_free_help"))
    bound(st.slider, "temperature", t("temperature"), min_value=0.0, max_value=2.0, step=0.05)
    bound(st.number_input, "max_tokens", t("max_tokens"), min_value=16, max_value=32768, step=64)
    bound(st.selectbox, "verify_claims", t("verify_claims"), options=["model", "rules", "off"], help=t("verify_claims_help"))
    if provider != "embedded":
        bound(st.text_input, "grader_model", t("grader_model"), help=t("grader_help"))
    with st.expander(t("retrieval")):
        labels = {mode: t(f"mode_{mode}") for mode in RETRIEVAL_MODES}  # in this run's language, fixed
        bound(st.selectbox, "retrieval", t("retrieval_mode"), options=list(RETRIEVAL_MODES), format_func=labels.get,
              help=t("retrieval_mode_help"))
        bound(st.slider, "k", t("k"), min_value=1, max_value=10)
        bound(st.number_input, "max_rewrites", t("max_rewrites"), min_value=0, max_value=10)
        bound(st.number_input, "max_generations", t("max_generations"), min_value=0, max_value=10)
        bound(st.number_input, "max_iterations", t("max_iterations"), min_value=1, max_value=20)
        if provider == "embedded":
            bound(st.slider, "embedded_k", t("embedded_k"), min_value=1, max_value=10, help=t("caps_help"))
            bound(st.number_input, "embedded_doc_chars", t("embedded_doc_chars"), min_value=100, max_value=4000,
                  step=100, help=t("caps_help"))
            st.caption(prompt_cache_line(current_settings()), help=t("prompt_cache_help"))  # md-safe: t() of ints
            st.caption(lookup_line(current_settings(), st.session_state.get("last_decoding")),  # md-safe: t() of ints
                       help=t("lookup_help"))
        thresholds_settings()


def prompt_cache_line(settings) -> str:
    """What the embedded model's prompt-state cache holds and saved (a server setting, shown, not chosen)."""
    from core.llm.embedded_llm import PROMPT_CACHE, USAGE

    if settings.embedded_cache_mb <= 0:
        return t("prompt_cache_off")
    stats, sent = PROMPT_CACHE.stats, USAGE["prompt_tokens"]
    skipped = sent - USAGE["prompt_eval_tokens"]
    return t("prompt_cache", used=stats.bytes_held // 2**20, cap=settings.embedded_cache_mb, n=stats.entries,
             skipped=skipped, sent=sent)


def lookup_line(settings, last: dict | None) -> str:
    """Whether the embedded model drafts from the prompt, and how many drafts the last run accepted."""
    if not settings.embedded_lookup:
        return t("lookup_off")
    if not last or not last.get("drafted"):
        return t("lookup_on")
    return t("lookup_last_run", accepted=last["accepted"], drafted=last["drafted"],
             pct=round(100 * last["accepted"] / last["drafted"]))


def _endpoint_fields(provider: str) -> None:
    """The server URL, only where visitors may choose their own (RAG_ALLOW_CUSTOM_ENDPOINTS), and their own key.

    A typed URL is never sent the server's key (core.config.with_visitor_endpoints): say so.
    """
    settings = current_settings()
    if settings.custom_endpoints and provider in URL_FIELDS:
        bound(st.text_input, URL_FIELDS[provider], t("base_url"),
              help=t("base_url_help") if provider in KEY_FIELDS else None)
        refused = settings.refused_urls.get(URL_FIELDS[provider])
        if refused:  # core.endpoints refused it: the configured server is used instead
            st.error(t("url_refused", reason=plain_markdown(refused)))  # it may quote the typed URL
    if provider in KEY_FIELDS:
        typed = bound(st.text_input, KEY_FIELDS[provider], t("api_key"), type="password")
        if key_problem(KEY_FIELDS[provider], typed or ""):  # refused in core too (Settings): never sent, never redacted
            st.error(t("key_too_short", n=MIN_KEY_CHARS))  # md-safe: a number


def _run_options(p: dict, pattern_id: str | None) -> dict:
    """Per-run options of the page's pattern: review pause and, where the pattern has them, variants."""
    if pattern_id is None:
        return {}
    pattern = get_pattern(pattern_id)
    options = {}
    variants = pattern.variants
    if variants:
        chosen = p.setdefault("variants", {})
        chosen.setdefault(pattern_id, variants[0])
        options["variant"] = bound(st.selectbox, pattern_id, t("variant"), store=chosen,
                                   key=f"sb_variant_{pattern_id}", options=list(variants))
    chosen = _sources(p, pattern_id)
    if chosen is not None:
        options["source_ids"] = chosen
    bound(st.toggle, "review", t("review"), disabled=not pattern.supports_review,
          help=None if pattern.supports_review else t("review_unsupported"))
    if pattern.supports_review and p["review"]:
        options["review"] = True
    p.setdefault("review_answer", "off")  # a session begun before answer review existed
    modes = {mode: t(f"review_answer_{mode}") for mode in REVIEW_MODES}  # in this run's language, fixed
    options["review_answer"] = bound(st.selectbox, "review_answer", t("review_answer"), options=list(REVIEW_MODES),
                                     format_func=modes.get)
    if pattern.supports_review or p["review_answer"] != "off":
        p.setdefault("reviewer", "")
        bound(st.text_input, "reviewer", t("reviewer_name"), max_chars=80)
    if "graph_wait" in pattern.reset:  # Graph RAG: wait for a graph still being built, or answer from what is built
        p.setdefault("graph_wait", current_settings().graph_wait)
        options["graph_wait"] = bool(bound(st.toggle, "graph_wait", t("graph_wait"), help=t("graph_wait_help")))
    return options


def _sources(p: dict, pattern_id: str) -> list[str] | None:
    """The page's sources multiselect (default: every enabled collection); None = all of them."""
    from core.knowledge.base import KnowledgeBase
    from core.knowledge.sources import active_sources

    try:
        sources = active_sources(KnowledgeBase(current_settings()))
    except Exception:  # an unreadable store: the page reports it; runs use every enabled collection
        return None
    if not sources:
        st.caption(t("no_sources"))
        return None
    ids, names = [s.id for s in sources], {s.id: s.name for s in sources}
    store = p.setdefault("sources", {})
    everything = f"{pattern_id}:all"
    if store.get(pattern_id) is None or set(store[pattern_id]) == set(store.get(everything, [])):
        store[pattern_id] = ids  # "all" stays all when collections are added
    store[pattern_id] = [i for i in store[pattern_id] if i in ids]
    store[everything] = ids
    chosen = bound(st.multiselect, pattern_id, t("sources"), store=store, key=f"sb_sources_{pattern_id}", options=ids,
                   format_func=lambda i: names.get(i, i), help=t("sources_help"))
    if not chosen:
        st.caption(t("no_sources_chosen"))
        return None
    return None if set(chosen) == set(ids) else list(chosen)


def _threads(pattern_id: str, settings: Settings) -> None:
    st.subheader(t("threads"))
    if not stores_ready(settings, sidebar=True):  # a damaged or unwritable store: the page says why
        return
    registry = get_registry(settings)
    if st.button(t("new_chat"), key="sb_new_chat", icon="➕", width="stretch"):
        set_thread(pattern_id, None)
        st.rerun()
    open_id = current_thread(pattern_id, settings)
    threads = registry.list(pattern=pattern_id, origin="chat")
    if not threads:
        st.caption(t("no_threads"))
    for thread in threads[:MAX_THREADS_SHOWN]:
        tid = thread["thread_id"]
        when = time.strftime("%m-%d %H:%M", time.localtime(thread["updated_at"]))
        label = f"{STATUS_ICONS.get(thread['status'], '')} {safe_markdown(thread['title'])} · {when}"
        if st.button(label, key=f"sb_open_{tid}", width="stretch", type="primary" if tid == open_id else "secondary",
                     help=t("status_" + thread["status"])):  # md-safe: the title went through safe_markdown
            set_thread(pattern_id, tid)
            st.rerun()
    current = registry.get(open_id) if open_id else None
    if current and settings.read_only:
        st.caption(t("read_only_threads"))
    elif current:
        with st.expander(f"{t('rename')} / {t('delete')}"):
            title = st.text_input(t("title"), value=current["title"], key=f"sb_title_{open_id}")
            if st.button(t("rename"), key=f"sb_rename_{open_id}") and title.strip():
                registry.rename(open_id, title)
                st.rerun()
            sure = st.checkbox(t("confirm_delete"), key=f"sb_sure_{open_id}")
            if st.button(t("delete"), key=f"sb_delete_{open_id}", disabled=not sure):
                registry.delete(open_id, get_checkpointer(settings))
                set_thread(pattern_id, None)
                st.rerun()
