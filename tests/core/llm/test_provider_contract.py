"""The contract every chat provider must meet; both embedded models run for real in CI.

Qwen2.5-Coder 1.5B (the default) is about ten times slower than Gemma 3 270M, so it runs the three
contract tests only. Other providers run when configured (RAG_CONTRACT_PROVIDERS=openai,ollama,openai-compatible).
"""

import os
import threading
from typing import Literal

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from core.config import load_settings
from core.llm.models import check, get_chat_model

pytestmark = pytest.mark.real_model

EMBEDDED = ["gemma-3-270m", "qwen2.5-coder-1.5b-instruct"]
CASES = [("embedded", name) for name in EMBEDDED] + [
    (p, None) for p in os.environ.get("RAG_CONTRACT_PROVIDERS", "").split(",") if p]


class Verdict(BaseModel):
    """Whether the document answers the question."""

    binary_score: Literal["yes", "no"] = Field(description="'yes' if relevant, else 'no'")


@tool
def search_menu(query: str) -> str:
    """Search the restaurant menu for dishes, prices and ingredients."""
    return "시그니처 스테이크: ₩35,000"


@pytest.fixture(params=CASES, ids=lambda case: case[1] or case[0])
def model(request):
    provider, name = request.param
    settings = load_settings(provider=provider, model=name, max_tokens=96)
    status = check(settings)
    if not status.ok:
        pytest.fail(f"provider not usable: {status.line()}")
    chat = get_chat_model(settings)
    assert getattr(chat, "model_name", name) == (name or status.model)  # the model that runs is the one named
    return chat


@pytest.mark.parametrize("name", EMBEDDED)
def test_check_reports_ok_quickly_for_embedded(name):
    status = check(load_settings(provider="embedded", model=name))
    assert status.ok and status.model == name, status.line()


def test_structured_output_returns_a_valid_literal_instance(model):
    result = model.with_structured_output(Verdict).invoke(
        "Question: 스테이크 가격은? Document: 시그니처 스테이크 ₩35,000. Is the document relevant?")
    assert isinstance(result, Verdict)
    assert result.binary_score in ("yes", "no")


def test_forced_tool_call_is_parseable(model):
    reply = model.bind_tools([search_menu], tool_choice="search_menu").invoke("스테이크 가격을 메뉴에서 찾아주세요")
    assert isinstance(reply, AIMessage) and not reply.content  # a call, never a call shown as text
    assert reply.tool_calls, reply
    call = reply.tool_calls[0]
    assert call["name"] == "search_menu"
    assert isinstance(call["args"].get("query"), str)
    assert call["id"]


def test_plain_and_streamed_generation_produce_text(model):
    assert model.invoke("Say hello.").content.strip()
    chunks = [c.content for c in model.stream("Count from 1 to 3.")]
    assert "".join(chunks).strip()
    assert len([c for c in chunks if c]) > 1  # really streamed, token by token


def test_embedded_model_is_safe_from_several_threads():
    model = get_chat_model(load_settings(provider="embedded", model="gemma-3-270m", max_tokens=16))
    results, errors = [], []

    def ask():
        try:
            results.append(model.with_structured_output(Verdict).invoke("Is water wet? Document: water is wet."))
        except Exception as exc:  # collected, asserted below
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 3
