"""Prompt-lookup decoding (core/llm/lookup_decoding.py): drafts from the prompt, verified in one batch.

The real-model tests run Gemma 3 270M at temperature 0 with lookup on and off and hold the loop to its
contract: the same tokens, drafts accepted where the reply copies its document, a grammar never
overruled by a draft, the counts in the reply's metadata and the run's usage, and a restored prompt state
followed by drafts.
"""

import json
from dataclasses import dataclass

import numpy as np
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from core.llm import lookup_decoding
from core.llm.embedded_llm import PROMPT_CACHE, EmbeddedChatModel, _finish_call, _llama_lock, _Perf
from core.llm.lookup_decoding import _Chooser, next_limit, propose
from core.run.runner import run
from core.runtime.context import make_context
from core.runtime.trace import UsageCallback, decoding_totals, merge_usage

GEMMA = "gemma-3-270m"
DOC = ("Opening hours: the bistro opens at 11:30 and closes at 22:00 from Tuesday to Sunday; it is closed on "
       "Mondays. The signature steak costs 35,000 won and the mushroom risotto costs 18,000 won. "
       "Parking is free for two hours in the basement garage of the Seoul Tower building.")
PRICES = [SystemMessage("Menu: signature steak 35,000 won; truffle cream pasta 24,000 won; mushroom risotto "
                        "18,000 won; grilled vegetable quinoa bowl 16,000 won; vegan mango coconut sorbet 9,000 won."),
          HumanMessage("List every dish of the menu with its price.")]
# llama.cpp's CPU kernels round a batch differently from a token read alone: measured on Gemma 3 270M, the gap
# between two tokens' logits moved by up to ~0.75 (core/llm/lookup_decoding.py). Replies may part only there.
NOISE = 1.0
QUOTE = [SystemMessage("Answer from the document below, copying its words.\n\nDocument: " + DOC),
         HumanMessage("Copy the sentence about opening hours, word for word.")]
SCHEMA = {"title": "Hours", "type": "object",
          "properties": {"hours": {"type": "string", "maxLength": 120},
                         "closed": {"type": "string", "enum": ["Monday", "Sunday", "never"]}},
          "required": ["hours", "closed"]}


def model(lookup: bool, **fields) -> EmbeddedChatModel:
    return EmbeddedChatModel(model_name=GEMMA, max_tokens=fields.pop("max_tokens", 48), lookup=lookup, **fields)


# ---------------------------------------------------------------- without a model


def test_drafts_follow_the_latest_match_of_the_longest_tail():
    history = np.array([5, 6, 7, 8, 9, 1, 6, 7, 2, 3, 6, 7], dtype=np.intc)
    assert propose(history, 3) == [2, 3, 6]  # "6 7" last seen before "2 3"
    assert propose(np.array([1, 2, 3], dtype=np.intc)) == []
    assert propose(np.array([4, 1, 2, 4], dtype=np.intc), 8) == [1, 2, 4]  # one token matched: a short draft


def test_drafts_grow_while_they_are_accepted_and_shrink_to_what_was_accepted_after_a_miss():
    assert next_limit(4, 4, 4) == 6 and next_limit(8, 8, 8) == lookup_decoding.MAX_DRAFT
    assert next_limit(8, 8, 3) == 4 and next_limit(8, 5, 0) == 1
    assert next_limit(3, 0, 0) == 3  # nothing was proposed: nothing learned


def test_the_chooser_applies_the_repeat_penalty_to_the_tokens_written_in_this_call_only():
    row = np.array([1.0, 2.0, 1.9, -1.0], dtype=np.float32)
    choose = _Chooser([], penalty=1.1, last_n=64, prompt_len=2)
    assert choose(row, np.array([1, 1], dtype=np.intc)) == 1  # token 1 is in the prompt: not penalised
    assert choose(row, np.array([0, 0, 1], dtype=np.intc)) == 2  # written once: 2.0 / 1.1 < 1.9


def test_a_chat_templates_stop_criterion_is_honoured_not_a_reason_to_skip_lookup():
    # Qwen's chat template hands create_completion a stopping criterion ("the last token is a stop token"); lookup
    # skipped every such call, so on the default model nothing was ever drafted (benchmarks/lookup_speed: 0 of 0)
    class Plain:
        pass

    assert lookup_decoding.eligible(Plain(), {"temp": 0.0, "stopping_criteria": [lambda tokens, logits: False]})
    assert not lookup_decoding.eligible(Plain(), {"temp": 0.8})


