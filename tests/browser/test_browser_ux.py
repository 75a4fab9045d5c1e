"""In a real browser: the app's own grouped sidebar links, and Enter in the Evaluation form starting nothing."""

from __future__ import annotations

from support.browser_support import KO, browser, nav, needs_chromium, page, server, shot  # noqa: F401

pytestmark = needs_chromium


def test_the_sidebar_starts_with_home_and_the_automatic_list_is_hidden(server, page):
    page.goto(server.url)
    page.get_by_role("heading", name=KO["app_title"]).first.wait_for()
    links = page.locator("[data-testid=stSidebar] [data-testid=stPageLink]")
    links.first.wait_for()
    labels = [text.strip() for text in links.all_inner_texts()]
    assert labels[0].endswith(KO["home"]) and "Basic RAG" in labels[1], labels
    assert page.locator("[data-testid=stSidebarNav]").count() == 0  # no "streamlit app" entry
    assert not [label for label in labels if "streamlit" in label.lower()]
    nav(page, KO["eval_title"])
    page.get_by_role("heading", name=KO["eval_title"]).first.wait_for()
    nav(page, KO["home"])
    page.get_by_role("heading", name=KO["app_title"]).first.wait_for()
    shot(page, "ux-1-nav")


def test_enter_in_the_evaluation_number_field_does_not_start_a_run(server, page):
    page.goto(f"{server.url}/Evaluation")
    field = page.locator("[class*=st-key-eval_limit_] input")  # the key names the question set
    field.wait_for()
    field.fill("1")
    field.press("Enter")
    page.wait_for_timeout(5000)  # a submitted form shows its progress bar within a second
    shot(page, "ux-2-evaluation-enter")
    assert page.get_by_text(KO["eval_running"]).count() == 0
    assert not list((server.data_dir / "evals").glob("*.json"))
    assert page.get_by_role("button", name=KO["eval_run"]).is_enabled()  # the button still starts one
