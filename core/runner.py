"""Run a pattern on one question (or resume a paused run) and stream what happens.

``stream_run`` yields plain-dict events for any front end (CLI, Streamlit, compare, eval):
``start``, ``node``, ``trace``, ``token``, ``progress`` (a long step counting what it has done),
``interrupt``, ``done`` (with the result) or ``error``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessageChunk
from langgraph.errors import GraphRecursionError
from langgraph.types import Command

from core.checkpoint import get_checkpointer
from core.config import Settings
from core.context import RunContext, make_context
from core.models import friendly_error, model_name, resolve_provider
from core.patterns import compile_pattern, get_pattern
from core.patterns.common import turn_input
from core.review import ReviewDecisionError, normalise_decision
from core.threads import get_registry
from core.trace import UsageCallback, merge_usage

MAX_QUESTION_CHARS = 4000


class RunInputError(ValueError):
    """The question cannot be run as given (empty, too long, unknown thread)."""


def check_question(question: str) -> str:
    text = (question or "").strip()
    if not text:
        raise RunInputError("The question is empty: type a question first.")
    if len(text) > MAX_QUESTION_CHARS:
        raise RunInputError(f"The question is {len(text):,} characters long; the limit is {MAX_QUESTION_CHARS:,}. "
                            "Shorten it or put the long text into the knowledge base instead.")
    return text


def stream_run(pattern_id: str, question: str | None, settings: Settings, thread_id: str | None = None,
               resume: Any = None, ctx: RunContext | None = None, origin: str = "chat",
               continue_from: dict | None = None, **options) -> Iterator[dict]:
    """Run (or with ``resume`` continue) one turn; yields events, the last is ``done`` or ``error``.

    ``origin`` (chat | compare | eval | fork) says who started a new thread; only chats are listed in the chat sidebars.
    ``continue_from`` ({"path": nodes so far, **fields for the result}) runs a thread prepared by core.fork
    on from its newest checkpoint instead of starting a turn.
    """
    registry = get_registry(settings.data_path)
    if resume is not None:
        thread = registry.get(thread_id or "")
        if not thread:
            raise RunInputError(f"Unknown thread {thread_id!r}: nothing to resume.")
        pattern_id = thread["pattern"]
        previous = registry.last_run(thread_id)
        if not previous or previous["status"] != "waiting":
            raise RunInputError(f"Thread {thread_id} is not waiting for a review.")
        run_id, question = previous["id"], previous["question"]
        try:
            resume = normalise_decision(resume)
        except ReviewDecisionError as exc:
            raise RunInputError(str(exc)) from None
        earlier_usage = (previous["result"] or {}).get("usage", {})
        earlier_path = (previous["result"] or {}).get("path", [])
    else:
        question = check_question(question)
        thread_id = thread_id or uuid.uuid4().hex[:12]
        earlier_usage, earlier_path = {}, list((continue_from or {}).get("path", []))
        run_id = None
    pattern = get_pattern(pattern_id)
    started = time.perf_counter()
    yield {"type": "start", "thread_id": thread_id, "pattern": pattern.id, "question": question}

    usage = UsageCallback()
    path: list[str] = list(earlier_path)  # a resumed run continues the path it paused on
    result: dict = {"pattern": pattern.id, "thread_id": thread_id, "question": question,
                    **{k: v for k, v in (continue_from or {}).items() if k != "path"}}
    try:
        ctx = ctx or make_context(settings, **options)
        provider = resolve_provider(settings)
        result.update(provider=provider, model=model_name(settings, provider))
        graph = compile_pattern(pattern, ctx, get_checkpointer(settings.data_path))
        config = {"configurable": {"thread_id": thread_id}, "callbacks": [usage],
                  "recursion_limit": pattern.recursion_limit(settings),
                  "max_concurrency": settings.max_concurrency}
        if run_id is None:
            registry.touch(thread_id, pattern.id, question, "running", origin)
            run_id = registry.start_run(thread_id, question)
        else:
            registry.set_status(thread_id, "running")
        chosen = {k: v for k, v in options.items() if k in pattern.reset and v is not None}
        graph_input = (Command(resume=resume) if resume is not None else None if continue_from is not None
                       else turn_input(question, {**pattern.reset, **chosen}, review=bool(options.get("review"))))
        for namespace, mode, chunk in graph.stream(graph_input, config, stream_mode=["updates", "messages", "custom"],
                                                   subgraphs=True):
            if mode == "custom":  # a long step reporting how far it is (core.trace.progress_reporter)
                if isinstance(chunk, dict) and "progress" in chunk:
                    yield {"type": "progress", **chunk["progress"]}
                continue
            if mode == "messages":
                message, meta = chunk
                # chunks only: whole messages here are state updates, already streamed as chunks
                if isinstance(message, AIMessageChunk) and message.content \
                        and meta.get("langgraph_node") in pattern.answer_nodes \
                        and "nostream" not in (meta.get("tags") or []):
                    yield {"type": "token", "text": message.content, "node": meta["langgraph_node"]}
                continue
            for node, update in chunk.items():
                if node == "__interrupt__":
                    continue
                if not namespace:
                    path.append(node)
                yield {"type": "node", "node": node, "namespace": list(namespace)}
                events = update.get("trace") if isinstance(update, dict) else None
                for item in events or []:
                    yield {"type": "trace", "event": item}
        state = graph.get_state(config)
        values = state.values
        interrupts = [i.value for i in state.interrupts] if getattr(state, "interrupts", None) else []
        result.update(
            answer=values.get("answer", ""),
            standalone_question=values.get("standalone_question", question),
            termination_reason=values.get("termination_reason") or ("" if interrupts else "error"),
            termination_message=values.get("termination_message", ""),
            sources=values.get("sources", []),
            trace=values.get("trace", []),
            interrupted=bool(interrupts),
            interrupt=interrupts[0] if interrupts else None,
            error=None,
        )
        status = "waiting" if interrupts else "done"
    except GraphRecursionError:
        result.update(_failure("error", "stopped: the graph hit its recursion limit (a loop did not end)"))
        status = "failed"
    except Exception as exc:  # provider down, bad key, timeout: one clear line, the thread stays usable
        result.update(_failure("error", friendly_error(exc, settings)))
        status = "failed"
    result.update(_totals(merge_usage(earlier_usage, usage.per_node), path, started))
    if run_id is not None:
        registry.finish_run(run_id, status, result)
        registry.set_status(thread_id, status)
    if result.get("interrupted"):
        yield {"type": "interrupt", "payload": result["interrupt"], "thread_id": thread_id}
    if status == "failed":
        yield {"type": "error", "message": result["error"], "result": result}
    else:
        yield {"type": "done", "result": result}


def _failure(reason: str, message: str) -> dict:
    return {"answer": "", "termination_reason": reason, "termination_message": message, "error": message,
            "interrupted": False, "interrupt": None, "sources": [], "trace": [],
            "standalone_question": None}


def _totals(usage: dict, path: list[str], started: float) -> dict:
    return {
        "usage": usage,
        "llm_calls": sum(s["llm_calls"] for s in usage.values()),
        "tokens": sum(s["tokens"] for s in usage.values()),
        "ms": int((time.perf_counter() - started) * 1000),
        "path": path,
    }


def run(pattern_id: str, question: str | None, settings: Settings, **kwargs) -> dict:
    """Run to the end (or to an interrupt) and return the result dict."""
    result: dict = {}
    for item in stream_run(pattern_id, question, settings, **kwargs):
        if item["type"] in ("done", "error"):
            result = item["result"]
    return result


def resume(thread_id: str, decision: Any, settings: Settings, **kwargs) -> dict:
    """Continue a run paused for review with the reviewer's decision."""
    return run("", None, settings, thread_id=thread_id, resume=decision, **kwargs)


