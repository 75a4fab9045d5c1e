"""In a real browser: an answer with a sentence the documents lack pauses for review, the review waits across a
server restart, the sentence is dropped with one click, and the answer that stood (with its marks) is shown
again after another restart.

The server is `streamlit run` with a scripted model (tests/support/scripted_server.py) whose draft adds the chef's
birthday to the steak's price; everything else is real. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import pytest

from core.config import load_settings
from core.store.threads import get_registry
from support.browser_support import KO, RUN_TIMEOUT_MS, browser, needs_chromium, page, running_server, settled, shot  # noqa: F401

QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"  # the draft adds the chef's birthday, which no document holds
SUPPORTED = "시그니처 스테이크는 ₩35,000입니다 [1]."
BIRTHDAY = "라 포레스타 셰프의 생일은 1980년 5월 24일입니다."

pytestmark = [needs_chromium, pytest.mark.browser]


@pytest.fixture(scope="module")
def server(sample_data_dir, tmp_path_factory):
    with running_server(sample_data_dir, tmp_path_factory, "browser-answer-review", "streamlit-answer-review.log",
                        launcher=("tests/support/scripted_server.py",), RAG_TEST_ANSWER_DELAY="0",
                        RAG_TEST_ANSWER=f"{SUPPORTED} {BIRTHDAY}", RAG_REVIEW_ANSWER="unsupported") as srv:
        yield srv


def test_the_unsupported_sentence_is_dropped_with_one_click_and_the_answer_survives_a_restart(server, page):
    page.goto(f"{server.url}/Basic_RAG")
    page.locator("[data-testid=stChatInput] textarea").fill(QUESTION)
    page.keyboard.press("Enter")
    drop_all = page.get_by_role("button", name=KO["drop_unsupported"])
    drop_all.wait_for(timeout=RUN_TIMEOUT_MS)
    panel = page.locator("[data-testid=stMain], [data-testid=stMainBlockContainer]").first
    assert "1980년 5월 24일" in panel.inner_text() and "⚠️" in panel.inner_text()
    shot(page, "answer-review-paused")
    thread_id = page.url.split("thread=", 1)[1].split("&", 1)[0]
    assert get_registry(load_settings(data_dir=str(server.data_dir))).get(thread_id)["status"] == "waiting"

    server.stop()  # the review is left open across a restart: the draft waits in the checkpoint
    server.start()
    page.goto(f"{server.url}/Basic_RAG?thread={thread_id}")
    drop_all = page.get_by_role("button", name=KO["drop_unsupported"])
    drop_all.wait_for(timeout=RUN_TIMEOUT_MS)
    settled(page)  # the page's first run after the restart: a click during it was lost once (120 s, no answer)
    drop_all.click()
    answer = page.locator("[data-testid=stChatMessage]").last
    answer.locator("[data-testid=stTab]").first.wait_for(timeout=RUN_TIMEOUT_MS)
    _shows_the_reviewed_answer(answer)
    shot(page, "answer-review-dropped")

    server.stop()
    server.start()
    page.goto(f"{server.url}/Basic_RAG?thread={thread_id}")
    answer = page.locator("[data-testid=stChatMessage]").last
    answer.locator("[data-testid=stTab]").first.wait_for(timeout=RUN_TIMEOUT_MS)
    _shows_the_reviewed_answer(answer)
    shot(page, "answer-review-after-restart")


def _shows_the_reviewed_answer(answer) -> None:
    """The answer that stood: the steak's price, its ✅ mark with the menu as evidence, no birthday in it."""
    markdown = answer.locator("[data-testid=stMarkdownContainer]").first.inner_text()
    assert "₩35,000" in markdown and "1980" not in markdown
    badge = answer.get_by_text(KO["claims_line"].format(claims=1, supported=1))
    badge.first.wait_for()
    drafts = KO["earlier_drafts"].format(n=1)
    sentence = answer.locator("[data-testid=stExpander]", has_text="✅").filter(has_text="₩35,000") \
        .filter(has_not_text=drafts)
    assert sentence.count() == 1
    assert answer.locator("[data-testid=stExpander]", has_text=drafts).count() == 1  # the draft, kept beside it
