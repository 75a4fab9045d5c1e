"""End to end in a real browser: compare two patterns on the embedded model on the Compare page.

Playwright drives Debian's Chromium against `streamlit run` (fixtures in browser_support). Both
columns fill in while the runs go; then both answers, the metrics table and the chart are shown,
and what the page shows is what core saved. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import json
import re

from core.patterns import get_pattern
from support.browser_support import (  # noqa: F401
    KO,
    RUN_TIMEOUT_MS,
    browser,
    choose_patterns,
    needs_chromium,
    page,
    server,
    shot,
)

QUESTION = "스테이크와 어울리는 와인을 추천해주세요"
COMPARED = ["basic", "adaptive"]

pytestmark = needs_chromium


def letters(text: str) -> str:
    """Text without markdown marks, punctuation or spaces (rendered markdown drops '#', '-', '**')."""
    return re.sub(r"[\W_]+", "", text or "")


def test_two_patterns_are_compared_side_by_side_on_the_embedded_model(server, page):
    page.goto(f"{server.url}/Compare")
    page.get_by_role("heading", name=KO["compare_title"]).wait_for()  # Korean UI
    page.locator(".st-key-cmp_question textarea").fill(QUESTION)
    choose_patterns(page, ".st-key-cmp_patterns", COMPARED)
    page.get_by_role("button", name=KO["compare_run"]).click()

    # while the runs go, each column has its live status
    page.locator("[data-testid=stExpander] summary", has_text=KO["after_node"].split("{")[0].strip()).first.wait_for(
        timeout=RUN_TIMEOUT_MS)
    shot(page, "compare-1-running")

    page.get_by_text(KO["metrics"]).wait_for(timeout=RUN_TIMEOUT_MS)
    [saved] = list((server.data_dir / "comparisons").glob("*.json"))
    record = json.loads(saved.read_text(encoding="utf-8"))
    assert record["question"] == QUESTION and record["patterns"] == COMPARED
    for pattern_id in COMPARED:
        result = record["results"][pattern_id]
        column = page.locator("[data-testid=stColumn]").filter(
            has=page.get_by_role("heading", name=get_pattern(pattern_id).title, exact=True))
        assert column.count() == 1
        text = column.inner_text()
        shown = result.get("answer") or result.get("termination_message") or result.get("error")
        assert shown and letters(shown)[:30] in letters(text), (pattern_id, shown, text)
        assert KO["stopped"] + ":" in text and KO["llm_calls"] in text  # the badge and the figures
        assert f"LLM 호출 {result['llm_calls']}회" in text
    table = page.locator("[data-testid=stDataFrame]").last
    table.wait_for()
    assert table.bounding_box()["height"] > 60  # a header and two rows
    charts = page.locator("[data-testid=stVegaLiteChart]")
    charts.locator("canvas, svg").first.wait_for()
    assert charts.count() == 2 and charts.first.bounding_box()["width"] > 300  # wall time, LLM calls
    assert page.get_by_role("button", name=KO["export_json"]).is_visible()
    assert page.get_by_role("button", name=KO["export_md"]).is_visible()
    page.locator("[data-testid=stColumn]").first.scroll_into_view_if_needed()
    shot(page, "compare-2-answers")
    for pattern_id in COMPARED:  # each column draws its pattern's graph with the path highlighted
        column = page.locator("[data-testid=stColumn]").filter(
            has=page.get_by_role("heading", name=get_pattern(pattern_id).title, exact=True))
        column.locator("[data-testid=stTab]", has_text=KO["graph"]).click()
        picture = column.locator(f"[data-testid=stMermaidChart] img[alt='{pattern_id} graph']")
        picture.wait_for()
        page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=picture.element_handle())
    shot(page, "compare-3-graphs")
    charts.first.scroll_into_view_if_needed()
    shot(page, "compare-4-metrics")
