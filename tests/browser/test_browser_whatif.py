"""What if? in a real browser on the real embedded model: finish a run, open its steps, flip the router's
decision, see the original and the fork side by side with their paths; restart the server, fork again."""

from __future__ import annotations

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from core.config import load_settings
from core.store.fork_store import forks_of
from core.studio.steps import turn_steps
from support.browser_support import ARTIFACTS, KO, RUN_TIMEOUT_MS, browser, needs_chromium, page, server, shot  # noqa: F401
from ui.i18n import STRINGS

QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"
KO_WI = {key: korean for key, (_english, korean) in STRINGS.items()}

pytestmark = needs_chromium


def _trace_tab(page) -> None:
    """Show the answer's trace tab (a rerun that rebuilds the tabs may open the first one again)."""
    page.locator("[data-testid=stChatMessage]").last.locator("[data-testid=stTab]", has_text=KO["trace"]).click()


def _open_steps(page, thread_id: str) -> None:
    toggle = page.locator(f".st-key-{thread_id}_0_whatif label")
    for _attempt in range(6):  # a rerun still under way (a fresh server is slow) may switch back to the first tab
        _trace_tab(page)
        try:
            toggle.click(timeout=10_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        raise AssertionError("the What-if toggle never became clickable on the trace tab")
    page.get_by_text(KO_WI["wi_pick"]).wait_for(state="attached")
    _trace_tab(page)
    page.get_by_text(KO_WI["wi_pick"]).wait_for()


def _fork_route(page, thread_id: str, route: str, run: int) -> None:
    page.locator(f".st-key-{thread_id}_0_wi_2_route").get_by_text(route, exact=True).click()
    page.get_by_role("button", name=KO_WI["wi_fork"]).click()
    forks = page.get_by_text(KO_WI["wi_fork_at"].format(step=2, node="route_question"))
    forks.nth(run).wait_for(state="attached", timeout=3 * RUN_TIMEOUT_MS)  # a busy 2-core machine is slow


def test_flip_the_router_and_see_both_runs_side_by_side_then_again_after_a_restart(server, page):
    page.goto(f"{server.url}/Adaptive_RAG")
    page.locator("[data-testid=stChatInput] textarea").fill(QUESTION)
    page.keyboard.press("Enter")
    page.locator("[data-testid=stChatMessage] [data-testid=stTab]").first.wait_for(timeout=RUN_TIMEOUT_MS)
    thread_id = page.url.split("thread=")[1]
    settings = load_settings(data_dir=str(server.data_dir))
    taken = turn_steps(settings, thread_id)["steps"][2]["wrote"]["route"]  # what the tiny model decided
    other = "restaurant_wine" if taken != "restaurant_wine" else "restaurant_menu"

    _open_steps(page, thread_id)
    shot(page, "whatif-1-steps")
    _fork_route(page, thread_id, other, run=0)
    _trace_tab(page)
    columns = page.locator("[data-testid=stColumn]").filter(has_text=KO_WI["wi_original"]).locator("xpath=..")
    row = columns.first.inner_text()
    assert KO_WI["wi_original"] in row and KO_WI["wi_fork_at"].format(step=2, node="route_question") in row
    assert f"{other}.md" in row  # the fork's sources come from the other collection, beside the original's
    [fork] = forks_of(settings, thread_id)
    assert fork["result"]["path"][:3] == ["contextualize", "route_question", "search_collection"]
    assert {src["collection"] for src in fork["result"]["sources"]} == {other}
    assert fork["forked_from"]["changes"] == {"route": other}
    chart = page.locator("[data-testid=stMermaidChart] img[alt='adaptive what-if graph']")
    chart.wait_for()
    shot(page, "whatif-2-fork-beside-original")
    columns.first.screenshot(path=str(ARTIFACTS / "browser-whatif-2-columns.png"))

    server.stop()
    server.start()
    page.goto(f"{server.url}/Adaptive_RAG?thread={thread_id}")
    page.locator("[data-testid=stChatMessage] [data-testid=stTab]").first.wait_for()
    _open_steps(page, thread_id)
    page.get_by_text(KO_WI["wi_fork_at"].format(step=2, node="route_question")).first.wait_for()  # read from disk
    shot(page, "whatif-3-after-restart")
    _fork_route(page, thread_id, "direct", run=1)  # a second fork, made by the restarted server
    assert [f["forked_from"]["changes"] for f in forks_of(settings, thread_id)] == [{"route": other}, {"route": "direct"}]
    assert forks_of(settings, thread_id)[1]["result"]["path"][-1] == "direct_answer"
    _trace_tab(page)
    shot(page, "whatif-4-second-fork")
