"""In real browsers over Streamlit's websocket: wrong passwords are counted per address across sessions."""

from __future__ import annotations

import pytest

from support.browser_support import KO, browser, needs_chromium, running_server  # noqa: F401
from support.forwarding_proxy import ForwardingProxy

pytestmark = needs_chromium
PASSWORD = "open sesame"


@pytest.fixture(scope="module")
def gated(sample_data_dir, tmp_path_factory):
    """A password-protected server whose lock clock stands still (tests/support/frozen_clock_server.py)."""
    with running_server(sample_data_dir, tmp_path_factory, "browser-access", "streamlit-access.log",
                        launcher=("tests/support/frozen_clock_server.py",), RAG_APP_PASSWORD=PASSWORD) as srv:
        yield srv


def submit(browser, url: str, password: str, forwarded_for: str = "") -> str:
    """A new browser session submits one password; returns the alert it gets, or '' when the app opens.

    ``forwarded_for``: the session goes through a proxy on 127.0.0.1 that passes ``X-Forwarded-For: <it>`` on
    (tests/support/forwarding_proxy.py), on every connection, the websocket's included.
    """
    proxy = ForwardingProxy(int(url.rsplit(":", 1)[1]), forwarded_for) if forwarded_for else None
    url = proxy.url if proxy else url
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
        if proxy:
            proxy.close()


def test_three_wrong_guesses_from_three_sessions_lock_out_a_fourth_with_the_right_password(gated, browser):
    from core.store.access_limit import FREE_ATTEMPTS

    for _ in range(FREE_ATTEMPTS):
        assert KO["wrong_password"] in submit(browser, gated.url, "steak")
    shown = submit(browser, gated.url, PASSWORD)  # the right password, from a fresh session of the same address
    assert KO["locked_out"].split("{")[0] in shown  # not checked: the address waits


@pytest.fixture
def fresh_gate(sample_data_dir, tmp_path_factory, request):
    """A password-protected server of its own (frozen lock clock), with the environment the test names."""
    env = {"RAG_APP_PASSWORD": PASSWORD, **getattr(request, "param", {})}
    with running_server(sample_data_dir, tmp_path_factory, "browser-forged", "streamlit-access-forged.log",
                        launcher=("tests/support/frozen_clock_server.py",), args=("--server.address", "127.0.0.1"),
                        **env) as srv:  # an IPv4 socket: peers are 127.0.0.1, whose X-Forwarded-For uvicorn believes
        yield srv


def test_a_new_forwarded_for_header_per_session_does_not_reset_the_lockout(fresh_gate, browser):
    """The browser connects from 127.0.0.1, whose X-Forwarded-For Streamlit's server believes: each session names
    another address. No proxy is trusted (RAG_TRUSTED_PROXIES unset), so every guess also counts for everybody."""
    from core.store.access_limit import FREE_ATTEMPTS

    for n in range(FREE_ATTEMPTS):
        assert KO["wrong_password"] in submit(browser, fresh_gate.url, "steak", f"203.0.113.{n + 1}")
    shown = submit(browser, fresh_gate.url, PASSWORD, "203.0.113.99")  # a fifth address, the right password
    assert KO["locked_out"].split("{")[0] in shown


@pytest.mark.parametrize("fresh_gate", [{"RAG_TRUSTED_PROXIES": "127.0.0.1"}], indirect=True)
def test_behind_a_trusted_proxy_guesses_are_counted_per_forwarded_address(fresh_gate, browser):
    from core.store.access_limit import FREE_ATTEMPTS

    for _ in range(FREE_ATTEMPTS):
        assert KO["wrong_password"] in submit(browser, fresh_gate.url, "steak", "203.0.113.7")
    assert KO["locked_out"].split("{")[0] in submit(browser, fresh_gate.url, PASSWORD, "203.0.113.7")
    assert submit(browser, fresh_gate.url, PASSWORD, "198.51.100.1") == ""  # another client of the proxy gets in
