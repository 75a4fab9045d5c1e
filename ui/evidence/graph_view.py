"""The pattern's graph as a Mermaid chart, with the path a run took highlighted."""

from __future__ import annotations

import streamlit as st

from core.studio.diagram import REVIEW_PREFIX, focused, highlight, pattern_mermaid, run_variant
from core.studio.render import plain_markdown
from ui.i18n import t


@st.cache_data(show_spinner=False)
def mermaid_text(pattern_id: str) -> str:
    """The diagram of a pattern; the graph is compiled but no model is called, so this is cheap."""
    from core.patterns import get_pattern

    return pattern_mermaid(get_pattern(pattern_id))  # a graph needs no run (no model, no key) to be drawn


def graph_diagram(pattern_id: str, result: dict | None = None) -> None:
    """The diagram alone (home page) or with a run's path (under an answer)."""
    try:
        text = mermaid_text(pattern_id)
    except Exception as exc:  # one broken pattern must not take the page down
        st.warning(plain_markdown(f"{pattern_id}: {exc.__class__.__name__}: {exc}"))
        return
    if result:
        path = result.get("path") or []
        paused = (result.get("interrupt") or {}).get("node") if result.get("interrupted") else None
        reviewed = bool(paused) or any(n.startswith(REVIEW_PREFIX) for n in path)
        text = focused(text, pattern_id, run_variant(pattern_id, path), review=reviewed)
        text = highlight(text, path, paused_at=paused, finished=not result.get("error"))
        st.caption(t("graph_legend"))
    else:  # a pattern's picture: its default variant, without the optional review pause
        text = focused(text, pattern_id)
    st.mermaid_chart(text, alt=f"{pattern_id} graph")
