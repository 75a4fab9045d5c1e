"""Every sentence checked: an answer's claims against the run's documents, cheap checks first.

``check_claims`` splits the answer into claims (``no_claim`` for greetings, questions back and
declines), ranks sentence spans of the documents for each claim (term overlap, and the embedder when
one is given), and requires every figure of the claim in the evidence that supports it, not merely
somewhere in the documents. Claims that pass go to the model (``mode="model"``): one constrained call
per claim, or several claims per call (``batch``), at most ``max_checks`` claims per answer; a parse
failure or the budget leaves a claim ``unchecked``, never ``supported``. The result is plain data
(it goes into checkpoints and exports) and carries its own cost, apart from the pattern's.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Literal

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tracers.context import register_configure_hook
from pydantic import BaseModel, Field, create_model

from core.llm.claims.rules import EVIDENCE_SPANS, Check, Evidence, documents_of, no_claim_reason, rules_check, short
from core.llm.claims.spans import Sentence, split_answer
from core.prompts import claims as P
from core.prompts import fence

MODES = ("off", "rules", "model")
VERDICTS = ("supported", "unsupported", "no_claim", "unchecked")


# ---------------------------------------------------------------- model verdicts


class ClaimVerdict(BaseModel):
    verdict: Literal["supported", "contradicted", "not_in_documents"]


class ClaimVerdicts(BaseModel):
    verdicts: list[Literal["supported", "contradicted", "not_in_documents"]]


def _verdicts_schema(n: int) -> type[ClaimVerdicts]:
    return create_model("ClaimVerdicts", __base__=ClaimVerdicts, verdicts=(
        list[Literal["supported", "contradicted", "not_in_documents"]], Field(min_length=n, max_length=n)))


# ---------------------------------------------------------------- cost, counted apart from the pattern's


class _Cost(BaseCallbackHandler):
    """LLM calls, prompt / completion tokens and milliseconds of the model checks (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: dict = {}
        self.calls = self.prompt = self.completion = self.ms = 0

    def on_chat_model_start(self, serialized, messages, *, run_id, **kwargs) -> None:
        self.started[run_id] = time.perf_counter()

    def on_llm_start(self, serialized, prompts, *, run_id, **kwargs) -> None:
        self.started[run_id] = time.perf_counter()

    def on_llm_end(self, response, *, run_id, **kwargs) -> None:
        with self.lock:
            start = self.started.pop(run_id, time.perf_counter())
            self.calls += 1
            self.ms += int((time.perf_counter() - start) * 1000)
            for gens in response.generations:
                for gen in gens:
                    usage = getattr(getattr(gen, "message", None), "usage_metadata", None) or {}
                    self.prompt += int(usage.get("input_tokens", 0))
                    self.completion += int(usage.get("output_tokens", 0))

    def on_llm_error(self, error, *, run_id, **kwargs) -> None:
        self.started.pop(run_id, None)


# every model call made while a check runs reports to that check's counter (threads of a batch included)
_COUNTER: ContextVar[_Cost | None] = ContextVar("rag_claim_cost", default=None)
register_configure_hook(_COUNTER, inheritable=True)


# ---------------------------------------------------------------- embeddings


_vectors: OrderedDict = OrderedDict()  # (embedder, kind, text) -> vector; spans repeat across runs
_vectors_lock = threading.Lock()
VECTOR_CACHE = 4096


def _embed(embeddings, kind: str, texts: list[str]) -> list[list[float]]:
    """Vectors for texts, from the cache or one batch call for the ones not cached."""
    model = getattr(embeddings, "model_id", type(embeddings).__name__)
    with _vectors_lock:
        missing = list(dict.fromkeys(t for t in texts if (model, kind, t) not in _vectors))
    if missing:
        fresh = embeddings.embed_documents(missing) if kind == "passage" else [embeddings.embed_query(t) for t in missing]
        with _vectors_lock:
            for text, vector in zip(missing, fresh):
                _vectors[(model, kind, text)] = vector
            while len(_vectors) > VECTOR_CACHE:
                _vectors.popitem(last=False)
    with _vectors_lock:
        return [_vectors.get((model, kind, t)) or embeddings.embed_query(t) for t in texts]


# ---------------------------------------------------------------- the model check


def _evidence_text(ev: Evidence, spans: list[int]) -> str:
    """Quoted spans in document order (so claims over the same spans share the prompt prefix)."""
    ordered = sorted(dict.fromkeys(spans), key=lambda i: (ev.spans[i].doc, ev.spans[i].start))
    return "\n".join(f"[{n}] {ev.label(i)}\n{fence(ev.spans[i].quote)}" for n, i in enumerate(ordered, 1))


def _claim_message(ev: Evidence, checks: list[Check], question: str) -> str:
    spans = [i for c in checks for i in c.spans[:EVIDENCE_SPANS]]
    parts = [f"Evidence:\n{_evidence_text(ev, spans)}"]
    if question:
        parts.append(f"Question: {question}")
    if len(checks) == 1:
        parts.append(f"Sentence: {fence(checks[0].text, 'answer', inline=True)}")
    else:
        parts.append("Sentences:\n" + "\n".join(f"{n}. {fence(c.text, 'answer', inline=True)}"
                                                for n, c in enumerate(checks, 1)))
    return "\n\n".join(parts)


CLAIM_WORDS = ["supported", "contradicted", "not_in_documents"]


def _ask_model(model, ev: Evidence, checks: list[Check], question: str, thresholds=None) -> list[str | None]:
    """One call over one or several claims: each verdict, or None when it could not be read.

    Where the model gives token probabilities, each claim is read on its own: p = p(supported) among the
    three verdicts against the ``claim`` threshold; below it, the likelier of the other two. The claim's
    record keeps ``p`` and ``threshold``.
    """
    from core.llm.graders import ask, default_thresholds, read_many

    humans = [_claim_message(ev, [c], question) for c in checks]
    readings = read_many(model, P.CLAIM_SYSTEM, humans, CLAIM_WORDS)
    if all(readings):
        cut = (thresholds or default_thresholds(model)).cut("claim")
        verdicts = []
        for check, reading in zip(checks, readings):
            p = reading.p("supported")
            verdicts.append("supported" if p >= cut else max(CLAIM_WORDS[1:], key=reading.p))
            check.reading = {"p": round(p, 3), "threshold": round(cut, 3)}
        return verdicts
    human = _claim_message(ev, checks, question)
    if len(checks) == 1:
        outcome = ask(model, ClaimVerdict, P.CLAIM_SYSTEM, human, ClaimVerdict(verdict="not_in_documents"))
        return [None if outcome.fallback else outcome.value.verdict]
    schema = _verdicts_schema(len(checks))
    outcome = ask(model, schema, P.CLAIMS_SYSTEM, human, schema(verdicts=["not_in_documents"] * len(checks)))
    return [None] * len(checks) if outcome.fallback else list(outcome.value.verdicts)


def _settle(ev: Evidence, check: Check, verdict: str | None) -> None:
    check.checked_by = "model"
    quote = f"“{short(ev.spans[check.spans[0]].quote)}”" if check.spans else "nothing"
    if verdict is None:
        check.verdict, check.detail = "unchecked", "parse_failure"
        check.reason = "the model's verdict could not be read, so it was not checked"
    elif verdict == "supported":
        check.verdict, check.detail, check.reason = "supported", "", f"the documents say {quote}"
    elif verdict == "contradicted":
        check.verdict, check.detail, check.reason = "unsupported", "contradicted", f"the documents say otherwise: {quote}"
    elif check.figures_found:
        # "not in the documents" over a claim whose every figure the rules found in its passage: a small model
        # misses "오후 9시" in "21:00" (Qwen, 3 of 3 such sentences); the figures decide, a contradiction would not
        check.verdict, check.detail, check.checked_by = "supported", "figures_and_terms", "rules"
        check.reason = f"its figures are in the evidence (the model found no statement of it): {quote}"
    else:
        check.verdict, check.detail, check.reason = "unsupported", "not_in_documents", "the documents do not say this"


def _model_checks(model, ev: Evidence, pending: list[Check], question: str, max_checks: int,
                  batch: int, thresholds=None) -> str:
    """Settle pending claims with the model, at most ``max_checks`` of them; returns an error, if one stopped it."""
    chosen, over = pending[:max(0, max_checks)], pending[max(0, max_checks):]
    for check in over:
        check.verdict, check.detail = "unchecked", "budget"
        check.reason = f"not checked: the limit of {max_checks} model checks per answer was reached (RAG_CLAIM_CHECKS)"
    for start in range(0, len(chosen), max(1, batch)):
        group = chosen[start:start + max(1, batch)]
        try:
            verdicts = _ask_model(model, ev, group, question, thresholds)
        except Exception as exc:  # provider trouble: the answer stands, its claims stay unchecked
            for check in chosen[start:]:
                check.checked_by, check.verdict, check.detail = "model", "unchecked", "error"
                check.reason = f"the model check failed: {short(str(exc), 160)}"
            return f"{exc.__class__.__name__}: {short(str(exc), 200)}"
        for check, verdict in zip(group, verdicts):
            _settle(ev, check, verdict)
    return ""


# ---------------------------------------------------------------- the whole check


def _rules_verdict(ev: Evidence, check: Check, mode: str) -> bool:
    """Settle what the rules can; True when the claim still needs the model."""
    if check.verdict == "unsupported":
        return False
    quote = f"“{short(ev.spans[check.spans[0]].quote)}”" if check.spans else ""
    if check.doubt and mode == "rules":
        check.verdict, check.reason = "unsupported", check.doubt
        return False
    if check.undecided and mode == "rules":
        check.verdict, check.reason = "unchecked", check.undecided
        return False
    if check.sure or mode == "rules":
        check.verdict, check.detail = "supported", "verbatim" if check.sure else "figures_and_terms"
        check.reason = (f"the documents say this: {quote}" if check.sure
                        else f"its figures and terms are in the evidence (no model check): {quote}")
        return False
    check.detail = ""
    return True


def _claim_vectors(embeddings, ev: Evidence, texts: list[str]) -> tuple[list | None, str]:
    """Claim vectors (and span vectors on ``ev``), or None and why when the embedder failed."""
    if embeddings is None or not texts or not ev.spans:
        return None, ""
    try:
        ev.vectors = _embed(embeddings, "passage", [f"{s.heading}: {s.quote}" if s.heading else s.quote
                                                     for s in ev.spans])
        return _embed(embeddings, "query", texts), ""
    except Exception as exc:  # the embedder is optional here: term overlap still ranks
        ev.vectors = None
        return None, f"embeddings unavailable ({exc.__class__.__name__}); ranked by term overlap only"


def _too_long(sentence: Sentence, max_chars: int) -> str | None:
    """Why a sentence is not checked at all: one huge sentence of figures would hold the rules for a minute."""
    if len(sentence.text) <= max_chars:
        return None
    return (f"not checked: this sentence is {len(sentence.text):,} characters long; sentences over "
            f"{max_chars:,} characters are left unchecked (RAG_CLAIM_MAX_CHARS)")


def check_claims(answer: str, documents: Sequence, *, question: str = "", mode: str = "model", model=None,
                 embeddings=None, max_checks: int = 8, batch: int = 1, thresholds=None,
                 max_chars: int = 1000) -> dict:
    """Check every sentence of ``answer`` against ``documents`` (dicts with text and source, or Documents).

    ``mode``: off | rules | model (model needs ``model``). ``batch``: claims per model call (1 = one each).
    Returns plain data: ``claims``, ``claim_support``, ``cost``, ``mode``, ``note``, ``error``.
    """
    started = time.perf_counter()
    mode = mode if mode in MODES else "model"
    if mode == "model" and model is None:
        raise ValueError("check_claims(mode='model') needs a chat model; pass model= or use mode='rules'")
    if mode == "off":
        return _result([], mode, _Cost(), started, max_checks)
    ev = Evidence.of(documents_of(documents))
    sentences = split_answer(answer)
    kept = [(s, no_claim_reason(s)) for s in sentences]
    long = {n: _too_long(s, max_chars) for n, (s, why) in enumerate(kept) if why is None}
    texts = [s.text for n, (s, why) in enumerate(kept) if why is None and not long[n]]
    vectors, note = _claim_vectors(embeddings, ev, texts)
    checks, pending, previous, n = [], [], "", 0
    for index, (sentence, why) in enumerate(kept):
        if why is not None:
            checks.append(Check(sentence.text, verdict="no_claim", reason=why, detail="no_claim"))
            continue
        if long[index]:  # unchecked, never supported: nothing read it
            checks.append(Check(sentence.text, verdict="unchecked", reason=long[index], detail="too_long"))
            continue
        vector = vectors[n] if vectors else None
        n += 1
        check = rules_check(ev, sentence.text, f"{question} {previous}", vector, question=question, previous=previous)
        previous = sentence.text
        checks.append(check)
        if _rules_verdict(ev, check, mode):
            pending.append(check)
    cost = _Cost()
    error = ""
    if pending:
        token = _COUNTER.set(cost)
        try:
            error = _model_checks(model, ev, pending, question, max_checks, batch, thresholds)
        finally:
            _COUNTER.reset(token)
    return _result([_claim_record(ev, c) for c in checks], mode, cost, started, max_checks, note, error, max_chars)


def _claim_record(ev: Evidence, check: Check) -> dict:
    evidence = []
    for i in check.spans[:EVIDENCE_SPANS] if check.verdict != "no_claim" else []:
        span = ev.spans[i]
        doc = ev.docs[span.doc]
        evidence.append({"source": doc.source, "chunk": doc.chunk, "quote": span.quote})
    record = {"text": check.text, "verdict": check.verdict, "evidence": evidence, "reason": check.reason,
              "checked_by": check.checked_by if check.verdict != "no_claim" else "rules", "detail": check.detail}
    if check.reading and check.checked_by == "model":  # the model's verdict was read from its probabilities
        record.update(method="probability", **check.reading)
    return record


def _result(claims: list[dict], mode: str, cost: _Cost, started: float, max_checks: int, note: str = "",
            error: str = "", max_chars: int = 1000) -> dict:
    count = {v: sum(1 for c in claims if c["verdict"] == v) for v in VERDICTS}
    budget = sum(1 for c in claims if c["detail"] == "budget")
    long = sum(1 for c in claims if c["detail"] == "too_long")
    notes = [note] if note else []
    if budget:
        notes.append(f"{budget} claim(s) not checked: at most {max_checks} model checks per answer (RAG_CLAIM_CHECKS)")
    if long:
        notes.append(f"{long} sentence(s) not checked: over {max_chars:,} characters (RAG_CLAIM_MAX_CHARS)")
    return {
        "mode": mode,
        "claims": claims,
        "claim_support": {"supported": count["supported"], "unsupported": count["unsupported"],
                          "unchecked": count["unchecked"], "claims": len(claims) - count["no_claim"],
                          "not_checked_budget": budget},
        "cost": {"llm_calls": cost.calls, "prompt_tokens": cost.prompt, "completion_tokens": cost.completion,
                 "tokens": cost.prompt + cost.completion, "model_ms": cost.ms,
                 "ms": int((time.perf_counter() - started) * 1000)},
        "note": "; ".join(notes),
        "error": error,
    }


# ---------------------------------------------------------------- for the runner and the CLI


def claim_mode(settings) -> str:
    """The configured mode (RAG_VERIFY_CLAIMS); an unknown value means the default, model."""
    mode = str(getattr(settings, "verify_claims", "model") or "model").strip().lower()
    return mode if mode in MODES else "model"


def verify_answer(settings, answer: str, documents: Sequence, question: str = "", *, model=None, embeddings=None,
                  mode: str | None = None, batch: int = 1) -> dict:
    """``check_claims`` as configured: RAG_VERIFY_CLAIMS, RAG_CLAIM_CHECKS, the grader model, the embedder.

    Pass ``embeddings`` to rank with the embedder (the knowledge base's, already loaded); none: term overlap.
    """
    mode = mode or claim_mode(settings)
    if mode == "model" and model is None:
        from core.llm.models import get_chat_model

        model = get_chat_model(settings, role="grader")
    thresholds = None
    if mode == "model":
        from core.llm.thresholds import model_key, thresholds_for

        thresholds = thresholds_for(settings, model_key(model))
    return check_claims(answer, documents, question=question, mode=mode, model=model, embeddings=embeddings,
                        max_checks=settings.claim_checks, batch=batch, thresholds=thresholds,
                        max_chars=settings.claim_max_chars)
