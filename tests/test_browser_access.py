"""In real browsers over Streamlit's websocket: wrong passwords are counted per address across sessions."""

from __future__ import annotations

import pytest
from browser_support import KO, browser, needs_chromium, running_server  # noqa: F401

pytestmark = needs_chromium
PASSWORD = "open sesame"


@pytest.fixture(scope="module")
def gated(sample_data_dir, tmp_path_factory):
    """A password-protected server whose lock clock stands still (tests/frozen_clock_server.py)."""
    with running_server(sample_data_dir, tmp_path_factory, "browser-access", "streamlit-access.log",
                        launcher=("tests/frozen_clock_server.py",), RAG_APP_PASSWORD=PASSWORD) as srv:
        yield srv


def submit(browser, url: str, password: str) -> str:
    """A new browser session submits one password; returns the alert it gets, or '' when the app opens."""
    context = browser.new_context(locale="ko-KR")
    try:
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        tab.goto(url)
        field = tab.locator(".st-key-access_password input")
        field.fill(password)
        tab.get_by_role("button", name=KO["enter"]).click()
        alert, opened = tab.locator("[data-testid=stAlert]"), tab.locator("[data-testid=stSidebar]")
        alert.or_(opened).first.wait_for()
        return alert.first.inner_text() if alert.count() else ""
    finally:
        context.close()


def test_three_wrong_guesses_from_three_sessions_lock_out_a_fourth_with_the_right_password(gated, browser):
    from core.store.access_limit import FREE_ATTEMPTS

    for _ in range(FREE_ATTEMPTS):
        assert KO["wrong_password"] in submit(browser, gated.url, "steak")
    shown = submit(browser, gated.url, PASSWORD)  # the right password, from a fresh session of the same address
    assert KO["locked_out"].split("{")[0] in shown  # not checked: the address waits
