"""The run trace: plain-dict events, the shape of a termination reason, and per-node usage accounting."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.config import get_stream_writer


@dataclass(frozen=True)
class Reason:
    """A reason a run can stop with: the id state and exports hold, its English and Korean wording, and
    its ``outcome`` class (answered | direct | budget | declined | rejected | error | stopped), which the
    outcome badge, the claim check and the evaluation read. Pattern modules declare theirs."""

    id: str
    en: str
    ko: str
    outcome: str


OUTCOME_CLASSES = ("answered", "direct", "budget", "declined", "rejected", "error", "stopped")
ERROR = Reason("error", "stopped by an error", "오류로 중단됨", "error")
# set by the runner, not by a pattern: the run did not reach its end
CANCELLED = Reason("cancelled", "cancelled before it finished", "끝나기 전에 취소됨", "stopped")
INTERRUPTED = Reason("interrupted", "interrupted: the server stopped", "서버가 멈춰 중단됨", "stopped")
RUN_REASONS = (ERROR, CANCELLED, INTERRUPTED)  # any run can end with these, whatever its pattern

RANKINGS = ("dense", "keyword", "fused")  # a retrieved chunk's {"rank", "score"} per retriever

EVENT_KINDS = ("route", "verdict", "retry", "rewrite", "tool", "interrupt", "stop", "error", "info")


def add_or_reset(left: list | None, right: list | None) -> list:
    """List reducer that appends, or empties the list when a node (or the caller) sends None."""
    if right is None:
        return []
    return (left or []) + list(right)


def event(node: str, kind: str, **fields: Any) -> dict:
    """One trace event as plain data (checkpoints must deserialise it without our classes)."""
    assert kind in EVENT_KINDS, kind
    out = {"node": node, "kind": kind}
    out.update({k: v for k, v in fields.items() if v is not None})
    return out


def stop(node: str, reason: str, message: str, **fields: Any) -> dict:
    """The state update that ends a run: the reason (an id the pattern declares), a human sentence, and a trace event."""
    assert reason.isidentifier(), reason
    return {
        "termination_reason": reason,
        "termination_message": message,
        "trace": [event(node, "stop", verdict=reason, reason=message, **fields)],
    }


def doc_ref(doc) -> dict:
    """What the trace says about a document: where it came from, not its text."""
    meta = doc.metadata
    ref = {"source": meta.get("source", "?"), "chunk_id": meta.get("chunk_id") or meta.get("url", "")}
    if meta.get("url"):
        ref["title"] = meta.get("title") or ""
    elif meta.get("chunk_index") is not None:  # position within its page: "chunk N" to a reader
        ref.update(page=meta.get("page"), chunk=int(meta["chunk_index"]) + 1)
    for name in RANKINGS:  # where each retriever put it (core.knowledge.hybrid), when it did
        if isinstance(meta.get(name), dict):
            ref[name] = dict(meta[name])
    return ref


# ---------------------------------------------------------------- reading a trace (front ends word it)

# (counter used, its budget, what is counted, offset): Self-RAG's first answer is not a regeneration
BUDGETS = (("relevance_retries", "max_rewrites", "rewrites", 0), ("rewrites", "max_rewrites", "rewrites", 0),
           ("generations", "max_generations", "regenerations", -1), ("iterations", "max_iterations", "steps", 0))


def target_text(value) -> str:
    """A trace target a person can read: "menu.md · chunk 3" for a document, plain text otherwise."""
    if value is None:
        return ""
    if isinstance(value, dict):
        if value.get("title") or str(value.get("chunk_id", "")).startswith("http"):
            return str(value.get("title") or value.get("chunk_id"))
        parts = [str(value.get("source") or "?")]
        if value.get("page") not in (None, "", 1) or str(parts[0]).lower().endswith(".pdf"):
            parts.append(f"p.{value.get('page') or 1}")
        if value.get("chunk"):
            parts.append(f"chunk {value['chunk']}")
        return " · ".join(parts)
    if isinstance(value, (list, tuple)):
        return ", ".join(target_text(v) for v in value)
    return str(value)


def budgets(counters: dict) -> list[tuple[str, int, int]]:
    """``(what, used, limit)`` for each budget in a counters dict; other counters are left out."""
    out = []
    for used_key, limit_key, what, offset in BUDGETS:
        if used_key in counters and limit_key in counters:
            used = max(int(counters[used_key]) + offset, 0)
            out.append((what, min(used, int(counters[limit_key])), int(counters[limit_key])))
    return out


def other_counters(counters: dict) -> dict:
    """The counters that are not one side of a budget (tool calls, parse errors...)."""
    paired = {key for used, limit, _, _ in BUDGETS if used in counters and limit in counters for key in (used, limit)}
    return {k: v for k, v in counters.items() if k not in paired}


class UsageCallback(BaseCallbackHandler):
    """Counts LLM calls, tokens and milliseconds per graph node (thread-safe: nodes run in parallel)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: dict[Any, tuple[str, float, int | None]] = {}
        self.per_node: dict[str, dict] = {}
        self.notices: list[tuple[str, str]] = []  # (node, what the model adapter reported), once each

    def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs) -> None:
        node = (metadata or {}).get("langgraph_node", "?")
        with self.lock:
            self.started[run_id] = (node, time.perf_counter(), (metadata or {}).get("rag_budget"))
            for note in (metadata or {}).get("rag_notices", []):  # e.g. tool calls emulated (core.llm.structured)
                if (node, note) not in self.notices:
                    self.notices.append((node, note))

    def on_llm_end(self, response, *, run_id, **kwargs) -> None:
        with self.lock:
            node, start, budget = self.started.pop(run_id, ("?", time.perf_counter(), None))
            stats = self.per_node.setdefault(node, {"llm_calls": 0, "tokens": 0, "ms": 0})
            stats["llm_calls"] += 1
            stats["ms"] += int((time.perf_counter() - start) * 1000)
            stats["tokens"] += _tokens(response)
            for key, value in _decoding(response).items():  # only models that report them (the embedded one)
                stats[key] = stats.get(key, 0) + value
            if _cut_off(response) and not budget:  # the output stopped at max_tokens: the answer view says so
                stats["truncated"] = stats.get("truncated", 0) + 1
            for note in _notices(response, budget):
                if (node, note) not in self.notices:
                    self.notices.append((node, note))

    def notice_events(self) -> list[dict]:
        """Trace events for what the model adapters reported: a reply cut off, tool calls emulated..."""
        return [event(node, "info", grader="model", target="model", reason=note) for node, note in self.notices]

    def on_llm_error(self, error, *, run_id, **kwargs) -> None:
        with self.lock:
            self.started.pop(run_id, None)


