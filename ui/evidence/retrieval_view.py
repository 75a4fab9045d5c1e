"""What each retriever found: a chunk's ranks, and the Knowledge page's dense / keyword / fused columns."""

from __future__ import annotations

import streamlit as st

from core.knowledge import hybrid
from core.knowledge.korean_tokens import token_spans
from core.knowledge.loaders import KnowledgeError
from core.runtime.trace import RANKINGS
from core.studio.render import plain_markdown, safe_markdown
from ui.i18n import t

PREVIEW_CHARS = 600


def rank_summary(ranks: dict) -> str:
    """"Dense #2 (0.81) · Keyword #1 (3.2) · Fused #1 (0.033)": app text and numbers only."""
    parts = []
    for name in RANKINGS:
        value = ranks.get(name)
        if isinstance(value, dict) and value.get("rank") is not None:
            parts.append(t("rank_line", name=t(f"list_{name}"), rank=int(value["rank"]),
                           score=round(float(value.get("score") or 0.0), 4)))
        else:
            parts.append(t("not_listed", name=t(f"list_{name}")))
    return " · ".join(parts)


def highlighted(text: str, terms: list[str], limit: int = PREVIEW_CHARS) -> str:
    """``text`` as escaped Markdown with the words whose keyword token is one of ``terms`` in bold."""
    text = text[:limit]
    wanted, out, last = set(terms), [], 0
    for start, end, token in token_spans(text) if wanted else []:
        if token in wanted and start >= last:
            out += [plain_markdown(text[last:start]), f"**{plain_markdown(text[start:end])}**"]
            last = end
    out.append(plain_markdown(text[last:]))
    return "".join(out) + (" …" if len(text) == limit else "")


def _column(column, name: str, docs: list, terms: list[str]) -> None:
    column.markdown(f"**{t('list_' + name)}**")
    if not docs:
        column.caption(t("nothing_found"))
    for doc in docs:
        meta = doc.metadata
        box = column.container(border=True)
        chunk = meta.get("chunk_index")
        where = f"{meta.get('source', '?')} · {t('page')} {meta.get('page') or '-'}" + (
            f" · #{int(chunk) + 1}" if chunk is not None else "")
        box.caption(plain_markdown(where))
        box.caption(rank_summary(meta))  # md-safe: t() messages of ints and floats
        box.markdown(safe_markdown(highlighted(doc.page_content, terms)))


def retrieval_view(kb) -> None:
    """The retrieval test: one query, three lists side by side, the query's keyword tokens highlighted."""
    st.subheader(t("retrieval_test"))
    names = kb.names()
    if not names:
        return
    left, mid, right = st.columns([2, 4, 1])
    collection = left.selectbox(t("collection"), names, key="kb_test_collection")
    query = mid.text_input(t("query"), key="kb_test_query")
    k = right.number_input("k", 1, 20, 3, key="kb_test_k")
    st.caption(t("retrieval_view_help"))
    if not st.button(t("search"), key="kb_test_search"):
        return
    if not query.strip():
        st.warning(t("query_empty"), icon="⚠️")
        return
    try:
        found = hybrid.search(kb, [collection], query, int(k), "hybrid", explain=True)
        if found.problems:
            raise KnowledgeError(found.problems[0][1])
    except KnowledgeError as exc:
        st.error(plain_markdown(str(exc)), icon="⚠️")
        return
    terms = found.query_tokens
    st.caption(t("query_tokens", tokens=plain_markdown(" ".join(terms))) if terms else t("no_query_tokens"))
    if terms:
        st.caption(t("keyword_weight", weight=round(found.keyword_weight, 2)))
    for column, name in zip(st.columns(3), RANKINGS):
        _column(column, name, getattr(found, name), terms)
