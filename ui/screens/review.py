"""The Review page: every run paused for a human decision, across all patterns, oldest first."""

from __future__ import annotations

import streamlit as st

from core.store.history import pending_reviews
from core.studio.render import safe_markdown, source_links
from ui.i18n import t, termination_label
from ui.run.result_view import result_details
from ui.run.review_panel import resume_live, review_controls, waits_for
from ui.shell.page_index import page_for, pattern_title
from ui.shell.sidebar import sidebar
from ui.shell.state import bound, ensure_samples, prefs, stores_ready


def review_page() -> None:
    st.set_page_config(page_title=t("review_title"), page_icon="⏸️", layout="wide")
    settings, _ = sidebar(None)
    st.title(t("review_title"))
    st.caption(t("review_intro"))
    if not stores_ready(settings) or not ensure_samples(settings):
        return
    prefs().setdefault("reviewer", "")
    bound(st.text_input, "reviewer", t("reviewer_name"), max_chars=80)  # recorded with each decision made here
    for i, done in enumerate(st.session_state.get("reviewed", [])):
        _resumed(done, settings, i)
    items = pending_reviews(settings)
    if not items:
        st.info(t("no_reviews"))
    for item in items:
        with st.container(border=True, key=f"review_{item['thread_id']}"):
            st.subheader(f"{pattern_title(item['pattern'])}: {safe_markdown(item['question'] or item['title'])}")
            paused = str(item["paused_at"])[:19].replace("T", " ")
            st.caption(f"{t('paused_at')} {paused} UTC · {waits_for(item['interrupt'])} · {item['thread_id']}")  # md-safe: ids
            decision = review_controls(item["thread_id"], item["interrupt"])
            if decision is not None:
                final = resume_live(item["thread_id"], decision, settings)
                if final:
                    st.session_state.setdefault("reviewed", []).insert(0, final["result"])
                st.rerun()


def _resumed(result: dict, settings, index: int) -> None:
    """A run this session resumed: its answer, why it stopped, and a link to its conversation."""
    with st.container(border=True):
        reason = t("run_paused") if result.get("interrupted") else termination_label(result.get("termination_reason", ""))
        st.success(t("resumed", pattern=pattern_title(result.get("pattern", "")), reason=reason))  # md-safe: our labels
        st.markdown(f"**{t('question')}:** {safe_markdown(result.get('question', ''))}")
        if result.get("error"):
            st.error(safe_markdown(result["error"]), icon="⚠️")
        elif result.get("answer"):
            st.markdown(safe_markdown(result["answer"], source_links(result)))
        page = page_for(result.get("pattern", ""))
        if page:
            st.page_link(page, label=t("open_chat"), icon="💬", query_params={"thread": result["thread_id"]})
        if not result.get("interrupted"):
            result_details(result, settings, key=f"reviewed_{index}", with_graph=False)
