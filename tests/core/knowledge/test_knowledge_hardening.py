"""Hostile uploads and careless re-indexing: limits per file, safe re-ingest and re-index, clear CLI errors."""

import io
import shutil
import zlib
from pathlib import Path

import pytest
from pypdf import PdfWriter

import core.knowledge.base
from core.cli.main import main
from core.config import load_settings
from core.knowledge.base import EMBED_BATCH, SAMPLES_DIR, KnowledgeBase
from core.knowledge.loaders import KnowledgeError, load_file
from support.app_support import app_data, assert_clean, open_page  # noqa: F401
from support.fakes import HashEmbeddings

JAPAN_PDF = SAMPLES_DIR / "japan_ict_policy.pdf"
NOTES = "# 주차\n\n" + "\n\n".join(f"안내 {i}: 지하 {i}층 주차장은 {i}시간 무료입니다." for i in range(40))


def kb_with(settings, **kwargs) -> KnowledgeBase:
    return KnowledgeBase(settings, HashEmbeddings(**kwargs))


def pdf(content: bytes, pages: int = 1) -> bytes:
    """A small PDF whose pages draw ``content`` (compressed): a few KB can hold millions of characters."""
    stream = zlib.compress(content, 9)
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (5 + i) for i in range(pages)) + b"] /Count %d >>" % pages,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream"]
    objs += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
             b"/Contents 4 0 R >>"] * pages
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def text_line(chars: int) -> bytes:
    return b"BT /F1 1 Tf 10 10 Td (" + b"A" * chars + b") Tj ET\n"


# ---------------------------------------------------------------- item 11: limits per file


def test_a_pdf_that_hits_a_pypdf_limit_fails_alone_and_the_batch_goes_on(settings):
    zip_bomb = pdf(b"\0" * 80_000_000)  # 78 KB that inflate past pypdf's 75 MB limit (LimitReachedError)
    report = kb_with(settings).ingest([], "uploads", files={"bomb.pdf": zip_bomb, "notes.md": NOTES.encode()})
    assert "LimitReachedError" in report.errors["bomb.pdf"] and "cannot read this PDF" in report.errors["bomb.pdf"]
    assert report.added["notes.md"] > 0


def test_a_small_pdf_that_expands_to_millions_of_characters_is_refused(settings):
    expanding = pdf(text_line(1000) * 2100)  # about 6 KB on disk, 2.1 million characters of text
    assert len(expanding) < 10_000
    with pytest.raises(KnowledgeError, match=r"more than 2,000,000 characters .*RAG_MAX_FILE_CHARS"):
        load_file(Path("expanding.pdf"), expanding, settings)
    small = settings.with_(max_file_chars=5_000)
    with pytest.raises(KnowledgeError, match="more than 5,000 characters"):
        load_file(Path("two_pages.pdf"), pdf(text_line(3000), pages=2), small)
    assert len(load_file(Path("one_page.pdf"), pdf(text_line(3000)), small)) == 1


def test_bytes_pages_and_chunks_are_capped_by_settings(settings):
    with pytest.raises(KnowledgeError, match=r"over the 1 MB limit \(RAG_MAX_FILE_MB\)"):
        load_file(Path("big.txt"), b"a" * (2**20 + 1), settings.with_(max_file_mb=1))
    with pytest.raises(KnowledgeError, match=r"over the 2 page limit \(RAG_MAX_PDF_PAGES\)"):
        load_file(JAPAN_PDF, None, settings.with_(max_pdf_pages=2))
    report = kb_with(settings.with_(max_file_chunks=3, chunk_size=100, chunk_overlap=0)).ingest(
        [], "uploads", files={"notes.md": NOTES.encode()})
    assert "chunk limit (RAG_MAX_FILE_CHUNKS)" in report.errors["notes.md"] and not report.added


def test_text_files_with_nul_or_control_bytes_are_refused(settings):
    report = kb_with(settings).ingest([], "uploads", files={"disguised.txt": b"MZ\x00\x03\x00binary",
                                                           "ansi.md": b"\x1b[31mred\x1b[0m",
                                                           "fine.txt": "탭\t줄바꿈\r\n폼피드\x0c끝".encode()})
    assert "control bytes" in report.errors["disguised.txt"] and "control bytes" in report.errors["ansi.md"]
    assert report.added == {"fine.txt": 1}


def test_a_password_protected_pdf_says_so(settings):
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt(user_password="secret", algorithm="AES-256")
    data = io.BytesIO()
    writer.write(data)
    with pytest.raises(KnowledgeError, match="password-protected"):
        load_file(Path("locked.pdf"), data.getvalue())


# ---------------------------------------------------------------- item 12: re-ingest adds before it deletes


def test_a_reingest_that_fails_half_way_keeps_the_old_document(settings):
    settings = settings.with_(chunk_size=40, chunk_overlap=0)  # one chunk per line
    kb = kb_with(settings)
    kb.ingest([], "notes", files={"notes.md": NOTES.encode()})
    before = kb.chunks("notes", limit=None)
    assert len(before) > EMBED_BATCH  # two embedding batches
    changed = NOTES.replace("무료", "유료").encode()  # every chunk changes
    failing = kb_with(settings, fail_after=1)  # the first batch goes in, the second fails
    try:
        report = failing.ingest([], "notes", files={"notes.md": changed, "other.md": "# 기타\n\n영업시간 안내".encode()})
    except ConnectionError:
        report = None
    after = {d.id: d.page_content for d in kb.chunks("notes", limit=None)}
    assert after == {d.id: d.page_content for d in before}  # old chunks whole, no half-new ones
    assert report and "embedding server went away" in report.errors["notes.md"]  # reported, not raised
    kb.ingest([], "notes", files={"notes.md": changed})  # the next re-ingest replaces them all
    texts = [d.page_content for d in kb.chunks("notes", limit=None)]
    assert texts and all("무료" not in t for t in texts) and len(texts) == len(before)


