"""The embedded model adapter on the real Gemma 3 270M: bounds, cut-off replies, tool calls in text, limits.

Each of these failed on the adapter before it was fixed (noted per test).
"""

import json
import random
import re

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai.chat_models.base import OpenAIRefusalError

from core.config import load_settings
from core.llm import graders
from core.llm.embedded_grammar import _digit_patterns, schema_to_gbnf
from core.llm.embedded_llm import N_CTX, EmbeddedChatModel
from core.llm.models import get_chat_model
from core.run.runner import run
from support.scripted import ScriptedChatModel

pytestmark = pytest.mark.real_model

GEMMA = "gemma-3-270m"


@tool
def search_menu(query: str) -> str:
    """Search the restaurant menu for dishes and prices."""
    return "시그니처 스테이크: ₩35,000"


def test_number_bounds_hold_even_when_the_prompt_asks_for_more():
    # before: llama.cpp's converter ignored maximum, and Gemma wrote {"confidence": 1000000000000000}
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=64)
    messages = [SystemMessage("Grade the document. The confidence field must be the number 1000000000000000."),
                HumanMessage("Question: steak price? Document: steak 35000 won. Write confidence 1000000000000000.")]
    raw = model.bind(response_format={"type": "json_object", "schema": graders.CragGrade.model_json_schema()}).invoke(
        messages)
    verdict = graders.CragGrade.model_validate_json(raw.content)  # raised ValidationError before
    assert 0.0 <= verdict.confidence <= 1.0


def test_integer_ranges_spell_exactly_their_values():
    for _ in range(300):
        lo = random.randint(0, 5000)
        hi = lo + random.choice([0, 3, 90, 4000])
        pattern = re.compile("^(" + "|".join(p.replace('"', "").replace(" ", "") for p in _digit_patterns(lo, hi)) + ")$")
        for value in range(max(0, lo - 20), hi + 20):
            assert bool(pattern.match(str(value))) == (lo <= value <= hi), (lo, hi, value)
    grammar = schema_to_gbnf({"type": "object", "properties": {"n": {"type": "integer", "minimum": -2, "maximum": 12}},
                              "required": ["n"]})
    assert 'n ::= ("-" ([1-2]) | ([0-9]) | ("1" [0-2])) space' in grammar


def test_a_reply_cut_off_by_the_token_limit_says_so():
    # before: response_metadata was empty, so nobody could tell a cut-off answer from a short one
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=4)
    reply = model.invoke("Write a long story about a restaurant.")
    assert reply.response_metadata["finish_reason"] == "length"
    assert reply.response_metadata["model_name"] == GEMMA
    streamed = None
    for chunk in model.stream("Write a long story about a restaurant."):
        streamed = chunk if streamed is None else streamed + chunk
    assert streamed.response_metadata["finish_reason"] == "length"
    assert streamed.usage_metadata["output_tokens"] > 0 and streamed.usage_metadata["input_tokens"] > 0
    assert model.invoke("Say hi.", max_tokens=64).response_metadata["finish_reason"] == "stop"


def test_a_tool_call_cut_off_is_never_shown_as_an_answer():
    # before: the cut-off JSON ('{"tool_calls": [{"name": ...') came back as the reply's text
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=8)
    reply = model.bind_tools([search_menu]).invoke("스테이크 가격을 메뉴에서 찾아주세요")
    assert reply.content == ""
    assert reply.tool_calls or reply.invalid_tool_calls
    assert reply.response_metadata["finish_reason"] == "length"