def _tokens(response) -> int:
    total = 0
    for gens in response.generations:
        for gen in gens:
            usage = getattr(getattr(gen, "message", None), "usage_metadata", None) or {}
            total += int(usage.get("total_tokens", 0))
    if not total and response.llm_output:
        usage = response.llm_output.get("token_usage") or {}
        total = int(usage.get("total_tokens", 0))
    return total


# response_metadata key -> per-node usage key: tokens written, the ms it took, prompt-lookup drafts (core.llm)
DECODING = {"decode_tokens": "decode_tokens", "decode_ms": "decode_ms", "lookup_drafted": "drafted",
            "lookup_accepted": "accepted"}


def _decoding(response) -> dict:
    """The decoding figures a reply's metadata carries, under their usage names (none: an empty dict)."""
    out: dict = {}
    for gens in response.generations:
        for gen in gens:
            meta = getattr(getattr(gen, "message", None), "response_metadata", None) or {}
            for key, name in DECODING.items():
                if isinstance(meta.get(key), (int, float)):
                    out[name] = out.get(name, 0) + int(meta[key])
    return out


def decoding_totals(usage: dict) -> dict:
    """A run's decoding over its nodes: tokens written, tokens/s, drafts proposed and accepted (empty: none reported)."""
    sums = {name: sum(int(s.get(name, 0)) for s in (usage or {}).values()) for name in DECODING.values()}
    if not any(name in s for s in (usage or {}).values() for name in DECODING.values()):
        return {}
    out = {**sums, "decode_tokens_per_s": round(sums["decode_tokens"] / sums["decode_ms"] * 1000, 1)
           if sums["decode_ms"] else None}
    out["acceptance"] = round(sums["accepted"] / sums["drafted"], 3) if sums["drafted"] else None
    return out


TRUNCATED = frozenset({"length", "max_tokens"})  # finish reasons that mean "cut off at the token limit"


def _notices(response, budget: int | None = None) -> list[str]:
    """What the model adapters reported in a reply's metadata, and whether it was cut off (at a structured
    call's token budget, core.llm.budgets, or at the run's max tokens)."""
    out = []
    for gens in response.generations:
        for gen in gens:
            meta = getattr(getattr(gen, "message", None), "response_metadata", None) or {}
            out += [str(n) for n in meta.get("notices", [])]
    if _cut_off(response) and budget:
        out.append(f"a structured reply was cut off at {budget} tokens (its schema's budget): its fallback applied")
    elif _cut_off(response):
        out.append("a reply was cut off by the token limit (finish reason: length): raise max tokens")
    return out


def _cut_off(response) -> bool:
    """Whether a reply stopped at its token limit. A verdict read from probabilities decodes one token by design
    (its finish reason is "length" on llama.cpp): it is whole, not cut off."""
    for gens in response.generations:
        for gen in gens:
            meta = getattr(getattr(gen, "message", None), "response_metadata", None) or {}
            if meta.get("verdict_probabilities"):
                continue
            info = getattr(gen, "generation_info", None) or {}
            reason = meta.get("finish_reason") or meta.get("done_reason") or meta.get("stop_reason") \
                or info.get("finish_reason")
            if reason in TRUNCATED:
                return True
    return False


def merge_usage(*usages: dict) -> dict:
    out: dict[str, dict] = {}
    for usage in usages:
        for node, stats in (usage or {}).items():
            acc = out.setdefault(node, {"llm_calls": 0, "tokens": 0, "ms": 0})
            extra = [k for k in ("truncated", *DECODING.values()) if stats.get(k)]
            for key in {*acc, *extra}:
                acc[key] = acc.get(key, 0) + int(stats.get(key, 0))
    return out


def progress_reporter(node: str, step: str, subject: str = ""):
    """``(done, total) -> None`` sending a progress item to the run's stream (the runner yields it as a
    ``progress`` event), for a long step inside a node: ``step`` names what is done (front ends word it),
    ``subject`` what it is done to. Outside a running graph it does nothing."""
    try:
        write = get_stream_writer()
    except RuntimeError:  # not inside a graph run (a direct call from code or a test)
        return lambda done, total: None

    def report(done: int, total: int) -> None:
        write({"progress": {"node": node, "step": step, "subject": subject, "done": done, "total": total}})

    return report
