"""In a real browser: a run left mid-way by a page switch is closed as cancelled, and the thread goes on.

The server is `streamlit run` with a scripted model whose answers take a few seconds
(tests/support/scripted_server.py); everything else is real. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import pytest

from core.config import load_settings
from core.runtime.trace import CANCELLED
from core.store.threads import get_registry
from support.browser_support import KO, RUN_TIMEOUT_MS, browser, nav, needs_chromium, page, running_server, shot  # noqa: F401
from ui.i18n import STRINGS as CLAIMS

FIRST, SECOND = "스테이크 메뉴의 가격은 얼마인가요?", "파스타는 얼마인가요?"
ANSWER = "시그니처 스테이크는 ₩35,000입니다 [1]."  # tests/support/app_support.happy_script

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def server(sample_data_dir, tmp_path_factory):
    with running_server(sample_data_dir, tmp_path_factory, "browser-runs", "streamlit-scripted-server.log",
                        launcher=("tests/support/scripted_server.py",), RAG_TEST_ANSWER_DELAY="6") as srv:
        yield srv


def send(page, question: str) -> None:
    page.locator("[data-testid=stChatInput] textarea").fill(question)
    page.keyboard.press("Enter")


def test_a_run_left_for_another_page_is_cancelled_and_the_next_turn_has_its_own_trace(server, page):
    page.goto(f"{server.url}/Basic_RAG")
    send(page, FIRST)
    # the run is under way: its thread is open and the retrieval step is done (the answer takes 6 s)
    page.locator("[data-testid=stExpander] summary", has_text="retrieve").first.wait_for(timeout=RUN_TIMEOUT_MS)
    page.wait_for_url("**thread=*")
    thread_id = page.url.split("thread=")[1]
    shot(page, "runs-1-running")
    nav(page, KO["review_title"])
    page.get_by_role("heading", name=KO["review_title"]).wait_for(timeout=RUN_TIMEOUT_MS)
    nav(page, "Basic RAG")

    cancelled = page.locator("[data-testid=stChatMessage]").nth(1)
    cancelled.get_by_text(CANCELLED.ko).first.wait_for(timeout=RUN_TIMEOUT_MS)
    shot(page, "runs-2-cancelled")
    registry = get_registry(load_settings(data_dir=str(server.data_dir)).data_path)
    assert registry.get(thread_id)["status"] == "cancelled"
    assert registry.last_run(thread_id)["status"] == "cancelled"
    assert ANSWER not in cancelled.inner_text()

    send(page, SECOND)
    messages = page.locator("[data-testid=stChatMessage]")
    messages.nth(3).locator("[data-testid=stTab]").first.wait_for(timeout=RUN_TIMEOUT_MS)
    assert page.url.endswith(f"thread={thread_id}")  # the same thread
    assert messages.count() == 4
    assert messages.nth(2).inner_text().strip().endswith(SECOND)
    answer = messages.nth(3)
    assert ANSWER in answer.inner_text()
    sources = answer.locator("[data-testid=stExpander]").filter(has_text="[1] ")  # not the sentence checks
    assert sources.count() and "restaurant_menu.md" in sources.first.inner_text()
    answer.locator("[data-testid=stTab]", has_text=KO["trace"]).click()
    table = answer.locator("[data-testid=stDataFrame]").first
    table.wait_for()
    shot(page, "runs-3-next-turn")
    runs = registry.runs(thread_id)
    assert [r["status"] for r in runs] == ["cancelled", "done"]
    assert runs[1]["result"]["question"] == SECOND and runs[1]["result"]["answer"] == ANSWER
    # the cancelled turn kept its own record: no trace table or sources borrowed from the next run
    assert cancelled.locator("[data-testid=stExpander]").count() == 0


def test_each_sentence_of_a_basic_answer_carries_its_mark_and_opens_to_its_evidence(server, page):
    page.goto(f"{server.url}/Basic_RAG")
    send(page, FIRST)
    answer = page.locator("[data-testid=stChatMessage]").last
    answer.locator("[data-testid=stTab]").first.wait_for(timeout=RUN_TIMEOUT_MS)
    badge = answer.get_by_text(CLAIMS["claims_line"][1].format(claims=1, supported=1))
    badge.first.wait_for()
    sentence = answer.locator("[data-testid=stExpander]", has_text="✅").filter(has_text="₩35,000")
    assert sentence.count() == 1
    sentence.locator("summary").click()
    quote = sentence.locator("[data-testid=stText]").first
    quote.wait_for()
    assert "35,000" in quote.inner_text()
    assert "restaurant_menu.md" in sentence.inner_text()
    shot(page, "runs-claims")
