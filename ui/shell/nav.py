"""Navigation drawn by the app (the automatic page list is hidden in .streamlit/config.toml): grouped
sidebar links on every page, the same links on the home page, and what a stale ``?thread=`` link says."""

from __future__ import annotations

import streamlit as st

from core.config import Settings
from core.store.threads import get_registry
from ui.i18n import t
from ui.shell.page_index import page_for, pattern_pages, pattern_title, screen_pages

HOME = "streamlit_app.py"


def tool_links() -> list[tuple[str, str, str]]:
    """(page file, label, icon) of each page beside the patterns, in the order of the page index."""
    return [(page.file, t(page.label), page.icon) for page in screen_pages()]


def nav_links() -> None:
    """Home, the patterns' chat pages, then Review / Knowledge / Compare / Evaluation: the page index's order."""
    st.page_link(HOME, label=t("home"), icon="🏠")
    st.caption(t("patterns"))
    for page in pattern_pages():
        st.page_link(page.file, label=pattern_title(page.shows), icon=page.icon)  # md-safe: the registry's title
    st.divider()
    for page, label, icon in tool_links():
        st.page_link(page, label=label, icon=icon)  # md-safe: tool_links' own labels


def linked_thread_notice(pattern_id: str, settings: Settings) -> bool:
    """Say so when ``?thread=`` names no conversation of this page; True when it did (the link is dropped)."""
    linked = st.query_params.get("thread")
    if not linked:
        return False
    thread = get_registry(settings).get(linked)
    if thread and thread["pattern"] == pattern_id:
        return False
    if thread and page_for(thread["pattern"]):
        st.info(t("thread_elsewhere", pattern=pattern_title(thread["pattern"])), icon="↪️")
        st.page_link(page_for(thread["pattern"]), label=t("open_there"), icon="💬", query_params={"thread": linked})
    else:
        st.warning(t("thread_missing"), icon="⚠️")
    return True
