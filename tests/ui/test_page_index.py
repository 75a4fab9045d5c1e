"""The declared page index (ui/shell/page_index.py) and the files in pages/ agree both ways, and the numbers of the
files follow the order the sidebar shows them."""

from __future__ import annotations

import ast
from pathlib import Path

from core.patterns import all_patterns
from support.paths import ROOT
from ui.i18n import STRINGS
from ui.shell.page_index import PAGES, page_for, pattern_pages, screen_pages


def shown_by(path: Path) -> str:
    """What a page file shows, read from its one call: ``chat_page("basic")`` -> basic, ``review_page()`` -> review."""
    calls = [node.value for node in ast.parse(path.read_text(encoding="utf-8")).body
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)]
    assert len(calls) == 1, f"{path.name}: a page makes one call"
    name, args = calls[0].func.id, calls[0].args
    if name == "chat_page":
        return args[0].value
    assert not args and name.endswith("_page"), f"{path.name}: {name}"
    return name.removesuffix("_page")


def test_every_page_file_is_in_the_index_and_every_row_has_its_file():
    files = sorted(f"pages/{path.name}" for path in (ROOT / "pages").glob("*.py"))
    assert sorted(page.file for page in PAGES) == files


def test_each_file_shows_what_its_row_says():
    assert [(page.file, shown_by(ROOT / page.file)) for page in PAGES] == [(page.file, page.shows) for page in PAGES]


def test_page_files_are_numbered_uniquely_in_sidebar_order():
    assert [int(Path(page.file).name.split("_", 1)[0]) for page in PAGES] == list(range(1, len(PAGES) + 1))
    assert len({page.shows for page in PAGES}) == len(PAGES)


def test_every_pattern_has_a_chat_page_listed_in_the_registry_order():
    """The sidebar lists the index's rows; the home page, Compare and Evaluation list the registry: same order."""
    assert [page.shows for page in PAGES if not page.label] == [pattern.id for pattern in all_patterns()]
    assert [page.shows for page in pattern_pages()] == [pattern.id for pattern in all_patterns()]
    assert all(page_for(pattern.id) for pattern in all_patterns())


def test_screens_follow_the_patterns_and_name_their_links():
    rows = [bool(page.label) for page in PAGES]
    assert rows == sorted(rows), "the chat pages of the patterns come first, then the other screens"
    assert [page.shows for page in screen_pages()] == ["review", "knowledge", "compare", "evaluation"]
    assert all(page.label in STRINGS for page in screen_pages())
