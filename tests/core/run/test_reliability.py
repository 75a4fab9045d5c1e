"""Damaged or unusable data files, odd input: one clear message each, nothing lost (issue #21, item 10)."""

from __future__ import annotations

import os
import stat

import pytest

from core.config import load_settings
from core.run.runner import RunInputError, resume, run
from core.runtime.context import make_context
from core.store.threads import get_registry
from core.studio.question_set import QuestionSetError, parse_question_set
from support.app_support import app_data, assert_clean, happy_script, open_page, shown, texts  # noqa: F401
from support.scripted import ScriptedChatModel

GARBAGE = b"this is not a database, whatever its name says\n" * 200


def scripted_ctx(settings):
    model = ScriptedChatModel(responder=happy_script())
    return make_context(settings, llm=model, grader=model, web=lambda q: None)


@pytest.mark.parametrize("page", ["pages/1_Basic_RAG.py", "pages/11_Review.py"])
def test_a_damaged_thread_registry_is_one_clear_message_on_the_chat_and_review_pages(app_data, page):
    (app_data / "threads.sqlite").write_bytes(GARBAGE)
    at = open_page(page)
    assert_clean(at)  # no traceback
    text = shown(texts(at))  # the message is escaped Markdown (it may quote a path): read as rendered
    assert "threads.sqlite in the data directory) is damaged" in text
    assert str(app_data) not in text  # no server path
    assert (app_data / "threads.sqlite").read_bytes() == GARBAGE  # nothing deleted or overwritten


@pytest.mark.parametrize("breakage", ["data dir is a file", "registry file is a directory"])
def test_an_unusable_data_directory_is_a_clear_refusal_not_a_database_exception(tmp_path, breakage):
    data = tmp_path / "data"
    if breakage == "data dir is a file":
        data.write_text("a file where the data directory should be")
    else:
        (data / "threads.sqlite").mkdir(parents=True)  # as an unwritable directory: SQLite cannot open the file
    settings = load_settings(data_dir=str(data), provider="embedded")
    with pytest.raises(RunInputError, match="cannot be created or written: the data directory"):
        run("basic", "스테이크 가격?", settings)  # refused before any model or store is built


def test_a_damaged_checkpoint_database_is_reported_as_such_not_as_a_model_failure(sample_settings, tmp_path):
    settings = sample_settings.with_(data_dir=str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "checkpoints.sqlite").write_bytes(GARBAGE)
    result = run("basic", "스테이크 가격?", settings, ctx=scripted_ctx(settings))
    assert "checkpoints.sqlite in the data directory) is damaged" in result["error"]
    assert "model call failed" not in result["error"]
    assert (tmp_path / "data" / "checkpoints.sqlite").read_bytes() == GARBAGE


def test_a_question_with_nul_characters_runs_and_is_stored_on_postgres(sample_settings, database_url):
    settings = sample_settings.with_(database_url=database_url, k=2)
    done = run("basic", "스테이크\x00 가격?", settings, ctx=scripted_ctx(settings))
    assert done["termination_reason"] != "error", done["error"]
    assert get_registry(settings).runs(done["thread_id"])[0]["question"] == "스테이크 가격?"
    paused = run("basic", "와인\x00?", settings, ctx=scripted_ctx(settings), review=True)
    edited = resume(paused["thread_id"], {"action": "edit", "question": "와인\x00 가격?"}, settings,
                    ctx=scripted_ctx(settings), review=True)
    assert edited["error"] is None and "\x00" not in str(edited), edited["error"]
    get_registry(settings).rename(done["thread_id"], "제목\x00 하나")
    assert get_registry(settings).get(done["thread_id"])["title"] == "제목 하나"


def test_an_evaluation_line_nested_a_hundred_thousand_deep_is_refused_with_a_message():
    with pytest.raises(QuestionSetError, match="line 2: nested too deeply"):
        parse_question_set('{"question": "스테이크 가격?"}\n' + "[" * 100_000)


# ---------------------------------------------------------------- item 9: data files for the app's user only


def test_the_data_files_are_the_app_users_only(sample_settings, tmp_path):
    from core.knowledge.base import KnowledgeBase

    settings = sample_settings.with_(data_dir=str(tmp_path / "fresh" / "data"), k=2)
    KnowledgeBase(settings).ensure_samples()
    run("basic", "스테이크 가격?", settings, ctx=scripted_ctx(settings))
    data = tmp_path / "fresh" / "data"
    mode = lambda p: stat.S_IMODE(os.stat(p).st_mode)  # noqa: E731
    assert mode(data) == 0o700 and mode(data / "chroma") == 0o700
    for name in ("threads.sqlite", "checkpoints.sqlite"):
        assert mode(data / name) == 0o600, name
    sidecars = [p for p in data.glob("*.sqlite-*")]
    assert sidecars and all(mode(p) == 0o600 for p in sidecars)


def test_existing_registry_files_are_tightened_when_opened(tmp_path):
    data = tmp_path / "old"
    data.mkdir(mode=0o755)
    get_registry(data)
    os.chmod(data / "threads.sqlite", 0o644)  # as an older version left it
    from core.store.threads import ThreadRegistry

    ThreadRegistry(data)
    assert stat.S_IMODE(os.stat(data / "threads.sqlite").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o755  # a directory the operator made keeps its mode
