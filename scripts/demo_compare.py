"""Compare every pattern on one question in a real browser, the way a user demos the app.

Starts `streamlit run` on a data directory (default: a copy of ./data, so the user's threads and
comparisons stay untouched while cached graphs are reused), opens the Compare page in Debian's
Chromium with Korean as the browser language, adds the slow patterns to the default selection (so all
patterns run), asks the question and waits for the metrics table. Screenshots go to test-artifacts/demo-compare-*.png;
the saved comparison's metrics are printed as a table (or JSON with --json).

    python scripts/demo_compare.py ["question"] [--data-dir DIR] [--timeout-min 40] [--json]

Needs requirements-dev.txt (Playwright) and /usr/bin/chromium, like the browser tests.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from core.config import load_settings  # noqa: E402
from core.patterns import pattern_ids  # noqa: E402
from core.studio.compare import is_running, metrics_rows  # noqa: E402
from support.browser_support import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, KO, Server  # noqa: E402
from ui.screens.compare import slow_patterns  # noqa: E402
from ui.shell.page_index import pattern_title  # noqa: E402

QUESTION = "스테이크와 어울리는 와인을 추천해주세요"


def working_copy(source: Path) -> Path:
    """The indexed collections and built graphs of ``source``, without its threads or comparisons."""
    data = Path(tempfile.mkdtemp(prefix="demo-compare-")) / "data"
    data.mkdir(parents=True)
    for part in ("chroma", "graphs"):
        if (source / part).is_dir():
            shutil.copytree(source / part, data / part)
    return data


def demo(question: str, data: Path, timeout_s: float) -> dict:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    server = Server(data, ARTIFACTS / "demo-compare-server.log")
    server.env.pop("RAG_MAX_TOKENS")  # the app's own default answer length, as a user gets it
    server.start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            # tall: Streamlit scrolls inside the page, so a screenshot shows only what the viewport holds
            page = browser.new_page(locale="ko-KR", viewport={"width": 1500, "height": 4200})
            page.goto(f"{server.url}/Compare")
            page.get_by_role("heading", name=KO["compare_title"]).wait_for(timeout=120_000)
            # the first script run must finish (the fast patterns shown as chosen) before any click:
            # a click during it leaves the browser's multiselect empty while the server has them
            fast = [p for p in pattern_ids() if p not in slow_patterns(load_settings())]
            page.wait_for_function("n => document.querySelectorAll('.st-key-cmp_patterns [data-tag]').length === n",
                                   arg=len(fast), timeout=120_000)
            for pattern_id in pattern_ids():  # the slow ones are not pre-selected: add them, as a user would
                if pattern_id not in fast:
                    page.locator(".st-key-cmp_patterns [data-baseweb=select] input").click()
                    page.get_by_role("option", name=pattern_title(pattern_id), exact=True).click()
                    page.keyboard.press("Escape")
            page.wait_for_function("n => document.querySelectorAll('.st-key-cmp_patterns [data-tag]').length === n",
                                   arg=len(pattern_ids()), timeout=120_000)
            page.locator(".st-key-cmp_question textarea").fill(question)
            started = time.perf_counter()
            page.get_by_role("button", name=KO["compare_run"]).click()
            page.wait_for_timeout(20_000)
            page.screenshot(path=str(ARTIFACTS / "demo-compare-1-running.png"))
            page.get_by_text(KO["metrics"]).wait_for(timeout=timeout_s * 1000)
            wall = time.perf_counter() - started
            page.locator("[data-testid=stVegaLiteChart] canvas, [data-testid=stVegaLiteChart] svg").first.wait_for()
            page.screenshot(path=str(ARTIFACTS / "demo-compare-2-done.png"))
            browser.close()
    finally:
        server.stop()
    [saved] = list((data / "comparisons").glob("*.json"))
    record = json.loads(saved.read_text(encoding="utf-8"))
    return {"question": question, "page_wall_s": round(wall, 1), "status": "running" if is_running(record) else "done",
            "patterns": record["patterns"], "metrics": metrics_rows(record),
            "answers": {p: (r.get("answer") or r.get("error") or "")[:160] for p, r in record["results"].items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--data-dir", default=str(ROOT / "data"), help="collections and graphs to copy from")
    parser.add_argument("--timeout-min", type=float, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.stderr.write(f"error: {CHROMIUM} is missing (apt-get install chromium)\n")
        return 2
    data = working_copy(Path(args.data_dir))
    try:
        report = demo(args.question, data, args.timeout_min * 60)
    finally:
        shutil.rmtree(data.parent, ignore_errors=True)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    print(f"{report['question']}: {len(report['patterns'])} patterns, page done in {report['page_wall_s']} s "
          f"(status {report['status']}; all patterns: {report['patterns'] == pattern_ids()})")
    keys = list(report["metrics"][0])
    print("  ".join(keys))
    for row in report["metrics"]:
        print("  ".join(str(row[k]) for k in keys))
    for pattern, answer in report["answers"].items():
        print(f"- {pattern}: {answer!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