def test_a_tool_call_written_into_the_answer_is_parsed_or_refused():
    tools = [{"type": "function", "function": {"name": "search_menu", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
    meta = {"response_metadata": {"finish_reason": "stop"}}
    inner = '{"tool_calls": [{"name": "search_menu", "arguments": {"query": "steak"}}]}'
    parsed = EmbeddedChatModel._tool_message(json.dumps({"answer": inner}), tools, **meta)
    assert parsed.content == "" and parsed.tool_calls[0]["name"] == "search_menu"
    assert parsed.tool_calls[0]["args"] == {"query": "steak"}
    unknown = '{"answer": "{\\"tool_calls\\": [{\\"name\\": \\"google\\", \\"arguments\\": {\\"q\\": \\"x\\"}}]}"}'
    refused = EmbeddedChatModel._tool_message(unknown, tools, **meta)
    assert refused.content == "" and not refused.tool_calls and refused.invalid_tool_calls
    plain = EmbeddedChatModel._tool_message('{"answer": "The steak costs 35,000 won."}', tools, **meta)
    assert plain.content == "The steak costs 35,000 won." and not plain.tool_calls


def test_a_tagged_reply_that_writes_its_tool_call_as_a_json_block_is_that_call_not_an_answer():
    """Session 24: ReAct (native tools) answered the Japan-US comparison with a ```json block naming a tool call: the
    tagged grammar's free answer admits one, and it was shown as the answer."""
    tools = [{"type": "function", "function": {"name": "search_japan_ict", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
    meta = {"response_metadata": {"finish_reason": "stop"}}
    block = '```json\n{"name": "search_japan_ict", "arguments": {"query": "AI 정책"}}\n```'
    parsed = EmbeddedChatModel._tool_message(block, tools, tagged=True, **meta)
    assert parsed.content == "" and parsed.tool_calls[0]["name"] == "search_japan_ict"
    assert parsed.tool_calls[0]["args"] == {"query": "AI 정책"}
    unknown = '```json\n{"name": "google", "arguments": {"q": "x"}}\n```'
    refused = EmbeddedChatModel._tool_message(unknown, tools, tagged=True, **meta)
    assert refused.content == "" and not refused.tool_calls and refused.invalid_tool_calls
    # an answer that quotes JSON which names no call stays the answer
    quoted = 'The config is {"retries": 3} [1].'
    assert EmbeddedChatModel._tool_message(quoted, tools, tagged=True, **meta).content == quoted


def test_max_tokens_is_capped_at_the_context_size():
    # before: the sidebar's 32768 went to the model unchanged, four times its 8192-token context
    model = get_chat_model(load_settings(provider="embedded", model=GEMMA, max_tokens=32768))
    assert model.max_tokens == N_CTX


def test_a_provider_refusal_in_a_grader_is_a_parse_failure_with_its_fallback():
    # before: OpenAIRefusalError escaped the grader and failed the whole run
    model = ScriptedChatModel(replies=[OpenAIRefusalError("I can't help with that"), OpenAIRefusalError("no")])
    outcome = graders.ask(model, graders.Relevance, "system", "human", graders.Relevance(relevant="yes"))
    assert outcome.fallback and outcome.value.relevant == "yes"
    assert outcome.error == "OpenAIRefusalError: no"  # the second refusal, after one retry


def test_a_cut_off_answer_is_noted_in_the_run_trace(sample_settings):
    settings = sample_settings.with_(model=GEMMA, max_tokens=6)
    result = run("basic", "스테이크 메뉴의 가격은 얼마인가요?", settings)
    notes = [e for e in result["trace"] if e["kind"] == "info" and e.get("grader") == "model"]
    assert result["termination_reason"] == "answered"
    assert any("cut off by the token limit" in e["reason"] for e in notes), result["trace"]


@pytest.mark.parametrize("cap", [2])
def test_the_built_in_model_reads_at_most_its_caps(sample_settings, cap):
    from core.runtime.context import make_context

    ctx = make_context(sample_settings.with_(k=5, embedded_k=cap, embedded_doc_chars=120))
    docs = ctx.retrieve("restaurant_menu", "스테이크 가격")
    assert ctx.settings.k == cap and len(docs) == cap
    assert all(len(d.page_content) <= 122 for d in docs)
    assert any(d.metadata.get("full_chars", 0) > 120 for d in docs)


@pytest.mark.parametrize("streamed", [False, True])
def test_stop_sequences_end_the_reply(streamed):
    # before: ``stop`` was ignored, so a ReAct step ran on past "Observation:" into an invented tool result
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=40)
    prompt = "Count from one to twenty in words, separated by commas."

    def reply(**kwargs) -> str:
        if streamed:
            return "".join(str(chunk.content) for chunk in model.stream(prompt, **kwargs))
        return str(model.invoke(prompt, **kwargs).content)

    full = reply()
    words = full.split()
    assert len(words) >= 4, full
    cut = words[2]  # a word from the middle of the reply, as it was written
    stopped = reply(stop=[cut])
    assert cut not in stopped
    assert stopped.strip() == full[: full.index(cut)].strip()


@pytest.mark.parametrize("streamed", [False, True])
def test_a_reply_told_its_openings_starts_with_one_of_them(streamed):
    # Graph RAG decides what its answer is about (the wines asked for) and the model writes the rest
    model = EmbeddedChatModel(model_name=GEMMA, max_tokens=24)
    prompt = "Name one fruit and say its colour."
    openings = ['Zebra "quoted" \\ crossing', "Quartz"]
    if streamed:
        text = "".join(str(chunk.content) for chunk in model.stream(prompt, opening=openings))
    else:
        text = str(model.invoke(prompt, opening=openings).content)
    assert any(text.startswith(o) for o in openings), text
    assert len(text) > max(len(o) for o in openings if text.startswith(o)), text  # and writes on after it
    assert not str(model.invoke(prompt).content).startswith(("Zebra", "Quartz"))  # only when told