def test_a_runs_usage_sums_the_drafts_and_says_its_decode_speed():
    usage = merge_usage({"generate": {"llm_calls": 1, "tokens": 9, "ms": 5, "decode_tokens": 30, "decode_ms": 1000,
                                      "drafted": 20, "accepted": 15}},
                        {"generate": {"llm_calls": 1, "tokens": 9, "ms": 5, "decode_tokens": 10, "decode_ms": 1000,
                                      "drafted": 20, "accepted": 5}, "grade": {"llm_calls": 1, "tokens": 3, "ms": 1}})
    assert usage["generate"]["drafted"] == 40 and usage["generate"]["accepted"] == 20
    totals = decoding_totals(usage)
    assert totals["decode_tokens_per_s"] == 20.0 and totals["acceptance"] == 0.5
    assert decoding_totals({"grade": {"llm_calls": 1, "tokens": 3, "ms": 1}}) == {}  # nothing reported: nothing said


# ---------------------------------------------------------------- on Gemma 3 270M


@dataclass
class Decoded:
    text: str
    tokens: list  # what ``generate`` yielded
    steps: list  # the raw logits each chosen token was chosen from, in order
    meta: dict


def decode(lookup: bool, messages: list, schema: dict | None = None, max_tokens: int = 48,
           penalty: float = 1.1) -> Decoded:
    """One call through the adapter, recording the tokens written and the logits each was chosen from."""
    m = model(lookup, max_tokens=max_tokens, repeat_penalty=penalty)
    kwargs = {"response_format": {"type": "json_object", "schema": schema}} if schema else {}
    turns, grammar, _mode, _tools = m._prepare(messages, kwargs, False)  # no tools: the tool format is moot
    tokens, steps = [], []

    def capture(_ids, logits):
        steps.append(np.array(logits, copy=True))
        return logits

    with _llama_lock:
        llama = m._llama()
        perf, original = _Perf(llama), llama.generate

        def recording(*args, **kw):
            for token in original(*args, **kw):
                tokens.append(int(token))
                yield token

        llama.generate = recording
        try:
            raw, kind = m._call(llama, turns, grammar, False, max_tokens, logits_processor=[capture])
        finally:
            llama.generate = original
        meta = perf.read()
        _finish_call(llama, meta)
    choice = raw["choices"][0]
    return Decoded((choice["message"]["content"] if kind == "chat" else choice["text"]) or "", tokens, steps, meta)


def assert_same_or_tied(off: Decoded, on: Decoded, penalty: float = 1.1) -> None:
    """The same tokens, or the first difference is between two tokens the model rated (nearly) alike.

    Batched and single-token reads round differently in llama.cpp's CPU kernels (core/llm/lookup_decoding.py):
    where the two best tokens are within that noise, either may win. Anywhere else a difference is a bug.
    """
    if on.tokens == off.tokens:
        return
    i = next((n for n, (a, b) in enumerate(zip(off.tokens, on.tokens)) if a != b), min(len(off.tokens), len(on.tokens)))
    assert i < min(len(off.tokens), len(on.tokens)), "one reply is a prefix of the other: a stop was missed"
    written = np.array(off.tokens[:i], dtype=np.intc)
    row = off.steps[i].copy()  # as llama.cpp's penalty sampler saw it
    if len(written):
        recent = np.unique(written[-64:])
        row[recent] = np.where(row[recent] <= 0, row[recent] * penalty, row[recent] / penalty)
    gap = abs(float(row[off.tokens[i]]) - float(row[on.tokens[i]]))
    assert gap < NOISE, f"token {i}: {off.tokens[i]} vs {on.tokens[i]} differ by {gap:.3f} in the model's logits"


@pytest.mark.real_model
@pytest.mark.parametrize("messages", [QUOTE, PRICES], ids=["hours", "prices"])
def test_lookup_writes_the_tokens_decoding_one_by_one_writes_and_accepts_drafts(messages):
    off, on = decode(False, messages), decode(True, messages)
    assert_same_or_tied(off, on)
    assert on.meta["lookup_accepted"] > 0 and on.meta["lookup_drafted"] >= on.meta["lookup_accepted"]
    assert "lookup_drafted" not in off.meta


@pytest.mark.real_model
def test_without_drafts_the_loop_writes_exactly_what_llamacpps_sampler_chain_writes(monkeypatch):
    """Batches of one token round as llama.cpp's own decoding does: every choice (processors, grammar, penalty)
    must then be the same to the bit, so any difference with drafts comes from the batches alone."""
    monkeypatch.setattr(lookup_decoding, "MAX_DRAFT", 0)
    penalised = [SystemMessage("Document: " + DOC + " " + DOC), HumanMessage("Repeat the document twice.")]
    for messages, schema, penalty in ((QUOTE, None, 1.1), (penalised, None, 1.3), (QUOTE, SCHEMA, 1.1)):
        off, on = decode(False, messages, schema, 48, penalty), decode(True, messages, schema, 48, penalty)
        assert on.tokens == off.tokens and on.text == off.text
        assert on.meta["lookup_drafted"] == 0


