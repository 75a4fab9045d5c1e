"""Bytes uploaded per visitor per hour, across batches (issue 53, docs/SECURITY.md #10): one batch is bounded by
RAG_MAX_UPLOAD_FILES, and a visitor sending batch after batch by RAG_MAX_UPLOAD_MB_PER_HOUR."""

import pytest

from core.config import as_visitor, load_settings
from core.knowledge import upload_budget
from core.knowledge.base import KnowledgeBase
from core.knowledge.loaders import KnowledgeError
from support.fakes import HashEmbeddings

MB = 2**20
REFUSAL = (r"^refused: this upload \(0\.6 MB\) would pass the limit of 1 MB uploaded per visitor per hour "
           r"\(RAG_MAX_UPLOAD_MB_PER_HOUR\): you uploaded 0\.6 MB in the last hour; it fits again in {minutes}$")


def text_file(size: int) -> bytes:
    """A Markdown file of ``size`` bytes in long paragraphs: a few chunks, quick to split (heavy only in bytes)."""
    return (b"# notes\n\n" + (b"word " * 2_000 + b"\n\n") * (size // 10_000 + 1))[:size]


@pytest.fixture
def clock(monkeypatch):
    """A fresh budget on a clock the test moves (seconds): windows expire without sleeping."""
    now = [1_000.0]
    monkeypatch.setattr(upload_budget, "BUDGET", upload_budget.UploadBudget(clock=lambda: now[0]))
    return now


def kb_of(settings, visitor: str) -> KnowledgeBase:
    limited = settings.with_(max_upload_mb_per_hour=1, chunk_size=100_000, chunk_overlap=0)
    return KnowledgeBase(as_visitor(limited, visitor), HashEmbeddings())


def test_batches_under_the_batch_limit_but_over_the_hourly_budget_are_refused_before_anything_is_indexed(settings,
                                                                                                         clock):
    kb = kb_of(settings, "visitor-a")
    assert list(kb.ingest([], "notes", files={"a.md": text_file(600_000)}).added) == ["a.md"]
    clock[0] += 30 * 60
    with pytest.raises(KnowledgeError, match=REFUSAL.format(minutes="30 minutes")):
        kb.ingest([], "notes", files={"b.md": text_file(600_000)})
    assert kb.info("notes")["sources"] == ["a.md"]  # nothing of the refused batch
    # a refused batch is not counted: what is left of the budget still goes in
    assert list(kb.ingest([], "notes", files={"c.md": text_file(400_000)}).added) == ["c.md"]


def test_another_visitor_has_a_budget_of_their_own(settings, clock):
    kb_of(settings, "visitor-a").ingest([], "notes", files={"a.md": text_file(600_000)})
    with pytest.raises(KnowledgeError, match="RAG_MAX_UPLOAD_MB_PER_HOUR"):
        kb_of(settings, "visitor-a").ingest([], "notes", files={"b.md": text_file(600_000)})
    assert list(kb_of(settings, "visitor-b").ingest([], "notes", files={"b.md": text_file(600_000)}).added) == ["b.md"]


def test_the_window_slides_an_upload_counts_for_one_hour_from_when_it_was_accepted(settings, clock):
    kb = kb_of(settings, "visitor-a")
    kb.ingest([], "notes", files={"a.md": text_file(600_000)})
    clock[0] += 50 * 60
    kb.ingest([], "notes", files={"b.md": text_file(300_000)})
    clock[0] += 10 * 60 + 1  # a.md is out of the window, b.md (20 minutes old) is not
    assert list(kb.ingest([], "notes", files={"c.md": text_file(600_000)}).added) == ["c.md"]
    with pytest.raises(KnowledgeError, match=r"you uploaded 0\.9 MB in the last hour; it fits again in 50 minutes$"):
        kb.ingest([], "notes", files={"d.md": text_file(200_000)})


def test_a_batch_larger_than_the_whole_budget_is_refused_in_one_line_saying_so(settings, clock):
    kb = kb_of(settings, "visitor-a")
    with pytest.raises(KnowledgeError, match=r"^refused: this upload \(1\.1 MB\) is over the limit of 1 MB uploaded per "
                                             r"visitor per hour \(RAG_MAX_UPLOAD_MB_PER_HOUR\); upload fewer or smaller "
                                             r"files at a time$"):
        kb.ingest([], "notes", files={"a.md": text_file(600_000), "b.md": text_file(600_000)})
    assert kb.names() == []


def test_the_budget_is_a_setting_and_zero_means_no_bound(settings, clock, monkeypatch, tmp_path):
    monkeypatch.setenv("RAG_MAX_UPLOAD_MB_PER_HOUR", "7")
    assert load_settings(data_dir=str(tmp_path / "data")).max_upload_mb_per_hour == 7
    assert load_settings(data_dir=str(tmp_path / "data")).with_(max_upload_mb_per_hour=0).max_upload_mb_per_hour == 0
    kb = KnowledgeBase(as_visitor(settings.with_(max_upload_mb_per_hour=0, chunk_size=100_000, chunk_overlap=0),
                                  "visitor-a"), HashEmbeddings())
    assert len(kb.ingest([], "notes", files={"a.md": text_file(MB), "b.md": text_file(MB)}).added) == 2


def test_the_budget_counts_concurrent_batches_once_each(clock):
    """Check and count are one step: two batches at once cannot both pass on the same free bytes."""
    import threading

    budget, results = upload_budget.BUDGET, []
    start = threading.Barrier(8)

    def take():
        start.wait()
        results.append(budget.take("visitor-a", 300_000, MB))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(1 for problem in results if problem == "") == 3  # 3 x 300,000 fits in 1 MB, a fourth does not
