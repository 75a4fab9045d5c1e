import pytest
from langchain_core.embeddings import Embeddings

from core.knowledge.base import (
    SAMPLES_DIR,
    EmbeddingMismatchError,
    KnowledgeBase,
    KnowledgeError,
    load_file,
    split_documents,
)

MENU = SAMPLES_DIR / "restaurant_menu.md"
JAPAN_PDF = SAMPLES_DIR / "japan_ict_policy.pdf"


class OtherEmbedder(Embeddings):
    """An embedder with another model id: only its identity matters for the mismatch check."""

    model_id = "ollama:bge-m3"

    def embed_documents(self, texts):
        return [[1.0] + [0.0] * 383 for _ in texts]

    def embed_query(self, text):
        return [1.0] + [0.0] * 383


def test_pdf_pages_keep_source_title_page_and_chunk_ids():
    pages = load_file(JAPAN_PDF)
    assert len(pages) >= 4
    assert [p.metadata["page"] for p in pages] == list(range(1, len(pages) + 1))
    assert all(p.metadata["source"] == "japan_ict_policy.pdf" for p in pages)
    chunks = split_documents(pages, chunk_size=600, chunk_overlap=80)
    ids = [c.metadata["chunk_id"] for c in chunks]
    assert len(ids) == len(set(ids))
    assert all(len(c.page_content) <= 600 for c in chunks)
    # stable: the same file chunks to the same ids
    assert ids == [c.metadata["chunk_id"] for c in split_documents(load_file(JAPAN_PDF), 600, 80)]


def test_markdown_title_comes_from_the_heading():
    pages = load_file(MENU)
    assert pages[0].metadata["page"] == 1
    assert pages[0].metadata["title"] != "restaurant_menu"


def test_reingest_replaces_chunks_instead_of_duplicating(settings):
    kb = KnowledgeBase(settings)
    first = kb.ingest([MENU], "menu")
    count = kb.info("menu")["chunks"]
    assert count == first.chunks > 10
    kb.ingest([MENU], "menu")
    assert kb.info("menu")["chunks"] == count
    hits = kb.search("menu", "시그니처 스테이크 가격", k=3)
    assert "35,000" in " ".join(h.page_content for h in hits)
    assert all(0.0 <= h.metadata["score"] <= 1.0 for h in hits)
    assert kb.delete_source("menu", MENU.name) == count
    assert kb.info("menu")["chunks"] == 0


def test_bad_files_are_reported_and_the_others_still_go_in(settings, tmp_path):
    corrupt = tmp_path / "broken.pdf"
    corrupt.write_bytes(b"%PDF-1.4 this is not really a pdf")
    unsupported = tmp_path / "table.xlsx"
    unsupported.write_bytes(b"PK\x03\x04")
    empty = tmp_path / "empty.txt"
    empty.write_text("   ")
    kb = KnowledgeBase(settings)
    report = kb.ingest([corrupt, unsupported, empty, MENU, tmp_path / "missing.md"], "mixed")
    assert set(report.errors) == {"broken.pdf", "table.xlsx", "empty.txt", "missing.md"}
    assert "unsupported" in report.errors["table.xlsx"]
    assert "cannot read this PDF" in report.errors["broken.pdf"]
    assert report.added == {MENU.name: kb.info("mixed")["chunks"]}


def test_uploaded_bytes_are_ingested_like_files(settings):
    kb = KnowledgeBase(settings)
    report = kb.ingest([], "uploads", files={"note.txt": "주차는 건물 지하 2층에서 가능합니다.".encode()})
    assert report.added == {"note.txt": 1}
    assert kb.chunks("uploads")[0].metadata["source"] == "note.txt"


def test_querying_with_another_embedder_names_both_models(settings):
    KnowledgeBase(settings).ingest([MENU], "menu")
    other = KnowledgeBase(settings, embeddings=OtherEmbedder())
    with pytest.raises(EmbeddingMismatchError) as err:
        other.search("menu", "스테이크")
    assert "embedded:multilingual-e5-small" in str(err.value) and "ollama:bge-m3" in str(err.value)


def test_unknown_collection_is_a_clear_error(settings):
    with pytest.raises(KnowledgeError, match="does not exist"):
        KnowledgeBase(settings).search("nope", "q")


def test_samples_are_indexed_once_and_found(sample_settings):
    kb = KnowledgeBase(sample_settings)
    assert kb.ensure_samples() == []  # already indexed: nothing rebuilt
    assert {"restaurant_menu", "restaurant_wine", "japan_ict", "usa_ict"} <= set(kb.names())
    top = kb.search("restaurant_wine", "스테이크와 어울리는 레드 와인", k=3)
    assert any("스테이크" in d.page_content for d in top)
