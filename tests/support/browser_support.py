"""Shared pieces of the browser suites: a `streamlit run` server, Debian's Chromium via Playwright, screenshots."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from core.patterns import all_patterns, get_pattern
from support.paths import ROOT
from ui.i18n import STRINGS

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
KO = {key: korean for key, (_english, korean) in STRINGS.items()}  # the browser asks for Korean
RUN_TIMEOUT_MS = 120_000

needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is not installed at /usr/bin/chromium "
                                                                "(scripts/test.sh installs it: apt-get install chromium)")


class Server:
    """`streamlit run streamlit_app.py` on a free port; started, restarted and stopped by the tests."""

    def __init__(self, data_dir: Path, log: Path, launcher: tuple[str, ...] = ("-m", "streamlit"),
                 args: tuple[str, ...] = (), **env: str):
        """``launcher``: how Python starts Streamlit (tests/support/scripted_server.py swaps in a scripted model);
        ``args``: more options of ``streamlit run`` (``--server.address 127.0.0.1``)."""
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        self.env = {**os.environ, "RAG_DATA_DIR": str(data_dir), "RAG_PROVIDER": "embedded",
                    "RAG_MAX_TOKENS": "64", **env}  # short answers keep the tiny model quick
        self.launcher, self.args = launcher, args
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        cmd = [sys.executable, *self.launcher, "run", "streamlit_app.py", "--server.headless", "true",
               "--server.port", str(self.port), "--server.fileWatcherType", "none", *self.args]
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/_stcore/health", timeout=1).text == "ok":
                    return
            except httpx.HTTPError:
                pass
            assert self.proc.poll() is None, f"streamlit exited: see {self.log}"
            time.sleep(0.3)
        raise AssertionError(f"streamlit did not become healthy in 60 s: see {self.log}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def server(sample_data_dir, tmp_path_factory):
    with running_server(sample_data_dir, tmp_path_factory, "browser", "streamlit-server.log") as srv:
        yield srv


@contextlib.contextmanager
def running_server(sample_data_dir, tmp_path_factory, name: str, log: str, **kwargs):
    """A Server on a private copy of the indexed samples, started, and stopped when the block ends."""
    data = tmp_path_factory.mktemp(name) / "data"
    shutil.copytree(sample_data_dir / "chroma", data / "chroma")
    ARTIFACTS.mkdir(exist_ok=True)
    srv = Server(data, ARTIFACTS / log, **kwargs)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(locale="ko-KR", viewport={"width": 1400, "height": 1000})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    yield tab
    context.close()


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"browser-{name}.png"), full_page=True)


def settled(page) -> None:
    """Wait until the script run a widget started is over (a click during a rerun can be lost)."""
    page.wait_for_timeout(300)
    page.locator("[data-testid=stStatusWidget]").wait_for(state="hidden")


def choose_patterns(page, box: str, wanted: list[str]) -> None:
    """Leave exactly ``wanted`` (pattern ids, in the app's order) in the pattern multiselect at CSS ``box``,
    removing the others one by one, each removal's rerun over before the next."""
    select = page.locator(box)
    select.locator("[data-tag]").first.wait_for()
    for pattern in all_patterns():
        tag = select.locator(f"[data-tag][aria-label='{pattern.title}']")
        if pattern.id not in wanted and tag.count():
            for attempt in range(3):  # a click that lands while the last removal's rerun redraws the box is lost
                select.locator(f"button[aria-label='Remove {pattern.title}']").click()
                try:
                    tag.wait_for(state="detached", timeout=10_000)
                    break
                except PlaywrightTimeout:
                    if attempt == 2:
                        raise
            settled(page)
    shown = select.locator("[data-tag]").evaluate_all("tags => tags.map(t => t.getAttribute('aria-label'))")
    assert shown == [get_pattern(p).title for p in wanted]


def nav(page, label: str) -> None:
    """Follow one of the app's own sidebar links (ui/shell/nav.py; the automatic page list is hidden)."""
    page.locator("[data-testid=stSidebar] [data-testid=stPageLink] a", has_text=label).first.click()
    page.wait_for_load_state("networkidle")


QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"
LIVE_ANSWER_JS = "() => [...document.querySelectorAll('[class*=st-key-live_answer_]')].map(e => e.innerText).pop() || ''"


def ask(page, question: str) -> list[str]:
    """Send a question; return the answer texts seen while it streamed."""
    page.locator("[data-testid=stChatInput] textarea").fill(question)
    page.keyboard.press("Enter")
    seen: list[str] = []
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:  # sample the bubble while tokens arrive
        if page.locator("[data-testid=stChatMessage] [data-testid=stTab]").count() or \
                page.get_by_text(KO["waiting_review"]).count():
            break
        text = page.evaluate(LIVE_ANSWER_JS).strip()  # one read: the element may vanish on the rerun
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        time.sleep(0.05)
    return seen
