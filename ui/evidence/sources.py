"""Sources as numbered citations, each with an expander showing the chunk it came from."""

from __future__ import annotations

import streamlit as st

from core.studio.render import plain_markdown, safe_markdown
from ui.evidence.retrieval_view import rank_summary
from ui.i18n import t


def source_label(src: dict) -> str:
    where = src.get("url") or f"{src.get('source', '?')}, {t('page')} {src.get('page') or '-'}"
    ranked = any(name in src for name in ("dense", "keyword", "fused"))  # the ranks under it say more than one score
    score = f" · {t('score')} {src['score']:.3f}" if isinstance(src.get("score"), (int, float)) and not ranked else ""
    return safe_markdown(f"[{src.get('n')}] {src.get('title') or src.get('source', '?')} ({where}){score}")


def sources_panel(sources: list[dict]) -> None:
    if not sources:
        st.caption(t("no_cited_sources"))
        return
    for src in sources:
        with st.expander(source_label(src)):
            if src.get("url"):  # a bare URL: a link when it is http(s), text otherwise
                st.markdown(safe_markdown(src["url"], {src["url"]}))
            st.caption(plain_markdown(f"{src.get('source', '?')} · {t('page')} {src.get('page') or '-'} · "
                                      f"{src.get('collection') or ''} · {src.get('chunk_id') or ''}"))  # a file's name
            if any(name in src for name in ("dense", "keyword", "fused")):  # where each retriever ranked it
                st.caption(rank_summary(src))  # md-safe: t() messages of ints and floats
            st.text(src.get("text", ""))
