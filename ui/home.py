"""The home page: each pattern in two lines with its graph, the active model, a start button each."""

from __future__ import annotations

import streamlit as st

from core.patterns import all_patterns
from ui.graph_view import graph_diagram
from ui.i18n import t
from ui.pages import COMPARE_PAGE, EVALUATION_PAGE, KNOWLEDGE_PAGE, REVIEW_PAGE, page_for
from ui.sidebar import sidebar
from ui.state import embedded_notice, provider_status


def home_page() -> None:
    st.set_page_config(page_title="Agentic RAG Studio", page_icon="🧭", layout="wide")
    settings, _ = sidebar(None, notice=False)
    st.title(t("app_title"))
    st.write(t("app_intro"))
    status = provider_status(settings)
    (st.success if status.ok else st.error)(f"**{t('home_model')}:** {status.line()}")
    if settings.provider == "embedded":
        st.info(embedded_notice(settings), icon="ℹ️")
    links = st.columns(4)
    links[0].page_link(REVIEW_PAGE, label=t("review_title"), icon="⏸️")
    links[1].page_link(KNOWLEDGE_PAGE, label=t("kb_title"), icon="📚")
    links[2].page_link(COMPARE_PAGE, label=t("compare_title"), icon="⚖️")
    links[3].page_link(EVALUATION_PAGE, label=t("eval_title"), icon="📊")
    st.subheader(t("patterns"))
    for pattern in all_patterns():
        with st.container(border=True):
            text, picture = st.columns([2, 3])
            with text:
                st.markdown(f"### {pattern.title}")
                st.markdown(pattern.description.replace("\n", "  \n"))
                page = page_for(pattern.id)
                if page:
                    st.page_link(page, label=f"{t('start')}: {pattern.title}", icon="▶️")
                else:
                    st.caption(t("no_page"))
            with picture:
                graph_diagram(pattern.id)