@pytest.mark.real_model
def test_a_stream_with_lookup_streams_the_same_reply_token_by_token():
    whole = model(True).invoke(QUOTE).content
    chunks = [c for c in model(True).stream(QUOTE)]
    assert "".join(c.content for c in chunks).strip() == whole
    assert len([c for c in chunks if c.content]) > 3
    assert any(c.response_metadata.get("lookup_accepted") for c in chunks)


@pytest.mark.real_model
def test_the_repeat_penalty_is_applied_as_llamacpp_applies_it():
    messages = [SystemMessage("Document: " + DOC + " " + DOC), HumanMessage("Repeat the document twice.")]
    off, on = decode(False, messages, max_tokens=64, penalty=1.3), decode(True, messages, max_tokens=64, penalty=1.3)
    assert_same_or_tied(off, on, penalty=1.3)
    assert on.meta["lookup_drafted"] > 0


@pytest.mark.real_model
def test_a_structured_reply_under_a_grammar_is_the_same_with_lookup():
    off, on = decode(False, QUOTE, SCHEMA, max_tokens=80), decode(True, QUOTE, SCHEMA, max_tokens=80)
    assert_same_or_tied(off, on)
    assert json.loads(on.text)["closed"] in SCHEMA["properties"]["closed"]["enum"]
    assert on.meta["lookup_accepted"] > 0


@pytest.mark.real_model
def test_drafts_the_grammar_forbids_are_never_written():
    """The prompt is full of a JSON the schema forbids ("maybe", a "note" key): drafts copy it, the grammar wins."""
    bait = '{"verdict": "maybe", "note": "maybe maybe maybe"}'
    messages = [SystemMessage(f"Earlier replies: {bait} {bait} {bait}"), HumanMessage(f"Reply like before: {bait}")]
    schema = {"title": "Verdict", "type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
              "required": ["verdict"], "additionalProperties": False}
    off, on = decode(False, messages, schema, max_tokens=24), decode(True, messages, schema, max_tokens=24)
    reply = json.loads(on.text)
    assert reply["verdict"] in ("yes", "no") and "note" not in reply
    assert_same_or_tied(off, on)
    assert on.meta["lookup_drafted"] > on.meta["lookup_accepted"]  # drafts were proposed and some refused


@pytest.mark.real_model
def test_the_drafts_and_the_decode_speed_reach_the_runs_usage():
    usage = UsageCallback()
    model(True).invoke(QUOTE, config={"callbacks": [usage], "metadata": {"langgraph_node": "generate"}})
    stats = usage.per_node["generate"]
    assert stats["accepted"] > 0 and stats["drafted"] >= stats["accepted"] and stats["decode_tokens"] > 0
    totals = decoding_totals(merge_usage(usage.per_node))
    assert totals["accepted"] == stats["accepted"] and totals["decode_tokens_per_s"] > 0


@pytest.mark.real_model
def test_a_restored_prompt_state_then_drafts_gives_the_same_reply():
    """Lookup after the prompt-state cache restored most of the prompt: the reply of lookup over a fresh read."""
    fresh = model(True, cache_mb=0)
    PROMPT_CACHE.clear()
    expected = fresh.invoke(QUOTE).content
    fresh.invoke([SystemMessage("Unrelated: " + DOC[::-1]), HumanMessage("Say hello.")])  # the live context moves on
    cached = model(True, cache_mb=64)
    cached.invoke(QUOTE)  # its prompt's state is kept...
    cached.invoke([SystemMessage("Unrelated: " + DOC[::-1]), HumanMessage("Say hello.")])  # ...and the context moves on
    again = cached.invoke(QUOTE)
    assert again.response_metadata["restored_prompt_tokens"] > 0
    assert again.response_metadata["lookup_accepted"] > 0
    assert again.content == expected


@pytest.mark.real_model
def test_the_drafts_reach_a_runs_usage_and_decoding_totals(sample_settings):
    llm = EmbeddedChatModel(model_name=GEMMA, max_tokens=48, lookup=True)
    result = run("basic", "What are La Foresta's opening hours?", sample_settings,
                 ctx=make_context(sample_settings, llm=llm))
    generate = result["usage"]["generate"]
    assert generate["drafted"] > 0 and generate["decode_tokens"] > 0
    decoding = result["decoding"]
    assert decoding["drafted"] == generate["drafted"] and decoding["accepted"] == generate.get("accepted", 0)
    assert decoding["decode_tokens_per_s"] > 0


@pytest.mark.real_model
def test_a_call_refused_before_decoding_leaves_no_drafts_on_for_the_next_user():
    from core.llm.embedded_llm import ContextOverflowError, get_llama

    with pytest.raises(ContextOverflowError):
        model(True).invoke("word " * 9000)  # longer than the context: refused before a token is read
    assert get_llama(model(True).model_file()).lookup is None
