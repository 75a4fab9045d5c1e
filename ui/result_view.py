"""Everything under an answer: what the run can claim, sources, trace, the graph path, export."""

from __future__ import annotations

import streamlit as st

from core.config import Settings
from core.export import to_json, to_markdown
from core.outcome import outcome_tone, summary
from core.render import plain_markdown, safe_markdown
from ui.graph_view import graph_diagram
from ui.i18n import core_text, outcome_text, t, termination_label
from ui.sources import sources_panel
from ui.trace_panel import trace_panel
from ui.whatif import whatif_panel

TONES = {"good": ("green", "✅"), "neutral": ("gray", "ℹ️"), "warning": ("orange", "⚠️"), "error": ("red", "⛔")}
NO_CITATION_NOTE = {"declined", "rejected", "error", "paused"}  # no answer to hold citations


def answer_checks(result: dict) -> None:
    """Under an answer: an outcome badge that claims only what was checked, why the run stopped,
    whether its citation markers point at listed sources, and whether the answer was cut off."""
    if result.get("interrupted"):
        st.badge(outcome_text("paused"), icon="⏸️", color="blue")
        return
    checks = summary(result)
    status = checks["status"]
    color, icon = TONES[outcome_tone(status)]
    message = safe_markdown(core_text(result.get("termination_message") or ""))  # may quote model text
    st.badge(outcome_text(status), icon=icon, color=color, help=message or None)
    if not result.get("error"):
        stopped = f"{t('stopped')}: {termination_label(result.get('termination_reason', ''))}"
        st.caption(f"{stopped} — {message}" if message else stopped)  # md-safe: message went through safe_markdown
    citations = checks.get("citations")
    if citations and status not in NO_CITATION_NOTE:
        if citations["status"] == "unknown":
            st.warning(t("citations_unknown", markers=plain_markdown(", ".join(citations["unknown"])),  # the model's text
                         n=citations["listed"]), icon="⚠️")  # md-safe: markers plain, n an int
        elif citations["status"] == "ok":
            st.caption(t("citations_ok", markers=plain_markdown(", ".join(citations["cited"]))))
        elif citations["listed"]:
            st.caption(t("citations_none"))
    for node, cut in (checks.get("truncated") or {}).items():
        if cut["cut_off"] == cut["calls"]:
            st.warning(t("truncated"), icon="✂️")
        else:
            st.warning(t("truncated_some", cut=cut["cut_off"], calls=cut["calls"], node=node), icon="✂️")  # md-safe: ints, node


def result_details(result: dict, settings: Settings, key: str, with_graph: bool = True) -> None:
    """Answer checks, then tabs: sources, trace, graph, export. ``key`` keeps widgets apart."""
    answer_checks(result)
    sources = result.get("sources") or []
    names = [f"{t('sources')} ({len(sources)})", t("trace"), t("graph"), t("export")]
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
