"""Which page file shows which pattern (the pages/ folder is auto-discovered by Streamlit)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# pattern id -> page file, relative to streamlit_app.py; the number orders the sidebar navigation
PATTERN_PAGES = {
    "basic": "pages/1_Basic_RAG.py",
    "adaptive": "pages/2_Adaptive_RAG.py",
    "self_rag": "pages/3_Self_RAG.py",
    "corrective": "pages/4_Corrective_RAG.py",
    "agentic": "pages/5_Agentic_RAG.py",
    "react": "pages/6_ReAct_agent.py",
    "react_native": "pages/6_ReAct_native_tools.py",
    "graph_rag": "pages/7_Graph_RAG.py",
}
# Variants a pattern reads from its "variant" state key, first = default. Core's Pattern has no
# field for them yet; a pattern that declares ``variants`` itself takes precedence.
VARIANTS = {"adaptive": ("domain", "complexity")}
REVIEW_PAGE = "pages/8_Review.py"
KNOWLEDGE_PAGE = "pages/9_Knowledge_base.py"
COMPARE_PAGE = "pages/10_Compare.py"
EVALUATION_PAGE = "pages/11_Evaluation.py"


def page_for(pattern_id: str) -> str | None:
    """The chat page of a pattern, if it has one."""
    page = PATTERN_PAGES.get(pattern_id)
    return page if page and (ROOT / page).is_file() else None


def pattern_variants(pattern) -> tuple:
    return tuple(getattr(pattern, "variants", ()) or VARIANTS.get(pattern.id, ()))


def pattern_title(pattern_id: str) -> str:
    """A pattern's title; the id itself for a pattern that no longer exists (old threads, saved comparisons)."""
    from core.patterns import get_pattern

    try:
        return get_pattern(pattern_id).title
    except KeyError:
        return pattern_id
