"""The home page: each pattern in two lines with its graph, the active model, a start button each."""

from __future__ import annotations

import streamlit as st

from core.patterns import all_patterns
from core.studio.render import plain_markdown
from ui.evidence.graph_view import graph_diagram
from ui.i18n import pattern_description, t
from ui.shell.nav import tool_links
from ui.shell.page_index import page_for
from ui.shell.sidebar import sidebar
from ui.shell.state import embedded_notice, provider_status


def home_page() -> None:
    st.set_page_config(page_title="Agentic RAG Studio", page_icon="🧭", layout="wide")
    settings, _ = sidebar(None, notice=False)
    st.title(t("app_title"))
    st.write(t("app_intro"))
    status = provider_status(settings)
    (st.success if status.ok else st.error)(f"**{t('home_model')}:** {plain_markdown(status.line())}")
    if settings.provider == "embedded":
        st.info(embedded_notice(settings), icon="ℹ️")
    links = tool_links()
    for column, (page, label, icon) in zip(st.columns(len(links) or 1), links):
        column.page_link(page, label=label, icon=icon)  # md-safe: tool_links' own labels
    st.subheader(t("patterns"))
    for pattern in all_patterns():
        with st.container(border=True):
            text, picture = st.columns([2, 3])
            with text:
                st.markdown(f"### {pattern.title}")  # md-safe: the registry's title
                st.markdown(pattern_description(pattern).replace("\n", "  \n"))
                page = page_for(pattern.id)
                if page:
                    st.page_link(page, label=f"{t('start')}: {pattern.title}", icon="▶️")  # md-safe: registry
                else:
                    st.caption(t("no_page"))
            with picture:
                graph_diagram(pattern.id)
