"""The Knowledge base page: collections, uploads, chunk preview, retrieval test, delete, re-index."""

from __future__ import annotations

import streamlit as st

from core.config import DEFAULT_EMBEDDING_MODELS, EMBEDDING_PROVIDERS, Settings, with_visitor_embedder
from core.knowledge.base import RESERVED, KnowledgeBase, valid_collection_name
from core.knowledge.loaders import KnowledgeError
from core.knowledge.sources import SourceError, get_source, suggest_description, update_source
from core.studio.render import plain_markdown
from ui.evidence.calibration_view import calibration_section
from ui.evidence.graph_status import graph_status, start_graph_build
from ui.evidence.policy_view import policy_section
from ui.evidence.retrieval_view import retrieval_view
from ui.i18n import t
from ui.shell.sidebar import sidebar
from ui.shell.state import SECRET_KEYS, ensure_samples, prefs

PREVIEW_CHUNKS = 5
NEW_COLLECTION = ""  # the selectbox entry that asks for a new name (never a valid collection name)


def knowledge_page() -> None:
    st.set_page_config(page_title=t("kb_title"), page_icon="📚", layout="wide")
    settings, _ = sidebar(None)
    st.title(t("kb_title"))
    st.caption(t("kb_intro"))
    settings = _embedder(settings)
    if not ensure_samples(settings):
        return
    try:
        kb = KnowledgeBase(settings)
    except (ValueError, KnowledgeError) as exc:  # e.g. OpenAI embeddings without a key
        st.error(plain_markdown(str(exc)), icon="⚠️")
        return
    for message in st.session_state.pop("kb_messages", []):  # they name files: another user's text
        st.success(plain_markdown(message))
    if settings.read_only:  # core refuses the changes too; the page does not offer them
        st.info(t("read_only_kb"), icon="🔒")
    for message in st.session_state.pop("kb_errors", []):
        st.error(plain_markdown(message), icon="⚠️")
    st.subheader(t("collections"))
    for name in kb.names():
        _collection(kb, name, settings)
    if not settings.read_only:
        _upload(kb, settings)
    retrieval_view(kb)
    calibration_section(settings, kb)
    policy_section(settings, kb)


def _embedder(settings: Settings) -> Settings:
    """The session's embedder (stored with the other settings, so every page retrieves with it).

    Read-only deployments keep the configured one: a switch would re-embed collections every user shares.
    """
    if settings.read_only:
        st.caption(f"{t('embedder')}: {plain_markdown(embedding_label(settings))}")
        return settings
    p = prefs()
    with st.expander(f"{t('embedder')}: {plain_markdown(embedding_label(settings))}"):
        options = list(EMBEDDING_PROVIDERS)
        provider = st.selectbox(t("embedding_provider"), options, index=options.index(p["embedding_provider"]),
                                key="kb_embedding_provider")
        if provider != p["embedding_provider"]:
            p.update(embedding_provider=provider, embedding_model="")
            st.rerun()
        if provider != "embedded":
            p["embedding_model"] = st.text_input(t("embedding_model"), value=p["embedding_model"],
                                                 placeholder=DEFAULT_EMBEDDING_MODELS[provider],  # md-safe: our table
                                                 key="kb_embedding_model")
    chosen = with_visitor_embedder(settings, p["embedding_provider"], p["embedding_model"],
                                   keys={key: p[key] for key in SECRET_KEYS})
    if chosen.embedding_provider != p["embedding_provider"]:  # OpenAI embeddings without the visitor's own key
        st.warning(t("embedder_needs_key"), icon="🔑")
    return chosen


def embedding_label(settings: Settings) -> str:
    """provider:model of the embedder in use."""
    return f"{settings.embedding_provider}:{settings.embedding_model or DEFAULT_EMBEDDING_MODELS[settings.embedding_provider]}"