# ---------------------------------------------------------------- item 13: names, re-index, a deleted store


def test_reindex_never_touches_a_user_collection_named_like_its_temporary(settings):
    kb = kb_with(settings)
    kb.ingest([], "notes", files={"notes.md": NOTES.encode()})
    kb.ingest([], "notes-reindex", files={"mine.md": "# 내 메모\n\n지우면 안 됩니다.".encode()})
    other = KnowledgeBase(settings, HashEmbeddings(model_id="test:other"))
    seen = []
    other.reindex("notes", progress=lambda done, total, label: seen.append(other.names()))
    assert kb.info("notes-reindex")["sources"] == ["mine.md"]
    assert all(names == ["notes", "notes-reindex"] for names in seen)  # the temporary is never listed
    info = other.info("notes")
    assert info["embedding_model"] == "test:other" and info["chunks"] == len(kb.chunks("notes", limit=None))
    assert other.names() == ["notes", "notes-reindex"]
    assert "reindex_of" not in (other.client.get_collection("notes").metadata or {})


def test_a_failed_reindex_leaves_the_collection_and_no_temporary(settings):
    kb = kb_with(settings)
    kb.ingest([], "notes", files={"notes.md": NOTES.encode()})
    failing = KnowledgeBase(settings, HashEmbeddings(fail_after=0, model_id="test:other"))
    with pytest.raises(ConnectionError):
        failing.reindex("notes")
    assert [c.name for c in kb.client.list_collections()] == ["notes"]
    assert kb.info("notes")["embedding_model"] == "test:hash"


def test_the_cli_refuses_two_files_of_the_same_name_from_different_folders(tmp_path, capsys):
    data = str(tmp_path / "data")
    for folder, text in (("a", "# A\n\n첫 번째 폴더의 메모"), ("b", "# B\n\n두 번째 폴더의 메모")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.md").write_text(text, encoding="utf-8")
    assert main(["--data-dir", data, "ingest", str(tmp_path / "a/notes.md"), str(tmp_path / "b/notes.md"),
                 "--collection", "memo"]) == 1
    out = capsys.readouterr().out
    assert "ok     notes.md: 1 chunks -> memo" in out and "two files of this name in one batch" in out
    # a later run with the other folder's file does not replace the first one either, unless told to
    assert main(["--data-dir", data, "ingest", str(tmp_path / "b/notes.md"), "--collection", "memo"]) == 1
    assert "is already in 'memo'" in capsys.readouterr().out
    kb = kb_with(load_settings(data_dir=data))  # reading chunks back needs no particular embedder
    assert "첫 번째" in kb.chunks("memo")[0].page_content
    assert main(["--data-dir", data, "ingest", str(tmp_path / "b/notes.md"), "--collection", "memo", "--replace"]) == 0
    assert "두 번째" in kb.chunks("memo")[0].page_content
    # the same file again is an update, not a conflict
    assert main(["--data-dir", data, "ingest", str(tmp_path / "b/notes.md"), "--collection", "memo"]) == 0


def test_the_cli_validates_collection_names_with_a_clear_message(tmp_path, capsys):
    note = tmp_path / "note.md"
    note.write_text("# 메모\n\n내용", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        main(["--data-dir", str(tmp_path / "data"), "ingest", str(note), "--collection", "my notes!"])
    assert exit_.value.code == 2
    assert "'my notes!' is not a valid collection name" in capsys.readouterr().err


def test_a_store_folder_deleted_while_running_is_recreated(settings):
    kb = kb_with(settings)
    kb.ingest([], "notes", files={"notes.md": NOTES.encode()})
    shutil.rmtree(settings.data_path / "chroma")
    fresh = kb_with(settings)
    assert fresh.names() == []
    report = fresh.ingest([], "notes", files={"notes.md": NOTES.encode()})
    assert report.added["notes.md"] > 0 and fresh.names() == ["notes"]


def test_the_app_indexes_its_samples_again_after_the_store_folder_is_deleted(app_data, monkeypatch):
    monkeypatch.setattr(core.knowledge.base, "SAMPLE_COLLECTIONS", {"restaurant_wine": "restaurant_wine.md"})
    at = open_page("pages/12_Knowledge_base.py")
    assert len([e for e in at.expander if e.label.startswith("**")]) == 4
    shutil.rmtree(app_data / "chroma")
    at.run()
    assert_clean(at)
    assert [e.label.split("**")[1] for e in at.expander if e.label.startswith("**")] == ["restaurant_wine"]


def test_streamlits_upload_limit_matches_the_file_size_limit():
    import tomllib

    from core.config import PROJECT_ROOT, Settings

    config = tomllib.loads((PROJECT_ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] == Settings().max_file_mb
