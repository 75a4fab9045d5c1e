"""Graph RAG's graph of a collection on the Knowledge page: ready, being built (refreshed live), or to build."""

from __future__ import annotations

import streamlit as st

from core.config import Settings
from core.knowledge import entity_graph as eg
from core.knowledge import graph_builds
from core.studio.render import plain_markdown
from ui.i18n import t

REFRESH_SECONDS = 2


def start_graph_build(settings: Settings, kb, collection: str) -> None:
    """Start the collection's graph build with the configured grader model (after an upload or a re-index)."""
    if not settings.graph_at_ingest:  # switched off: Graph RAG's first question (or the button) starts it
        return
    if graph_builds.build_after_ingest(settings, kb, collection) is None:
        st.session_state.setdefault("kb_errors", []).append(t("graph_no_model", collection=collection))


def graph_status(settings: Settings, kb, collection: str) -> None:
    """The graph line of one collection; while a build runs it refreshes itself every REFRESH_SECONDS."""
    build = graph_builds.current(settings, collection)
    if build is not None and build.running:
        _live(settings, kb, collection)
        return
    _line(settings, kb, collection, build)


@st.fragment(run_every=REFRESH_SECONDS)
def _live(settings: Settings, kb, collection: str) -> None:
    build = graph_builds.current(settings, collection)
    if build is None or not build.running:  # ended since the last refresh: the whole page shows the outcome
        st.rerun()
    st.progress(build.done / max(build.total, 1),  # md-safe: a collection id, a model name we chose, ints
                text=t("graph_building", model=plain_markdown(build.model), done=build.done, total=build.total or "?"))


def _line(settings: Settings, kb, collection: str, build) -> None:
    if build is not None and build.state == "failed":
        st.error(t("graph_failed", error=plain_markdown(build.error)), icon="⚠️")
    record = eg.stored_graph(settings, collection)
    if record is None:
        st.caption(t("graph_none"))
    else:
        _, digest = eg.collection_chunks(kb, collection, record.get("max_chunks") or eg.GRAPH_MAX_CHUNKS)
        key = "graph_ready" if record.get("complete") else "graph_partial"
        stale = "" if record.get("digest") == digest else f" · {t('graph_stale')}"
        st.caption(t(key, model=plain_markdown(record.get("model") or "?"), nodes=len(record.get("nodes") or []),
                     edges=len(record.get("edges") or []), done=len(record.get("done") or []),
                     chunks=int(record.get("chunks") or 0)) + stale)  # md-safe: stale is "" or our own t() text
    if not settings.read_only and st.button(t("graph_build"), key=f"kb_graph_{collection}"):
        if graph_builds.build_after_ingest(settings, kb, collection) is None:
            st.error(t("graph_no_model", collection=collection), icon="⚠️")  # md-safe: a collection id
            return
        st.rerun()
