"""In real browsers over Streamlit's websocket: read-only visitors each write into threads of their own (issue #36)."""

from __future__ import annotations

import pytest

from core.config import load_settings
from core.store.threads import get_registry
from support.browser_support import KO, RUN_TIMEOUT_MS, browser, needs_chromium, running_server  # noqa: F401

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def read_only(sample_data_dir, tmp_path_factory):
    """A read-only server with a scripted model that answers at once (tests/support/scripted_server.py)."""
    with running_server(sample_data_dir, tmp_path_factory, "browser-read-only", "streamlit-read-only.log",
                        launcher=("tests/support/scripted_server.py",), RAG_READ_ONLY="true",
                        RAG_TEST_ANSWER_DELAY="0") as srv:
        yield srv


def _visitor(browser):
    context = browser.new_context(locale="ko-KR", viewport={"width": 1400, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    return context, tab


def _ask(tab, question: str, answers: int) -> str:
    """Ask; wait for the ``answers``-th answer of the page to be finished; return the thread id in the URL."""
    tab.locator("[data-testid=stChatInput] textarea").fill(question)
    tab.keyboard.press("Enter")
    tab.locator("[data-testid=stChatMessage] [data-testid=stTab]").nth(answers - 1).wait_for(timeout=RUN_TIMEOUT_MS)
    tab.wait_for_url("**thread=*")
    return tab.url.split("thread=")[1]


def test_a_visitor_who_asks_in_another_visitors_thread_gets_a_thread_of_their_own(read_only, browser):
    a_context, a = _visitor(browser)
    b_context, b = _visitor(browser)
    try:
        a.goto(f"{read_only.url}/Basic_RAG")
        thread_a = _ask(a, "스테이크 메뉴의 가격은 얼마인가요?", 1)
        b.goto(f"{read_only.url}/Basic_RAG?thread={thread_a}")  # B opens A's thread (the sidebar lists it too)
        b.locator("[data-testid=stChatMessage] [data-testid=stTab]").first.wait_for()
        assert "스테이크 메뉴의 가격은" in b.locator("[data-testid=stChatMessage]").first.inner_text()  # B reads it
        b.locator("[data-testid=stChatInput] textarea").fill("와인 목록을 알려주세요")
        b.keyboard.press("Enter")
        b.wait_for_url(lambda url: "thread=" in url and not url.endswith(thread_a), timeout=RUN_TIMEOUT_MS)
        thread_b = b.url.split("thread=")[1]
        b.locator("[data-testid=stChatMessage] [data-testid=stTab]").first.wait_for(timeout=RUN_TIMEOUT_MS)
        assert _ask(a, "파스타는 얼마인가요?", 2) == thread_a  # A goes on in A's own thread
        b.goto(f"{read_only.url}/Basic_RAG?thread={thread_a}")  # what B is told there
        b.get_by_text(KO["others_thread"].split(":")[0]).first.wait_for()
    finally:
        a_context.close()
        b_context.close()
    registry = get_registry(load_settings(data_dir=str(read_only.data_dir)).data_path)
    assert [r["question"] for r in registry.runs(thread_a)] == ["스테이크 메뉴의 가격은 얼마인가요?", "파스타는 얼마인가요?"]
    assert [r["question"] for r in registry.runs(thread_b)] == ["와인 목록을 알려주세요"]
