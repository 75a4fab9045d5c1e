"""End to end in a real browser: "Which pattern for my documents?" on the Evaluation page.

Generate a question set from a sample collection, edit one question in the table, save the set, advise on
two fast patterns, read the recommendation, and open one run's trace from the per-question table. The
model is scripted (tests/support/scripted_server.py answers the generator's prompts from the chunks it is shown,
tests/support/question_writer.py); Streamlit, Chroma, the e5 embeddings and the stores are real.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from core.patterns import get_pattern
from core.studio.question_set import load_question_set
from support.browser_support import (  # noqa: F401
    KO,
    browser,
    choose_patterns,
    needs_chromium,
    page,
    running_server,
    settled,
    shot,
)

ADVISED = ["basic", "adaptive"]
EDITED = "그릴드 연어 스테이크의 가격은 얼마인가요?"
HEADER_PX, ROW_PX = 35, 35  # the data grid's header and row heights (Streamlit's defaults)

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def server(sample_data_dir, tmp_path_factory):
    with running_server(sample_data_dir, tmp_path_factory, "browser-advise", "streamlit-advise.log",
                        launcher=("tests/support/scripted_server.py",), RAG_TEST_ANSWER_DELAY="0") as srv:
        yield srv


def first_row_cell(grid, column_x: float) -> tuple[float, float]:
    box = grid.locator("canvas").first.bounding_box()
    return box["x"] + column_x, box["y"] + HEADER_PX + ROW_PX / 2


def pick(page, key: str, option: str) -> None:
    """Choose an option of a multiselect (a rerun that ends while the list is open closes it: open it again)."""
    settled(page)
    for _attempt in range(3):
        page.locator(f".st-key-{key} input").click()
        choice = page.get_by_role("option", name=option)
        try:
            choice.wait_for(timeout=5_000)
        except PlaywrightTimeout:
            continue
        choice.click()
        page.keyboard.press("Escape")
        return
    raise AssertionError(f"{option!r} is not offered by {key}")


def generate(page, collection: str, count: int) -> None:
    pick(page, "gen_collections", collection)
    settled(page)
    field = page.locator(".st-key-gen_count input")
    field.fill(str(count))
    field.press("Enter")
    settled(page)
    page.get_by_role("button", name=KO["gen_run"]).click()
    page.get_by_text(KO["gen_done"].split("{")[0].strip()).wait_for()


def edit_first_question(page, text: str) -> None:
    """Double-click the first row's question cell (column 2, after id), type, Enter."""
    grid = page.locator(".st-key-gen_editor_1")
    grid.locator("#glide-cell-2-0").wait_for(state="attached")  # the grid's accessible copy of its cells
    left = grid.locator("#glide-cell-1-0").inner_text()
    assert left == "g001"
    page.mouse.dblclick(*first_row_cell(grid, 300))  # the id column is narrow: x=300 is inside 'question'
    editor = page.locator("textarea.gdg-input")
    editor.fill(text)
    page.keyboard.press("Enter")
    page.wait_for_function("t => document.querySelector('.st-key-gen_editor_1 #glide-cell-2-0').innerText === t",
                           arg=text)
    settled(page)


def save_set(page, name: str, saved_dir) -> None:
    field = page.locator(".st-key-gen_set_name input")
    field.fill(name)
    field.press("Enter")
    settled(page)
    confirmation = page.get_by_text(KO["gen_saved"].format(file=f"{name}.jsonl"))
    for _attempt in range(3):  # a click that lands while the name field's rerun redraws the button is lost
        page.get_by_role("button", name=KO["gen_save"]).click()
        try:
            confirmation.wait_for(timeout=10_000)
            return
        except PlaywrightTimeout:
            assert not any(saved_dir.glob(f"{name}*.jsonl")), "saved, but the confirmation did not stay"
    raise AssertionError(f"the set was not saved as {name}.jsonl")


