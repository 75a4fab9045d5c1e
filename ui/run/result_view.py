"""Everything under an answer: what the run can claim (ui.evidence.answer_checks), sources, trace, the graph path, export."""

from __future__ import annotations

import streamlit as st

from core.config import Settings
from core.studio.export import to_json, to_markdown
from core.studio.render import plain_markdown, safe_markdown
from ui.evidence.answer_checks import answer_checks
from ui.evidence.claim_marks import MARKS
from ui.evidence.graph_view import graph_diagram
from ui.evidence.sources import sources_panel
from ui.i18n import core_text, t
from ui.run.trace_panel import trace_panel
from ui.run.whatif import whatif_panel


def result_details(result: dict, settings: Settings, key: str, with_graph: bool = True) -> None:
    """Answer checks, then tabs: sources, trace, graph, export. ``key`` keeps widgets apart."""
    answer_checks(result)
    earlier_drafts(result)
    sources = result.get("sources") or []
    names = [f"{t('cited_sources')} ({len(sources)})", t("trace"), t("graph"), t("export")]
    tab_sources, tab_trace, tab_graph, tab_export = st.tabs(names)
    with tab_sources:
        sources_panel(sources)
    with tab_trace:
        trace_panel(result)
        whatif_panel(result, settings, key)
    with tab_graph:
        if with_graph:
            graph_diagram(result.get("pattern", ""), result)
        else:  # one diagram per page: older turns show their path as text
            st.markdown(" → ".join(f"`{n}`" for n in result.get("path") or []))  # md-safe: our node names
    with tab_export:
        name = f"{result.get('pattern', 'run')}-{result.get('thread_id', '')}"
        col_json, col_md = st.columns(2)
        col_json.download_button(t("export_json"), to_json(result, settings), file_name=f"{name}.json",
                                 mime="application/json", key=f"{key}_json", on_click="ignore")
        col_md.download_button(t("export_md"), to_markdown(result, settings), file_name=f"{name}.md",
                               mime="text/markdown", key=f"{key}_md", on_click="ignore")


def earlier_drafts(result: dict) -> None:
    """The drafts a reviewer changed before this answer stood: each with its decision and its marks."""
    drafts = result.get("drafts") or []
    if not drafts:
        return
    with st.expander(t("earlier_drafts", n=len(drafts))):
        for draft in drafts:
            decision = core_text(str(draft.get("decision") or ""))
            st.caption(t("draft_decision", decision=plain_markdown(decision)))
            st.markdown(safe_markdown(draft.get("answer") or ""))  # model text: through the safe renderer
            st.caption(" ".join(MARKS.get(c.get("verdict"), "❔") for c in draft.get("claims") or []))  # md-safe: emoji
