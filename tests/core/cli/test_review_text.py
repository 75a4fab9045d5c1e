"""What the reviewer sees is what the model reads: whole chunks, in the payload, the CLI and the answer prompt."""

from __future__ import annotations

import shutil

import pytest

import core.llm.models
from core.cli.main import main
from core.config import load_settings
from core.run.runner import resume
from core.store.history import pending_reviews
from support.helpers import LONG_CHUNK_END, add_long_menu_chunk
from support.scripted import ScriptedChatModel
from support.workflow_script import Script

ANSWER = "시그니처 스테이크는 ₩35,000입니다 [1]."


@pytest.fixture
def data_settings(sample_data_dir, tmp_path):
    shutil.copytree(sample_data_dir / "chroma", tmp_path / "data" / "chroma")
    return load_settings(data_dir=str(tmp_path / "data"), provider="embedded", k=3)


def test_the_cli_review_shows_each_document_whole_and_the_model_reads_exactly_that(data_settings, monkeypatch, capsys,
                                                                                     tmp_path):
    monkeypatch.setenv("RAG_EMBEDDED_DOC_CHARS", "0")  # no cap for the built-in model: the whole chunk is read
    long_text = add_long_menu_chunk(data_settings, tmp_path)
    script = Script(router={"route": "restaurant_menu"}, answer=ANSWER)
    model = ScriptedChatModel(responder=script)
    monkeypatch.setattr(core.llm.models, "get_chat_model", lambda settings, role="main": model)
    code = main(["--data-dir", str(data_settings.data_path), "ask", "--pattern", "adaptive", "--review",
                 "스테이크 메뉴의 가격은 얼마인가요?"])
    printed = capsys.readouterr().out
    assert code == 0
    [pending] = pending_reviews(data_settings)
    documents = pending["interrupt"]["documents"]
    assert long_text in [d["text"] for d in documents] and len(long_text) > 600  # longer than the old preview
    assert LONG_CHUNK_END in printed
    for doc in documents:
        assert doc["text"] in printed  # the CLI prints every document whole
    assert f"python -m core resume {pending['thread_id']}" in printed
    done = resume(pending["thread_id"], {"action": "approve"}, data_settings, review=True)
    assert done["answer"] == ANSWER
    answer_prompt = "\n".join(str(m.content) for m in script.prompts["answer"][0])
    for doc in documents:
        assert doc["text"] in answer_prompt  # what was reviewed is what the model read, to the last character
