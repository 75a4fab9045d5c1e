"""Two `streamlit run` replicas over one Postgres and one Chroma server (issue #14), in Chromium.

A run paused for review on replica A is listed on replica B's Review page and approved there; the
thread then shows the answer on both. Scripted model (tests/support/scripted_server.py), real everything else.
"""

from __future__ import annotations

import shutil

import pytest

from core.cli.migrate import migrate
from support.app_support import HAPPY_ANSWER
from support.browser_support import ARTIFACTS, KO, QUESTION, RUN_TIMEOUT_MS, Server, ask, browser, nav, needs_chromium, page, shot  # noqa: F401

pytestmark = [needs_chromium, pytest.mark.teams]


@pytest.fixture
def replicas(sample_data_dir, tmp_path, database_url, chroma_url):
    source = tmp_path / "samples"  # a copy: the session's shared sample directory is only ever read by copying it
    shutil.copytree(sample_data_dir / "chroma", source / "chroma")
    migrate(source, to_chroma=chroma_url)  # the samples on the server, embeddings copied
    ARTIFACTS.mkdir(exist_ok=True)
    servers = [Server(tmp_path / name, ARTIFACTS / f"streamlit-replica-{name}.log",
                      launcher=("tests/support/scripted_server.py",), RAG_TEST_ANSWER_DELAY="0",
                      RAG_DATABASE_URL=database_url, RAG_CHROMA_URL=chroma_url) for name in ("a", "b")]
    for server in servers:
        server.start()
    yield servers
    for server in servers:
        server.stop()


def test_a_review_paused_on_one_replica_is_approved_on_another(replicas, page):
    a, b = replicas
    page.goto(f"{a.url}/Adaptive_RAG")
    page.get_by_text(KO["review"]).click()  # the sidebar toggle
    ask(page, QUESTION)
    page.get_by_text(KO["waiting_review"]).wait_for(timeout=RUN_TIMEOUT_MS)
    thread_id = page.url.split("thread=")[1]
    shot(page, "teams-1-paused-on-a")

    page.goto(b.url)
    nav(page, KO["review_title"])
    item = page.locator(f".st-key-review_{thread_id}")
    item.get_by_text(KO["waits_docs"], exact=False).wait_for()
    shot(page, "teams-2-listed-on-b")
    item.get_by_role("button", name=KO["approve"]).click()
    page.get_by_text(KO["no_reviews"]).wait_for(timeout=RUN_TIMEOUT_MS)

    for server in (b, a):  # the same history on both replicas
        page.goto(f"{server.url}/Adaptive_RAG?thread={thread_id}")
        answer = page.locator("[data-testid=stChatMessage]").last
        answer.locator("[data-testid=stTab]").first.wait_for(timeout=RUN_TIMEOUT_MS)
        assert HAPPY_ANSWER.split("[")[0].strip() in answer.inner_text()
        shot(page, f"teams-3-answer-on-{'b' if server is b else 'a'}")
    assert not (a.data_dir / "threads.sqlite").exists() and not (b.data_dir / "checkpoints.sqlite").exists()