def _collection(kb: KnowledgeBase, name: str, settings: Settings) -> None:
    info = kb.info(name)
    source = get_source(kb, name)
    off = f" · {t('off')}" if not source.enabled else ""
    shown = f" · {plain_markdown(source.name)}" if source.name != name else ""  # a visitor may have typed it
    label = f"**{name}**{shown} · {info['chunks']} {t('chunks')} · {plain_markdown(info['embedding_model'])}{off}"
    with st.expander(label):  # md-safe: a collection id (letters, digits, . _ -), the rest plain
        st.caption(f"{t('embedding_model')}: {plain_markdown(info['embedding_model'])} · {t('documents')}: "
                   f"{len(info['sources'])}")
        if settings.read_only:  # the description is shown, not offered for editing
            st.caption(plain_markdown(source.description))
        elif name.lower() not in RESERVED:
            _describe(kb, name, settings)
        if info["embedding_model"] != kb.model_id:
            st.warning(t("mismatch", stored=plain_markdown(info["embedding_model"]), current=plain_markdown(kb.model_id)))
            if not settings.read_only and st.button(t("reindex", current=plain_markdown(kb.model_id)),
                                                    key=f"kb_reindex_{name}"):
                bar = st.progress(0.0)
                try:
                    n = KnowledgeBase(settings).reindex(name, lambda done, total, _: bar.progress(done / max(total, 1)))
                except Exception as exc:  # an unreachable embedding server: the old index stays
                    st.error(plain_markdown(str(exc)), icon="⚠️")
                    return
                st.session_state.setdefault("kb_messages", []).append(t("reindexed", collection=name, n=n))
                start_graph_build(settings, kb, name)  # unchanged chunks find their graph stored: nothing extracted
                st.rerun()
        graph_status(settings, kb, name)
        for source in info["sources"]:
            left, right = st.columns([4, 1])
            left.markdown(f"📄 {plain_markdown(source)}")  # an uploaded file's name is the uploader's text
            if not settings.read_only and right.button(t("delete_doc"), key=f"kb_del_{name}_{source}"):
                kb.delete_source(name, source)
                st.session_state.setdefault("kb_messages", []).append(t("deleted", what=f"{name}/{source}"))
                st.rerun()
        if info["sources"]:
            source = st.selectbox(t("preview"), info["sources"], key=f"kb_preview_{name}")
            for doc in kb.chunks(name, source, limit=PREVIEW_CHUNKS):
                st.caption(plain_markdown(f"{t('page')} {doc.metadata.get('page')} · {doc.id}"))
                st.text(doc.page_content[:500])
        if settings.read_only:
            return
        sure = st.checkbox(t("confirm_delete"), key=f"kb_sure_{name}")
        if st.button(t("delete_collection"), key=f"kb_delcol_{name}", disabled=not sure, type="primary"):
            kb.delete_collection(name)
            st.session_state.setdefault("kb_messages", []).append(t("deleted", what=name))
            st.rerun()


def _describe(kb: KnowledgeBase, name: str, settings: Settings) -> None:
    """Display name, description and switch of one collection, with a drafted description on request."""
    source = get_source(kb, name)
    drafts = st.session_state.setdefault("kb_drafts", {})
    if name in drafts:  # a suggestion replaces the text in the box, for the user to edit
        st.session_state[f"kb_desc_{name}"] = drafts.pop(name)
    elif f"kb_desc_{name}" not in st.session_state:
        st.session_state[f"kb_desc_{name}"] = source.description if source.described else ""
    if not source.described:
        st.warning(t("undescribed"))
    display = st.text_input(t("display_name"), value=source.name, key=f"kb_name_{name}")
    description = st.text_area(t("description"), key=f"kb_desc_{name}", help=t("description_help"), max_chars=600)
    enabled = st.toggle(t("enabled"), value=source.enabled, key=f"kb_enabled_{name}")
    left, right = st.columns(2)
    if left.button(t("suggest"), key=f"kb_suggest_{name}", icon="✨"):
        from core.llm.models import get_chat_model

        try:
            with st.spinner(t("suggest")):
                drafts[name] = suggest_description(kb, get_chat_model(settings, role="grader"), name)
        except Exception as exc:  # no chunks, provider down, unusable output: say so, keep the text
            st.error(t("suggest_failed", error=plain_markdown(str(exc))), icon="⚠️")
        else:
            st.rerun()
    if right.button(t("save_source"), key=f"kb_save_{name}", type="primary"):
        try:
            update_source(kb, name, display_name=display or name, description=description, enabled=enabled)
        except SourceError as exc:
            st.error(plain_markdown(str(exc)), icon="⚠️")
            return
        st.session_state.setdefault("kb_messages", []).append(t("source_saved", collection=name))
        st.rerun()


