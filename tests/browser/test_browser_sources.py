"""End to end in a real browser: a new collection with a description becomes a route of Adaptive RAG.

Playwright drives Debian's Chromium against `streamlit run`. The model is a scripted
OpenAI-compatible server (tests/support/fake_openai.py) reached through the app's real openai-compatible
provider: its router picks the new collection only if the router prompt lists it, so the test
shows the upload, the description and the routing working together. Screenshots: test-artifacts/.
"""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from core.prompts import workflow as P
from support.browser_support import KO, RUN_TIMEOUT_MS, browser, needs_chromium, page, running_server, shot  # noqa: F401
from support.fake_openai import FakeOpenAI
from support.paths import CORPORA

pytestmark = needs_chromium

GUIDE = CORPORA / "apiary_handbook.md"
COLLECTION, DISPLAY = "apiary_handbook", "Apiary handbook"
DESCRIPTION = "Harbor Hill Apiary handbook: colonies, hive inspections, honey harvest and pest treatment."
QUESTION = "When is the honey harvested at Harbor Hill?"
ROUTER = P.ROUTER_SYSTEM.split("{")[0][:40]


def reply(messages: list[dict]) -> str:
    """The router picks the apiary collection when its prompt offers it; every answer cites [1]."""
    system = str(messages[0]["content"]) if messages else ""
    if system.startswith(ROUTER):
        return json.dumps({"route": COLLECTION if f"- {COLLECTION}: {DISPLAY}. {DESCRIPTION}" in system else "direct"})
    return "The main honey harvest is in late July [1]."


@pytest.fixture(scope="module")
def model():
    with FakeOpenAI(reply) as fake:
        yield fake


@pytest.fixture(scope="module")
def server(sample_data_dir, tmp_path_factory, model):
    with running_server(sample_data_dir, tmp_path_factory, "browser-sources", "streamlit-server-sources.log",
                        RAG_PROVIDER="openai-compatible", RAG_COMPAT_BASE_URL=model.url) as srv:
        yield srv


def commit(page, selector: str, text: str) -> None:
    """Type into a text box and leave it, so Streamlit has the value before the next click."""
    box = page.locator(selector)
    box.fill(text)
    box.press("Tab")
    time.sleep(1.0)


def test_upload_a_described_collection_then_adaptive_routes_to_it(server, model, page):
    page.goto(f"{server.url}/Knowledge_base")
    page.get_by_role("heading", name=KO["upload"]).wait_for(timeout=RUN_TIMEOUT_MS)
    page.locator("[data-testid=stFileUploaderDropzoneInput]").first.set_input_files(str(GUIDE))
    page.get_by_text(GUIDE.name).first.wait_for()
    commit(page, ".st-key-kb_new_name input", COLLECTION)
    commit(page, ".st-key-kb_new_display input", DISPLAY)
    commit(page, ".st-key-kb_new_description textarea", DESCRIPTION)
    shot(page, "sources-1-upload")
    page.get_by_role("button", name=KO["index"], exact=True).click()
    page.get_by_text(KO["indexed"].format(source=GUIDE.name, n=1, collection=COLLECTION)).wait_for(timeout=RUN_TIMEOUT_MS)
    shot(page, "sources-2-indexed")

    page.goto(f"{server.url}/Adaptive_RAG")
    sources = page.locator(".st-key-sb_sources_adaptive")
    sources.locator(f"[data-tag][aria-label='{DISPLAY}']").wait_for(timeout=RUN_TIMEOUT_MS)  # offered by default
    page.locator("[data-testid=stChatInput] textarea").fill(QUESTION)
    page.keyboard.press("Enter")
    answer = page.locator("[data-testid=stChatMessage]").last
    answer.locator("[data-testid=stTab]").first.wait_for(timeout=RUN_TIMEOUT_MS)
    answer.locator("[data-testid=stTab]", has_text=KO["trace"]).click()
    answer.locator("[data-testid=stDataFrame]").first.wait_for()
    answer.get_by_text("search_collection").first.wait_for()  # the path went through the collection search
    shot(page, "sources-3-trace")

    router_prompts = [r["messages"][0]["content"] for r in model.requests
                      if str(r["messages"][0]["content"]).startswith(ROUTER)]
    assert router_prompts and DESCRIPTION in router_prompts[-1]  # the page's description reached the router
    db = sqlite3.connect(server.data_dir / "threads.sqlite")
    result = json.loads(db.execute("SELECT result FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0])
    route = next(e for e in result["trace"] if e["kind"] == "route")
    assert (route["target"], route["verdict"]) == (COLLECTION, DISPLAY)  # the trace names it by its display name
    assert {s["collection"] for s in result["sources"]} == {COLLECTION}
    cells = answer.locator("[data-testid=stDataFrame] [role=gridcell]", has_text=DISPLAY)
    # The grid draws on a canvas; its cells exist as a hidden accessibility table, so wait for
    # them to be attached (not visible), and only after the answer has rendered.
    cells.first.wait_for(state="attached", timeout=60_000)
    assert cells.count() >= 1, "the trace table shows the route by the collection's display name"
