"""The run trace: plain-dict events, termination vocabulary and per-node usage accounting."""

from __future__ import annotations

import threading
import time
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.config import get_stream_writer

# Why a run stopped. Every pattern ends with exactly one of these.
TERMINATION_REASONS = {
    "accepted": "answer accepted",
    "answered": "answered from the retrieved documents",
    "direct_answer": "answered directly, no retrieval needed",
    "retry_budget_exhausted": "retry budget exhausted",
    "no_relevant_documents": "no relevant documents",
    "not_enough_evidence": "not enough evidence",
    "web_unavailable": "web search unavailable",
    "user_rejected": "rejected by the reviewer",
    "max_iterations": "iteration limit reached",
    "repeated_action": "the agent repeated a tool call",
    "error": "stopped by an error",
    # set by the runner, not by a pattern: the run did not reach its end
    "cancelled": "cancelled before it finished",
    "interrupted": "interrupted: the server stopped",
}
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
    """The state update that ends a run: the reason, a human sentence, and a trace event."""
    assert reason in TERMINATION_REASONS, reason
    return {
        "termination_reason": reason,
        "termination_message": message,
        "trace": [event(node, "stop", verdict=reason, reason=message, **fields)],
    }


def doc_ref(doc) -> dict:
    """What the trace says about a document: where it came from, not its text."""
    meta = doc.metadata
    return {"source": meta.get("source", "?"), "chunk_id": meta.get("chunk_id") or meta.get("url", "")}


class UsageCallback(BaseCallbackHandler):
    """Counts LLM calls, tokens and milliseconds per graph node (thread-safe: nodes run in parallel)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: dict[Any, tuple[str, float]] = {}
        self.per_node: dict[str, dict] = {}
        self.notices: list[tuple[str, str]] = []  # (node, what the model adapter reported), once each

    def on_chat_model_start(self, serialized, messages, *, run_id, metadata=None, **kwargs) -> None:
        node = (metadata or {}).get("langgraph_node", "?")
        with self.lock:
            self.started[run_id] = (node, time.perf_counter())
            for note in (metadata or {}).get("rag_notices", []):  # e.g. tool calls emulated (core.structured)
                if (node, note) not in self.notices:
                    self.notices.append((node, note))

    def on_llm_end(self, response, *, run_id, **kwargs) -> None:
        with self.lock:
            node, start = self.started.pop(run_id, ("?", time.perf_counter()))
            stats = self.per_node.setdefault(node, {"llm_calls": 0, "tokens": 0, "ms": 0})
            stats["llm_calls"] += 1
            stats["ms"] += int((time.perf_counter() - start) * 1000)
            stats["tokens"] += _tokens(response)
            for note in _notices(response):
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


def _notices(response) -> list[str]:
    out = []
    for gens in response.generations:
        for gen in gens:
            meta = getattr(getattr(gen, "message", None), "response_metadata", None) or {}
            out += [str(n) for n in meta.get("notices", [])]
            if meta.get("finish_reason") == "length" or meta.get("done_reason") == "length":
                out.append("a reply was cut off by the token limit (finish reason: length): raise max tokens")
    return out


def merge_usage(*usages: dict) -> dict:
    out: dict[str, dict] = {}
    for usage in usages:
        for node, stats in (usage or {}).items():
            acc = out.setdefault(node, {"llm_calls": 0, "tokens": 0, "ms": 0})
            for key in acc:
                acc[key] += int(stats.get(key, 0))
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
