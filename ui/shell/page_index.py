"""Which page file shows what, read from the pages themselves (the pages/ folder is auto-discovered).

Each thin page makes one call, ``chat_page("basic")`` or ``review_page()``; that call says what the
page shows, so adding a page file is all it takes for the links, the home page and the nav to find it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES_DIR = ROOT / "pages"
_SHOWS = re.compile(r"^(\w+)_page\((?:\s*['\"](\w+)['\"]\s*)?\)", re.MULTILINE)

def _order(path: Path) -> tuple:
    number = path.name.split("_", 1)[0]
    return (int(number) if number.isdigit() else 1_000, path.name)


@lru_cache(maxsize=1)
def page_files() -> dict[str, str]:
    """What each page shows -> its file relative to streamlit_app.py: a pattern id, or a page name
    (``review``, ``knowledge``, ``compare``, ``evaluation``), in the order of the file numbers."""
    shows: dict[str, str] = {}
    for path in sorted(PAGES_DIR.glob("*.py"), key=_order):
        match = _SHOWS.search(path.read_text(encoding="utf-8"))
        if match:
            shows[match.group(2) if match.group(1) == "chat" else match.group(1)] = f"pages/{path.name}"
    return shows


def page_for(pattern_id: str) -> str | None:
    """The chat page of a pattern, if it has one."""
    from core.patterns import pattern_ids

    return page_files().get(pattern_id) if pattern_id in pattern_ids() else None


def tool_page(name: str) -> str | None:
    """The page of a tool (``review``, ``knowledge``, ``compare``, ``evaluation``), if there is one."""
    return page_files().get(name)


SLOW_LLM_CALLS = 20  # a run that may make more calls takes minutes on the embedded model


def slow_patterns(settings) -> dict[str, int]:
    """Patterns that may make more than SLOW_LLM_CALLS model calls with these settings -> their bound."""
    from core.patterns import all_patterns

    bounds = {p.id: p.max_llm_calls(settings) for p in all_patterns()}
    return {pid: n for pid, n in bounds.items() if n > SLOW_LLM_CALLS}


def pattern_title(pattern_id: str) -> str:
    """A pattern's title; the id itself for a pattern that no longer exists (old threads, saved comparisons)."""
    from core.patterns import get_pattern

    try:
        return get_pattern(pattern_id).title
    except KeyError:
        return pattern_id