def wait_for_advice(page) -> None:
    """The advice runs in the background: refresh until it is done and its recommendation shows."""
    finished = page.get_by_text(KO["advise_status"].format(status=KO["advice_done"]))
    banner = page.locator("[data-testid=stAlert]", has_text=KO["advise_recommended"].split("{")[0].strip())
    for _ in range(120):
        if finished.count() and banner.count():
            return
        refresh = page.get_by_role("button", name=KO["refresh"])
        if refresh.count():
            refresh.click()
            settled(page)
        page.wait_for_timeout(500)
    raise AssertionError("the advice did not finish in 60 s")


def open_trace_link(page, context):
    """Hover along the first row of the per-question table until the pointer says 'link'; click it."""
    grid = page.locator(".st-key-advise_question_table")
    grid.scroll_into_view_if_needed()
    grid.locator("#glide-cell-4-0").wait_for(state="attached")
    box = grid.locator("canvas").first.bounding_box()
    _x, y = first_row_cell(grid, 0)
    for x in range(int(box["x"]) + 5, int(box["x"] + box["width"]), 6):
        page.mouse.move(x, y)
        if grid.locator("canvas").first.evaluate("c => getComputedStyle(c).cursor") == "pointer":
            with context.expect_page() as opened:
                page.mouse.click(x + 3, y)
            return opened.value
    raise AssertionError("no link in the first row of the per-question table")


def test_a_set_generated_edited_and_saved_is_advised_on_and_a_run_trace_opens(server, page):
    page.goto(f"{server.url}/Evaluation")
    page.get_by_role("heading", name=KO["gen_title"]).wait_for()  # Korean UI
    generate(page, "restaurant_menu", 3)
    assert page.get_by_role("button", name=KO["gen_stop"]).count() == 0  # gone once the set is written
    shot(page, "advise-1-generated")
    edit_first_question(page, EDITED)
    save_set(page, "browser-set", server.data_dir / "question_sets")
    saved = load_question_set(server.data_dir / "question_sets" / "browser-set.jsonl")
    assert [i["id"] for i in saved] == ["g001", "g002", "g003"] and saved[0]["question"] == EDITED
    assert saved[0]["provenance"][0]["collection"] == "restaurant_menu" and saved[0]["facts"]
    assert [i["kind"] for i in saved] == ["single", "two_chunks", "unanswerable"]

    chosen_set = page.locator(".st-key-advise_set").evaluate(
        "e => e.textContent + ' ' + [...e.querySelectorAll('input')].map(i => i.value).join(' ')")
    assert "browser-set.jsonl" in chosen_set, chosen_set  # the saved set is offered to advise, chosen
    choose_patterns(page, "[class*=st-key-advise_patterns_]", ADVISED)
    page.get_by_role("button", name=KO["advise_run"]).click()
    wait_for_advice(page)
    [record] = [json.loads(p.read_text(encoding="utf-8")) for p in (server.data_dir / "advice").glob("2*.json")]
    assert record["status"] == "done" and record["patterns"] == ADVISED
    recommended = record["report"]["recommendation"]["pattern"]
    assert recommended in ADVISED
    banner = page.locator("[data-testid=stAlert]", has_text=KO["advise_recommended"].split("{")[0].strip())
    assert get_pattern(recommended).title in banner.inner_text()
    assert page.get_by_text(record["report"]["recommendation"]["reasons"][0][:40]).count()
    chart = page.locator("[data-testid=stVegaLiteChart]").last
    chart.locator("canvas, svg").first.wait_for()
    shot(page, "advise-2-recommendation")

    first = record["report"]["questions"][0]
    assert first["question"] == EDITED  # the edited question is what ran
    tab = open_trace_link(page, page.context)
    tab.wait_for_load_state()
    thread = first["runs"]["basic"]["thread_id"]
    assert tab.url.endswith(f"/Basic_RAG?thread={thread}")
    answer = tab.locator("[data-testid=stChatMessage]").last
    tab.locator("[data-testid=stChatMessage]", has_text=EDITED).wait_for()  # the run's own thread, not a new chat
    answer.locator("[data-testid=stTab]", has_text=KO["trace"]).click()
    answer.locator("[data-testid=stDataFrame]").first.wait_for()
    shot(tab, "advise-3-trace")