def _upload(kb: KnowledgeBase, settings: Settings) -> None:
    st.subheader(t("upload"))
    round_ = st.session_state.setdefault("kb_upload_round", 0)  # a new key empties the uploader after indexing
    files = st.file_uploader(t("files"), accept_multiple_files=True, key=f"kb_files_{round_}",
                             help=t("upload_limits", mb=settings.max_file_mb, pages=settings.max_pdf_pages,  # md-safe: ints
                                    chars=settings.max_file_chars))
    options = [NEW_COLLECTION, *kb.names()]
    collection = st.selectbox(t("collection"), options, key="kb_collection",
                              format_func=lambda name: t("new_collection") if name == NEW_COLLECTION else name)
    new = collection == NEW_COLLECTION
    if new:
        collection = st.text_input(t("new_collection_name"), value="documents", key="kb_new_name").strip()
        display = st.text_input(t("display_name"), key="kb_new_display")
        description = st.text_area(t("description"), key="kb_new_description", help=t("description_help"),
                                   max_chars=600)
    size_col, overlap_col = st.columns(2)
    chunk_size = size_col.number_input(t("chunk_size"), 100, 8000, settings.chunk_size, step=100, key="kb_size")
    overlap = overlap_col.number_input(t("chunk_overlap"), 0, 2000, settings.chunk_overlap, step=20, key="kb_overlap")
    if not st.button(t("index"), key="kb_index", type="primary"):
        return
    if not files:
        st.warning(t("no_files"))
        return
    if not valid_collection_name(collection or ""):
        st.error(t("bad_name"))
        return
    names = [f.name for f in files]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:  # the uploads are keyed by name: one would silently replace the other
        st.error(t("duplicate_uploads", name=plain_markdown(twice)))
        return
    if collection.lower() in RESERVED:
        st.error(t("reserved_name"))
        return
    if overlap >= chunk_size:
        st.error(f"{t('chunk_overlap')} < {t('chunk_size')}")
        return
    bar = st.progress(0.0)
    target = KnowledgeBase(settings.with_(chunk_size=int(chunk_size), chunk_overlap=int(overlap)), kb.embeddings)
    try:
        report = target.ingest([], collection, files={f.name: f.getvalue() for f in files},
                               progress=lambda done, total, label: bar.progress(  # md-safe: label plain, ints
                                   done / max(total, 1), text=f"{plain_markdown(label)}: {done}/{total}"))
    except KnowledgeError as exc:  # e.g. the collection was indexed with another embedder
        st.error(plain_markdown(str(exc)), icon="⚠️")
        return
    bar.empty()
    if new and report.added:  # the new collection is described as it is created
        update_source(kb, collection, display_name=display.strip() or None, description=description.strip() or None)
    if not report.added:
        for reason in report.errors.values():
            st.error(plain_markdown(reason), icon="⚠️")
        return
    start_graph_build(settings, target, collection)  # in the background: the collection's line shows its progress
    # rerun, so the collection list above shows what was just indexed; the outcome is shown after it
    st.session_state["kb_upload_round"] = round_ + 1
    st.session_state.setdefault("kb_messages", []).extend(
        t("indexed", source=source, n=n, collection=collection) for source, n in report.added.items())
    st.session_state.setdefault("kb_errors", []).extend(report.errors.values())
    st.rerun()
