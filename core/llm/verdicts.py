"""Verdicts read from the model's own probabilities: one forward pass, one token, no JSON to write.

A small model that writes "yes" to every relevance question still ranks documents by how sure it is
(Qwen2.5 1.5B: AUC 1.0 on 30 labelled pairs while its written verdict said "yes" to 29; DESIGN.md §5).
So a grader asks for one word and reads, at the first token of the reply, the probability of each of the
verdict's alternatives, renormalised over them: ``p`` is the share of the positive one. The threshold that
turns ``p`` into a decision is fitted on labelled pairs (core.studio.calibrate), as the Self-RAG and CRAG
papers fit theirs.

Providers that expose probabilities: the embedded llama.cpp model (the logits of the prompt's last token,
``EmbeddedChatModel`` with ``verdict_words``) and OpenAI (``logprobs``; an endpoint that answers without them is
remembered). OpenAI-compatible servers are not asked yet (see ``supports_probabilities``). Any other provider,
or any failure, returns None and the grader falls back to its written (structured) verdict; the trace says
which way each verdict was read.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage

NO_STREAM = {"tags": ["nostream"]}
TOP_LOGPROBS = 20  # the most alternatives OpenAI returns per position
MIN_MASS = 1e-4  # below this the model meant another word entirely: its renormalised p means nothing

_written_only: ContextVar[bool] = ContextVar("written_only", default=False)
_refused: set[tuple[str, str]] = set()  # (base URL, model) of servers that returned no logprobs
_refused_lock = threading.Lock()


@dataclass(frozen=True)
class Reading:
    """The alternatives' probabilities at the verdict, renormalised over them, and the mass they had."""

    probabilities: dict[str, float]
    mass: float

    def p(self, word: str) -> float:
        return self.probabilities.get(word, 0.0)


def word_variants(word: str) -> list[str]:
    """How a verdict word may start a reply: as written, capitalised, upper case, after a space or quote."""
    forms = dict.fromkeys([word, word.capitalize(), word.upper()])
    return [prefix + form for form in forms for prefix in ("", " ", '"')]


def reading_from_logits(logits, first_tokens: dict[str, set[int]]) -> Reading | None:
    """Softmax over the whole vocabulary, summed per alternative over the tokens that start it."""
    import numpy as np

    row = np.asarray(logits, dtype=np.float64)
    row = np.exp(row - row.max())
    total = row.sum()
    mass = {word: float(row[list(ids)].sum() / total) for word, ids in first_tokens.items() if ids}
    return renormalised(mass)


def reading_from_logprobs(top: list[dict], words: list[str]) -> Reading | None:
    """The same from OpenAI-style ``top_logprobs`` of the reply's first token ({token, logprob} each)."""
    mass = dict.fromkeys(words, 0.0)
    for entry in top:
        token = str(entry.get("token", "")).strip().strip('"').lower()
        if not token:
            continue
        starts = [w for w in words if w.lower().startswith(token) or token.startswith(w.lower())]
        if len(starts) == 1:  # a token that could begin two alternatives tells nothing
            mass[starts[0]] += math.exp(float(entry.get("logprob", -math.inf)))
    return renormalised(mass)


def renormalised(mass: dict[str, float]) -> Reading | None:
    """The alternatives' masses as shares of their sum; None when they had next to none."""
    total = sum(mass.values())
    if total < MIN_MASS:
        return None
    return Reading({word: value / total for word, value in mass.items()}, total)


@contextmanager
def written_verdicts():
    """Within it, every grader reads the verdict the model writes (probes compare the two ways)."""
    token = _written_only.set(True)
    try:
        yield
    finally:
        _written_only.reset(token)


def supports_probabilities(model) -> bool:
    """Whether the model can be asked for a verdict's probabilities (it may still decline at the call)."""
    if _written_only.get():
        return False
    if getattr(model, "verdict_probabilities", False):
        return True
    from langchain_openai import ChatOpenAI

    from core.llm.structured import CompatChatModel

    # OpenAI-compatible servers get written verdicts for now: llama-cpp-python's server, asked for logprobs while
    # a run's other calls queue behind it, kept a test's request waiting past its timeout (tests/core/llm/test_openai_compatible)
    return (isinstance(model, ChatOpenAI) and not isinstance(model, CompatChatModel)
            and _endpoint_key(model) not in _refused)


def _endpoint_key(model) -> tuple[str, str]:
    return str(getattr(model, "openai_api_base", "") or ""), str(getattr(model, "model_name", "") or "")


def read_verdict(model, messages: list[BaseMessage], words: list[str]) -> Reading | None:
    """Ask for one word among ``words`` and read their probabilities; None where the model gives none.

    Provider errors (connection, auth) propagate: they are not a missing feature.
    """
    if not supports_probabilities(model):
        return None
    if getattr(model, "verdict_probabilities", False):
        reply = model.bind(verdict_words=list(words)).invoke(messages, config=NO_STREAM)
        data = reply.response_metadata.get("verdict_probabilities")
        return Reading(data["probabilities"], data["mass"]) if data else None
    import openai

    try:  # not streamed: a run streams every call it can, and a streamed reply may carry no logprobs
        reply = model.bind(logprobs=True, top_logprobs=TOP_LOGPROBS, max_tokens=1, stream=False).invoke(
            messages, config=NO_STREAM)
    except (openai.BadRequestError, openai.UnprocessableEntityError, openai.InternalServerError):
        reply = None  # llama-cpp-python's server answers 500 without logits_all; others reject the fields
    top = _first_top_logprobs(reply) if reply is not None else None
    if top is None:
        with _refused_lock:
            _refused.add(_endpoint_key(model))
        return None
    return reading_from_logprobs(top, words)


def _first_top_logprobs(reply: AIMessage) -> list[dict] | None:
    logprobs = (reply.response_metadata or {}).get("logprobs") or {}
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    first = content[0] or {}
    top = first.get("top_logprobs") or []
    return top or [{"token": first.get("token", ""), "logprob": first.get("logprob", 0.0)}]


def forget_refusals() -> None:
    """Forget which servers returned no logprobs (tests; a server that was upgraded)."""
    with _refused_lock:
        _refused.clear()


def probability_text(event: dict) -> str:
    """How a verdict read from probabilities was decided: ``0.81 ≥ 0.62``, ``0.30 ≤ 0.45 < 0.70`` ("" if written)."""
    p, threshold = event.get("p"), event.get("threshold")
    if event.get("method") != "probability" or p is None or threshold is None:
        return ""
    if isinstance(p, list):  # one p per item (knowledge strips)
        return " ".join(f"{x:.2f}" for x in p) + f" ({'≥'} {threshold:.2f})"
    if isinstance(threshold, list):
        lower, upper = threshold
        if p >= upper:
            return f"{p:.2f} ≥ {upper:.2f}"
        return f"{p:.2f} < {lower:.2f}" if p < lower else f"{lower:.2f} ≤ {p:.2f} < {upper:.2f}"
    return f"{p:.2f} {'≥' if p >= threshold else '<'} {threshold:.2f}"