# ---------------------------------------------------------------- reading threads back


def _latest_checkpoints(settings: Settings, thread_id: str | None = None) -> dict:
    """thread_id -> the newest top-level CheckpointTuple, read straight from the checkpointer."""
    saver = get_checkpointer(settings.data_path)
    config = {"configurable": {"thread_id": thread_id}} if thread_id else None
    latest: dict = {}
    for item in saver.list(config):
        conf = item.config["configurable"]
        if conf.get("checkpoint_ns"):
            continue  # subgraph checkpoints
        if conf["thread_id"] not in latest:  # list() yields newest first
            latest[conf["thread_id"]] = item
    return latest


def _interrupts(item) -> list:
    return [getattr(v, "value", v) for channel, v in _flatten_writes(item.pending_writes or [])
            if channel == "__interrupt__"]


def _flatten_writes(writes):
    for _task, channel, value in writes:
        for v in (value if isinstance(value, (list, tuple)) else [value]):
            yield channel, v


def thread_history(settings: Settings, thread_id: str) -> list[dict]:
    """The conversation of a thread as turns, rebuilt from the checkpointer (survives restarts).

    Each turn: {"question", "answer", "result"} where result is the stored run record (sources,
    trace, usage) when there is one.
    """
    item = _latest_checkpoints(settings, thread_id).get(thread_id)
    if item is None:
        return []
    messages = item.checkpoint["channel_values"].get("messages", [])
    runs = [r for r in get_registry(settings.data_path).runs(thread_id) if r["status"] != "running"]
    turns: list[dict] = []
    for message in messages:
        if message.type == "human":
            turns.append({"question": message.content, "answer": "", "result": None})
        elif message.type == "ai" and turns and not message.tool_calls:
            turns[-1]["answer"] = message.content
    for turn, run_record in zip(turns, runs):
        turn["result"] = run_record["result"]
    return turns


def pending_reviews(settings: Settings) -> list[dict]:
    """Every thread paused at an interrupt, oldest first, with what it waits for."""
    registry = get_registry(settings.data_path)
    out = []
    for thread_id, item in _latest_checkpoints(settings).items():
        waiting = _interrupts(item)
        if not waiting:
            continue
        thread = registry.get(thread_id) or {}
        out.append({
            "thread_id": thread_id,
            "pattern": thread.get("pattern", "?"),
            "title": thread.get("title", ""),
            "paused_at": item.checkpoint.get("ts", ""),
            "question": item.checkpoint["channel_values"].get("standalone_question")
            or item.checkpoint["channel_values"].get("question", ""),
            "interrupt": waiting[0],
        })
    return sorted(out, key=lambda r: r["paused_at"])
