"""A first-time user's walk through the app in Chromium, on a fresh data directory (issue 15's list).

Starts `streamlit run` on an empty data directory (the samples are indexed on first use, as for a new
user), opens Debian's Chromium with Korean as the browser language and goes through: the home page
and the sidebar links, a Basic RAG answer (outcome badge, citation check, trace in words), a blank
question, a stale and a foreign ``?thread=`` link, Self-RAG's budgets and verdicts, the Adaptive
diagram of each variant, an upload on the Knowledge base page, Enter in the Evaluation form and the
Compare page's pre-selection. Each step prints what it saw (✓ / ✗) and saves a screenshot to
test-artifacts/walkthrough-NN-*.png. Graph RAG is not run (its first use builds a graph for minutes).

    python scripts/walkthrough.py [--max-tokens N] [--keep-data]

Needs requirements-dev.txt (Playwright) and /usr/bin/chromium, like the browser tests.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.browser_support import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, KO, Server  # noqa: E402
from ui.i18n.trace import OUTCOMES_KO as KO_OUTCOME  # noqa: E402

QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"
ANSWERED = "[data-testid=stChatMessage] [data-testid=stTab]"
RUN_MS = 1_200_000  # one run on the embedded model (Self-RAG: dozens of calls), indexing included


class Walk:
    """The browser tab, the numbered screenshots and the list of what was seen."""

    def __init__(self, page, server: Server):
        self.page, self.server, self.n, self.seen = page, server, 0, []

    def shot(self, name: str) -> None:
        self.n += 1
        self.page.screenshot(path=str(ARTIFACTS / f"walkthrough-{self.n:02d}-{name}.png"), full_page=True)

    def check(self, what: str, ok: bool, detail: str = "") -> None:
        self.seen.append((ok, what, detail))
        print(f"{'✓' if ok else '✗'} {what}" + (f" — {detail}" if detail else ""), flush=True)

    def open(self, path: str) -> None:
        self.page.goto(f"{self.server.url}/{path}")
        self.page.locator("[data-testid=stSidebar] [data-testid=stPageLink]").first.wait_for(timeout=RUN_MS)

    def ask(self, question: str) -> str:
        """Send a question; return the text of the last assistant message once its tabs are drawn."""
        before = self.page.locator(ANSWERED).count()
        box = self.page.locator("[data-testid=stChatInput] textarea")
        box.wait_for(timeout=RUN_MS)  # on a fresh data directory the samples are indexed first
        box.fill(question)
        box.press("Enter")
        deadline = time.monotonic() + RUN_MS / 1000
        while self.page.locator(ANSWERED).count() <= before and time.monotonic() < deadline:
            if self.page.get_by_text(KO["waiting_review"]).count():
                break
            self.page.wait_for_timeout(500)
        self.page.wait_for_timeout(1000)  # the rerun that draws the finished turn
        return self.page.locator("[data-testid=stChatMessage]").last.inner_text()

    def tab(self, label: str) -> None:
        self.page.locator("[data-testid=stChatMessage]").last.locator("[data-testid=stTab]", has_text=label).click()
        self.page.wait_for_timeout(800)


def home(w: Walk) -> None:
    w.open("")
    w.page.get_by_role("heading", name=KO["app_title"]).first.wait_for(timeout=RUN_MS)
    links = w.page.locator("[data-testid=stSidebar] [data-testid=stPageLink]")
    labels = [" ".join(t.split()) for t in links.all_inner_texts()]
    w.check("sidebar links start with Home, grouped", bool(labels) and labels[0].endswith(KO["home"]), " | ".join(labels))
    w.check("no automatic page list ('streamlit app')", w.page.locator("[data-testid=stSidebarNav]").count() == 0)
    notice = w.page.get_by_text(KO["embedded_notice"].split("**")[1]).first.locator("xpath=..").inner_text()
    w.check("the demo-model note points to the sidebar", "사이드바에서" in notice and "위에서" not in notice)
    w.shot("home")


def basic(w: Walk) -> str:
    w.open("Basic_RAG")
    answer = w.ask(QUESTION)
    unchecked = KO_OUTCOME["unchecked"] in answer and KO_OUTCOME["grounded"] not in answer
    w.check("Basic RAG badge claims no grounding check", unchecked, answer.splitlines()[0][:80] if answer else "")
    cites = [line for line in answer.splitlines() if "인용" in line]
    w.check("the answer's citations are checked against the sources", bool(cites), " | ".join(cites)[:160])
    w.shot("basic-answer")
    w.tab(KO["trace"])
    table = w.page.locator("[data-testid=stChatMessage]").last.locator("[data-testid=stDataFrame]").first
    table.wait_for()
    w.shot("basic-trace")
    thread_id = w.page.url.split("thread=")[-1]
    return thread_id


def blank(w: Walk) -> None:
    w.open("Basic_RAG")
    box = w.page.locator("[data-testid=stChatInput] textarea")
    box.wait_for(timeout=RUN_MS)
    box.fill("   ")
    box.press("Enter")
    w.page.wait_for_timeout(3000)
    inputs = w.page.locator("textarea").count()  # the chat input is the page's only text box
    sends = w.page.get_by_role("button", name=KO["send"]).count()
    said = w.page.get_by_text("질문이 비어 있습니다").count()
    w.check("a blank question leaves one input and no second Send box", inputs == 1 and sends == 0,
            f"{inputs} text box(es), {sends} send button(s), "
            + ("the empty-question message above it" if said else "the browser did not send it"))
    w.shot("blank-question")


def thread_links(w: Walk, basic_thread: str) -> None:
    w.open("Basic_RAG?thread=no-such-thread")
    w.page.wait_for_timeout(1500)
    w.check("an unknown ?thread= says the conversation does not exist",
            w.page.get_by_text(KO["thread_missing"].split(" (")[0]).count() > 0)
    w.shot("unknown-thread")
    w.open(f"Adaptive_RAG?thread={basic_thread}")
    w.page.wait_for_timeout(1500)
    link = w.page.get_by_role("link", name=KO["open_there"])
    w.check("a thread of another pattern links to its own page", link.count() == 1,
            w.page.get_by_text("Basic RAG의 대화").first.inner_text() if link.count() else "")
    w.shot("foreign-thread")


def self_rag(w: Walk) -> None:
    w.open("Self_RAG")
    answer = w.ask(QUESTION)
    badge = next((status for status, label in KO_OUTCOME.items() if label in answer), "?")
    w.check("Self-RAG shows an outcome badge from its verdicts", badge != "?", badge)
    w.tab(KO["trace"])
    trace = w.page.locator("[data-testid=stChatMessage]").last.inner_text()
    budget = next((line for line in trace.splitlines() if "회 중" in line and "사용" in line), "")
    w.check("budgets read 'N of M used'", bool(budget) and "generations =" not in trace, budget[:160])
    w.shot("self-rag-trace")


def adaptive(w: Walk) -> None:
    w.open("Adaptive_RAG")
    w.ask(QUESTION)
    w.tab(KO["graph"])
    chart = w.page.locator("[data-testid=stChatMessage]").last.locator("[data-testid=stMermaidChart] img")
    chart.first.wait_for()
    w.page.wait_for_timeout(1500)
    w.shot("adaptive-domain-graph")
    w.page.locator(".st-key-sb_variant_adaptive").click()
    w.page.get_by_role("option", name="complexity").click()
    w.page.wait_for_timeout(1500)
    w.ask("스테이크와 파스타 가격을 비교해 주세요")
    w.tab(KO["graph"])
    w.page.locator("[data-testid=stChatMessage]").last.locator("[data-testid=stMermaidChart] img").first.wait_for()
    w.page.wait_for_timeout(1500)
    w.shot("adaptive-complexity-graph")
    w.check("the Adaptive diagrams are drawn per variant (see the two screenshots)", True)


def knowledge(w: Walk, data: Path) -> None:
    w.open("Knowledge_base")
    w.page.get_by_text(KO["upload"]).first.wait_for(timeout=RUN_MS)
    note = data.parent / "parking.md"
    note.write_text("# 주차 안내\n\n지하 2층 주차장을 2시간 무료로 이용할 수 있습니다.\n", encoding="utf-8")
    w.page.locator("[data-testid=stFileUploader] input[type=file]").set_input_files(str(note))
    w.page.wait_for_timeout(1000)
    w.page.locator(".st-key-kb_new_name input").fill("walkthrough_notes")
    w.page.locator(".st-key-kb_new_name input").press("Tab")
    w.page.get_by_role("button", name=KO["index"]).click()
    listed = w.page.locator("[data-testid=stExpander] summary", has_text="walkthrough_notes")
    try:
        listed.first.wait_for(timeout=120_000)
        ok = True
    except Exception:  # noqa: BLE001 (a screenshot says more than the timeout)
        ok = False
    w.check("a new collection is listed without a reload", ok)
    w.shot("knowledge-upload")


def evaluation(w: Walk, data: Path) -> None:
    w.open("Evaluation")
    field = w.page.locator(".st-key-eval_limit input")
    field.wait_for(timeout=RUN_MS)
    field.fill("1")
    field.press("Enter")
    w.page.wait_for_timeout(5000)
    running = w.page.get_by_text(KO["eval_running"]).count()
    saved = list((data / "evals").glob("*.json"))
    w.check("Enter in the Evaluation number field starts nothing", not running and not saved,
            f"{running} progress bar(s), {len(saved)} saved report(s)")
    w.shot("evaluation-enter")


def compare(w: Walk) -> None:
    w.open("Compare")
    w.page.locator(".st-key-cmp_patterns [data-tag]").first.wait_for(timeout=RUN_MS)
    w.page.wait_for_timeout(1500)
    tags = [t.strip() for t in w.page.locator(".st-key-cmp_patterns [data-tag]").all_inner_texts()]
    note = w.page.get_by_text("느린 패턴").first.inner_text() if w.page.get_by_text("느린 패턴").count() else ""
    w.check("Compare pre-selects the fast patterns and names the slow ones",
            "Graph RAG" not in tags and "Self-RAG" not in tags and "Graph RAG" in note, f"{tags} · {note[:160]}")
    w.shot("compare")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tokens", type=int, default=0, help="answer length (default: the app's own)")
    parser.add_argument("--keep-data", action="store_true", help="keep the data directory (its path is printed)")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.stderr.write(f"error: {CHROMIUM} is missing (apt-get install chromium)\n")
        return 2
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="walkthrough-")) / "data"  # fresh: nothing indexed, no threads
    server = Server(data, ARTIFACTS / "walkthrough-server.log")
    if args.max_tokens:
        server.env["RAG_MAX_TOKENS"] = str(args.max_tokens)
    else:
        server.env.pop("RAG_MAX_TOKENS", None)
    started = time.perf_counter()
    server.start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(locale="ko-KR", viewport={"width": 1400, "height": 2200})
            page.set_default_timeout(60_000)
            w = Walk(page, server)
            thread: dict = {}
            steps = {"home": lambda: home(w), "basic": lambda: thread.update(id=basic(w)), "blank": lambda: blank(w),
                     "thread links": lambda: thread_links(w, thread.get("id", "none")), "self_rag": lambda: self_rag(w),
                     "adaptive": lambda: adaptive(w), "knowledge": lambda: knowledge(w, data),
                     "evaluation": lambda: evaluation(w, data), "compare": lambda: compare(w)}
            for name, step in steps.items():
                try:
                    step()
                except Exception as exc:  # noqa: BLE001 (one broken step must not hide the others)
                    w.check(f"{name}: the step ran", False, f"{exc.__class__.__name__}: {str(exc).splitlines()[0][:200]}")
                    w.shot(f"{name.replace(' ', '-')}-failed")
            browser.close()
    finally:
        server.stop()
        if args.keep_data:
            print(f"data directory: {data}")
        else:
            shutil.rmtree(data.parent, ignore_errors=True)
    failed = [what for ok, what, _ in w.seen if not ok]
    print(f"\n{len(w.seen) - len(failed)} of {len(w.seen)} checks as expected in {time.perf_counter() - started:.0f} s; "
          f"screenshots: {ARTIFACTS}/walkthrough-*.png")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
