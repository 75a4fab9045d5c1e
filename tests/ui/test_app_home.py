"""AppTest of the home page and of every page file: each renders without a traceback."""

from pathlib import Path

import pytest

from core.patterns import all_patterns
from core.studio.render import plain_markdown
from support.app_support import ROOT, app_data, assert_clean, mermaid, open_page, scripted, texts  # noqa: F401
from ui.shell.page_index import page_for

PAGES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))


def test_home_shows_each_pattern_with_its_graph_the_model_status_and_a_start_link(app_data, scripted):
    at = open_page()
    patterns = all_patterns()
    shown = texts(at)
    for pattern in patterns:
        assert f"### {pattern.title}" in shown
        assert pattern.description.split("\n")[0] in shown
    diagrams = mermaid(at)
    assert len(diagrams) == len(patterns) and all("graph TD;" in d for d in diagrams)
    assert all("<p>__start__</p>" not in d for d in diagrams)  # tidy labels, no literal HTML
    # the status line is escaped (a server's model ids are its text): shown as written, not as Markdown
    assert at.success[0].value.startswith("**Active model:** " + plain_markdown("embedded (gemma-3-270m): ok"))
    links = [Path(link.proto.page).name for link in at.main.get("page_link")]
    assert len(links) == 4 + sum(1 for p in patterns if page_for(p.id))
    assert links[:4] == ["Review", "Knowledge_base", "Compare", "Evaluation"]
    assert "`gemma-3-270m`" in at.main.info[0].value and not at.sidebar.info


def test_home_reports_a_provider_that_cannot_be_used(app_data, scripted):
    at = open_page()
    at.sidebar.selectbox(key="sb_provider").set_value("openai").run()
    assert_clean(at)
    assert at.error[0].value == "**Active model:** " + plain_markdown("openai (gpt-4o-mini): not configured - set "
                                                                      "OPENAI_API_KEY")


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_with_the_shared_sidebar(app_data, scripted, page):
    at = open_page(page)
    assert at.sidebar.selectbox(key="sb_provider").value == "embedded"
    assert at.sidebar.button_group(key="sb_lang").value == "en"
    assert at.title[0].value
