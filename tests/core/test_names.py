"""Names stay names (issue 53, item 3): a collection name, a saved set's name, an advice or comparison id, a thread
id or an uploaded file's name never becomes a path outside the data directory or a SQL fragment; a bad one is
refused with a clear message."""

import pytest

from core.knowledge.base import KnowledgeBase, valid_collection_name
from core.knowledge.loaders import KnowledgeError
from support.fakes import HashEmbeddings


@pytest.mark.parametrize("name", ["menu\n", "menu\r\n", "../menu", "a/b", "menu;DROP TABLE x", "me nu", "a..b", "ab",
                                  "-menu", "메뉴판"])
def test_a_collection_name_that_is_not_a_plain_name_is_refused_in_core_with_the_rule(settings, name):
    assert not valid_collection_name(name)
    kb = KnowledgeBase(settings, HashEmbeddings())
    with pytest.raises(KnowledgeError, match="not a valid collection name"):  # never Chroma's own error
        kb.ingest([], name, files={"a.md": b"# A\n\ntext"})
    assert kb.names() == []


def test_the_cli_refuses_a_collection_name_ending_in_a_newline_in_one_line(tmp_path):
    from support.helpers import run_cli

    proc = run_cli("questions", "--collection", "menu\n", data_dir=tmp_path / "data")
    assert proc.returncode == 2 and "is not a valid collection name" in proc.stderr and "Traceback" not in proc.stderr


def test_an_uploaded_file_name_with_folders_is_indexed_under_its_own_name_and_nothing_is_written_outside(settings,
                                                                                                          tmp_path):
    kb = KnowledgeBase(settings, HashEmbeddings())
    report = kb.ingest([], "notes", files={"../../outside.md": b"# A\n\ntext"})
    assert list(report.added) == ["outside.md"] and not report.errors
    assert not (tmp_path / "outside.md").exists() and not (settings.data_path.parent / "outside.md").exists()


def test_a_saved_set_name_never_leaves_the_question_sets_folder(settings):
    from core.studio.question_set import QuestionSetError, load_saved_question_set, save_question_set

    item = {"id": "q1", "question": "가격?", "sources": [], "facts": [], "answerable": True, "category": "direct"}
    file = save_question_set(settings, "../../etc/passwd", [item])
    assert "/" not in file and (settings.data_path / "question_sets" / file).is_file()
    with pytest.raises(QuestionSetError, match="not a saved set name"):
        load_saved_question_set(settings, "../../etc/passwd.jsonl")


def test_an_advice_id_with_a_path_is_no_advice(settings):
    from core.studio import advise

    (settings.data_path / "secret.json").parent.mkdir(parents=True, exist_ok=True)
    (settings.data_path / "secret.json").write_text("{}", encoding="utf-8")
    with pytest.raises(KeyError, match="no saved advice"):
        advise.load_advice(settings, "../secret")


def test_a_thread_id_is_a_value_never_sql(settings):
    from core.store.threads import get_registry

    registry = get_registry(settings)
    registry.touch("t-1", "basic", "first", "done")
    assert registry.get("t-1")["title"] == "first"
    assert registry.get("x' OR '1'='1") is None and registry.get("t-1' --") is None
    assert registry.list(pattern="basic' OR '1'='1") == []


def test_an_upload_of_more_files_than_the_limit_is_refused_in_one_line_before_anything_is_indexed(settings):
    kb = KnowledgeBase(settings.with_(max_upload_files=3), HashEmbeddings())
    files = {f"f{n}.md": b"# A\n\ntext" for n in range(4)}
    with pytest.raises(KnowledgeError, match=r"^refused: 4 files in one upload would pass the limit of 3 files per "
                                             r"upload \(RAG_MAX_UPLOAD_FILES\); upload fewer at a time$"):
        kb.ingest([], "notes", files=files)
    assert kb.names() == []
    assert list(kb.ingest([], "notes", files=dict(list(files.items())[:3])).added) == ["f0.md", "f1.md", "f2.md"]
