"""Which page file shows what, declared in the order the sidebar lists them (the pages/ folder is auto-discovered).

A page file is numbered by its row here; ``tests/ui/test_page_index.py`` checks that this index and the files in
pages/ agree both ways, and that each file calls the screen its row names.
"""

from __future__ import annotations

from typing import NamedTuple


class Page(NamedTuple):
    """One page: its file (relative to streamlit_app.py) and what it shows."""

    file: str
    shows: str  # a pattern id (the chat page of that pattern) or a screen's name
    label: str = ""  # a screen's link text, a ui.i18n key (a pattern's link is the pattern's title)
    icon: str = "💬"


PAGES = (
    Page("pages/1_Basic_RAG.py", "basic"),
    Page("pages/2_RAG_Fusion.py", "rag_fusion"),
    Page("pages/3_Adaptive_RAG.py", "adaptive"),
    Page("pages/4_Self_RAG.py", "self_rag"),
    Page("pages/5_Corrective_RAG.py", "corrective"),
    Page("pages/6_Agentic_RAG.py", "agentic"),
    Page("pages/7_ReAct_agent.py", "react"),
    Page("pages/8_ReAct_native_tools.py", "react_native"),
    Page("pages/9_Graph_RAG.py", "graph_rag"),
    Page("pages/10_Auto.py", "auto"),
    Page("pages/11_Review.py", "review", "review_title", "⏸️"),
    Page("pages/12_Knowledge_base.py", "knowledge", "nav_knowledge", "📚"),
    Page("pages/13_Compare.py", "compare", "compare_title", "⚖️"),
    Page("pages/14_Evaluation.py", "evaluation", "eval_title", "📊"),
)


def pattern_pages() -> list[Page]:
    """The chat pages of the registered patterns, in sidebar order."""
    from core.patterns import pattern_ids

    known = set(pattern_ids())
    return [page for page in PAGES if not page.label and page.shows in known]


def screen_pages() -> list[Page]:
    """The pages beside the patterns (Review, Knowledge base, Compare, Evaluation), in sidebar order."""
    return [page for page in PAGES if page.label]


def page_for(pattern_id: str) -> str | None:
    """The chat page of a pattern, if it has one."""
    return next((page.file for page in pattern_pages() if page.shows == pattern_id), None)


def pattern_title(pattern_id: str) -> str:
    """A pattern's title; the id itself for a pattern that no longer exists (old threads, saved comparisons)."""
    from core.patterns import get_pattern

    try:
        return get_pattern(pattern_id).title
    except KeyError:
        return pattern_id
