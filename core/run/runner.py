"""Run a pattern on one question (or resume a paused run) and stream what happens.

``stream_run`` yields plain-dict events for any front end (CLI, Streamlit, compare, eval):
``start``, ``node``, ``trace``, ``token``, ``progress`` (a long step counting what it has done),
``queued`` (waiting for a free slot), ``interrupt``, ``done`` (with the result) or ``error``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessageChunk, HumanMessage
from langgraph.errors import GraphRecursionError
from langgraph.types import Command

from core.config import Settings, visitor_of
from core.llm.models import friendly_error, model_name, resolve_provider
from core.patterns import get_pattern, run_graph
from core.patterns.answer_review import ANSWER_NODES, CHECK_NODES, VERIFY, review_mode
from core.patterns.common import turn_input
from core.run.run_slots import SLOTS, RunRefused
from core.run.telemetry import run_tracer
from core.runtime.context import RunContext, make_context
from core.runtime.review import ReviewDecisionError, normalise_decision
from core.runtime.trace import UsageCallback, decoding_totals, merge_usage
from core.secrets import redact_all, remember_secrets
from core.store.checkpoint import get_checkpointer, pending_interrupts
from core.store.db import StoreError, store_error, transient_errors
from core.store.db import errors as db_errors
from core.store.history import turn_message_id
from core.store.threads import ThreadBusyError, get_registry

RUN_OPTIONS = ("review", "review_answer")  # options of every run, whatever its pattern
UNREVIEWED_ORIGINS = frozenset({"compare", "eval"})
QUEUE_POLL_SECONDS = 0.5
CANCELLED_MESSAGE = "cancelled: the run was stopped before it finished (the page was left or the request ended)"
log = logging.getLogger(__name__)


class RunInputError(ValueError):
    """The question cannot be run as given (empty, too long, unknown thread)."""


def check_question(question: str, settings: Settings) -> str:
    """The question as it is run and stored: trimmed, without NUL characters (Postgres text cannot hold them)."""
    text = (question or "").replace("\x00", "").strip()
    if not text:
        raise RunInputError("The question is empty: type a question first.")
    problem = too_long("The question", text, settings.max_question_chars)
    if problem:
        raise RunInputError(f"{problem}. Shorten it or put the long text into the knowledge base instead.")
    return text


def too_long(what: str, text: str, limit: int) -> str:
    """Why ``text`` is over the question length limit ('' when it is not; 0 means no bound)."""
    if limit <= 0 or len(text) <= limit:
        return ""
    return f"{what} is {len(text):,} characters long; the limit is {limit:,} characters (RAG_MAX_QUESTION_CHARS)"


def stream_run(pattern_id: str, question: str | None, settings: Settings, thread_id: str | None = None,
               resume: Any = None, ctx: RunContext | None = None, origin: str = "chat",
               continue_from: dict | None = None, **options) -> Iterator[dict]:
    """Run (or with ``resume`` continue) one turn; yields events, the last is ``done`` or ``error``.

    ``origin`` (chat | compare | eval | fork) says who started a new thread; only chats are listed in the chat sidebars.
    ``continue_from`` ({"path": nodes so far, **fields for the result}) runs a thread prepared by core.studio.fork
    on from its newest checkpoint instead of starting a turn.
    Every run that claimed its thread is closed with a status, whatever happens: a consumer that
    stops reading (a page left mid-run closes the generator) leaves it ``cancelled``.
    """
    options = {**options, "review_answer": "off"} if origin in UNREVIEWED_ORIGINS else options  # nobody reviews there
    registry = _registry(settings)
    pattern, question, thread_id, resume = _checked(registry, settings, pattern_id, question, thread_id, resume,
                                                    options)
    resume = _resumable(settings, thread_id, resume)
    remember_secrets(settings)  # the checkpoints of this run are stored without its keys (core.store.checkpoint)
    question, resume = redact_all(question, settings), redact_all(resume, settings)  # nor do threads get them
    started = time.perf_counter()
    result: dict = {"pattern": pattern.id, "thread_id": thread_id, "question": question,
                    **{k: v for k, v in (continue_from or {}).items() if k != "path"}}
    try:  # what the run needs, before it claims the thread: a failure here leaves no run behind
        ctx = ctx or make_context(settings, **options)
        provider = resolve_provider(settings)
        result.update(provider=provider, model=model_name(settings, provider), retrieval=ctx.retrieval)
        graph = run_graph(pattern, get_checkpointer(settings))
    except Exception as exc:  # provider misconfigured, model missing: one clear line
        result.update(_failure("error", friendly_error(exc, settings)), **_totals({}, [], started))
        yield {"type": "start", "thread_id": thread_id, "pattern": pattern.id, "question": question}
        yield {"type": "error", "message": result["error"], "result": redact_all(result, settings)}
        return
    ticket = admit(settings)  # before the thread is claimed: a refused run leaves nothing behind
    try:
        run_id, earlier = _claim(registry, thread_id, pattern.id, question, origin, resuming=resume is not None)
    except BaseException:
        SLOTS.leave(ticket, started=False)
        raise
    question = result["question"] = earlier.get("question", question)
    result["run_id"] = run_id
    usage = UsageCallback()
    spans = run_tracer(settings, pattern.id, thread_id, run_id, question, resuming=resume is not None)  # None: off
    # a resumed run continues the path it paused on; a fork the path up to the step it forked at
    path: list[str] = list(earlier.get("path") or (continue_from or {}).get("path", []))
    seen: list[dict] = []  # trace events so far: what a cancelled run shows of how far it got
    status = "cancelled"
    holding, stream = False, None
    try:
        yield {"type": "start", "thread_id": thread_id, "pattern": pattern.id, "question": question}
        yield from _queued(ticket, settings)
        holding = True
        config = _config(pattern, thread_id, usage, spans, settings)
        stream = graph.stream(_graph_input(pattern, question, options, resume, continue_from, run_id, settings),
                              config, context=ctx, stream_mode=["updates", "messages", "custom"], subgraphs=True)
        yield from _stream_events(stream, pattern, path, seen, settings)
        result.update(_state_result(graph.get_state(config), pattern, question, get_checkpointer(settings)))
        status = "waiting" if result["interrupted"] else "done"
    except GraphRecursionError:
        result.update(_failure("error", "stopped: the graph hit its recursion limit (a loop did not end)"))
        status = "failed"
    except Exception as exc:  # provider down, bad key, timeout: one clear line, the thread stays usable
        result.update(_failure("error", friendly_error(exc, settings)))
        status = "failed"
    finally:  # also on GeneratorExit (the consumer went away), where no event can be sent any more
        SLOTS.leave(ticket, holding)
        paused = _still_paused(stream, status, settings, thread_id, run_id)
        status, result, notices = _closed(registry, run_id, status, result, paused=paused, earlier=earlier, seen=seen,
                                          usage=usage, path=path, started=started, spans=spans, settings=settings)
    yield from _ending(status, result, notices, thread_id, settings)


def _checked(registry, settings: Settings, pattern_id: str, question: str | None, thread_id: str | None,
             resume: Any, options: dict) -> tuple:
    """What a run is asked to do, checked before anything starts: (pattern, question, thread id, resume decision).

    A resume takes its pattern from the paused thread; a new turn a checked question
    and (unless given) a new thread id. Options no state field of the pattern takes are refused.
    """
    if resume is not None:
        thread = registry.get(thread_id or "")
        if not thread:
            raise RunInputError(f"Unknown thread {thread_id!r}: nothing to resume.")
        pattern_id = thread["pattern"]  # the decision is checked against the pause it answers (_resumable)
    else:
        question = check_question(question, settings)
        thread_id = thread_id or uuid.uuid4().hex[:12]
    pattern = get_pattern(pattern_id)
    # an option no state field takes would be dropped without a word (a renamed option once was, in a test)
    unknown = sorted(k for k, v in options.items() if v is not None and k not in RUN_OPTIONS and k not in pattern.reset)
    if unknown:
        raise RunInputError(f"{pattern.id} takes no run option {', '.join(unknown)}; "
                        f"it takes: {', '.join(RUN_OPTIONS)}, {', '.join(sorted(pattern.reset))}")
    return pattern, question, thread_id, resume


def _resumable(settings: Settings, thread_id: str, resume: Any) -> Any:
    """The decision checked against the pause it answers (a drop of documents is not a drop of sentences), before
    the run claims the thread: a decision the pause cannot take is refused with the pause left as it was."""
    if resume is None:
        return None
    waiting = pending_interrupts(settings, thread_id)
    payload = waiting[0] if waiting and isinstance(waiting[0], dict) else {}
    try:
        resume = normalise_decision(resume, payload.get("kind"))
    except ReviewDecisionError as exc:
        raise RunInputError(str(exc)) from None
    if payload.get("kind") == "answer_review" and resume["action"] == "drop":
        known = [c["id"] for c in payload.get("claims") or []]
        unknown = [str(i) for i in resume["claims"] if str(i).strip() not in known]
        if unknown:
            raise RunInputError(f"no sentence {', '.join(unknown)} in the answer under review; "
                                f"its sentences are {', '.join(known) or 'none'}")
    return resume


def admit(settings: Settings):
    """A place in the run queue for this visitor's run; RunInputError past RAG_MAX_RUNS_PER_VISITOR or
    RAG_MAX_RUNS_IN_FLIGHT."""
    try:
        return SLOTS.join(visitor_of(settings), settings.max_runs_per_visitor, settings.max_runs_in_flight)
    except RunRefused as exc:
        raise RunInputError(str(exc)) from None


def room_problem(settings: Settings, runs: int = 1) -> str:
    """Why ``runs`` runs of this visitor would be refused now ('' when they would start): checked before a
    comparison or a fork writes anything, so neither is left half-written."""
    return SLOTS.refusal(visitor_of(settings), runs, settings.max_runs_per_visitor, settings.max_runs_in_flight)


def _queued(ticket, settings: Settings) -> Iterator[dict]:
    """Wait for a free run slot: runs beyond the process-wide cap wait their turn, and say so (``queued``)."""
    place = 0
    while (now := SLOTS.wait(ticket, settings.max_concurrent_runs, timeout=QUEUE_POLL_SECONDS)):
        if now != place:
            place = now
            yield {"type": "queued", "place": place, "running": SLOTS.running}


def _config(pattern, thread_id: str, usage: UsageCallback, spans, settings: Settings) -> dict:
    # LangGraph's sync stream keeps one worker of the pool to wait on the graph's output: without the + 1, a
    # limit of one left no worker for the nodes and the run hung before its first one
    return {"configurable": {"thread_id": thread_id}, "callbacks": [usage, *([spans] if spans else [])],
            "recursion_limit": pattern.recursion_limit(settings), "max_concurrency": max(1, settings.max_concurrency) + 1}


def _graph_input(pattern, question: str | None, options: dict, resume: Any, continue_from: dict | None,
                 run_id: int, settings: Settings):
    """What the graph is started with: the reviewer's decision, nothing (a fork), or a new turn (its answer reviewed
    as the ``review_answer`` option says, else as RAG_REVIEW_ANSWER does)."""
    if resume is not None:
        return Command(resume=resume)
    if continue_from is not None:  # a fork: the thread's newest checkpoint already holds the changed state
        return None
    chosen = {k: v for k, v in options.items() if k in pattern.reset and v is not None}
    answer_review = options.get("review_answer") or settings.review_answer
    graph_input = turn_input(pattern.state, question, chosen, review=bool(options.get("review")),
                             review_answer=review_mode(answer_review))
    graph_input["messages"] = [HumanMessage(question, id=turn_message_id(run_id))]  # how a turn finds its run
    return graph_input


def _stream_events(stream, pattern, path: list[str], seen: list[dict], settings: Settings) -> Iterator[dict]:
    """The graph's stream as run events (``progress``, ``token``, ``node``, ``trace``); the top-level nodes
    are appended to ``path``, the trace events to ``seen``."""
    for namespace, mode, chunk in stream:
        if mode == "custom":  # a long step reporting how far it is (core.runtime.trace.progress_reporter)
            if isinstance(chunk, dict) and "progress" in chunk:
                yield {"type": "progress", **chunk["progress"]}
            continue
        if mode == "messages":
            message, meta = chunk
            # chunks only: whole messages here are state updates, already streamed as chunks
            if isinstance(message, AIMessageChunk) and message.content \
                    and meta.get("langgraph_node") in pattern.answer_nodes | ANSWER_NODES \
                    and "nostream" not in (meta.get("tags") or []):
                yield {"type": "token", "text": message.content, "node": meta["langgraph_node"]}
            continue
        for node, update in chunk.items():
            if node == "__interrupt__":
                continue
            if not namespace and node != VERIFY:  # the path is the pattern's; the check is the run's own
                path.append(node)
            yield {"type": "node", "node": node, "namespace": list(namespace)}
            events = update.get("trace") if isinstance(update, dict) else None
            if not namespace and node in pattern.subgraph_nodes:  # the subgraph streamed its own events already
                events = [e for e in events or [] if e.get("node") == node]
            for item in events or []:
                seen.append(item)
                yield {"type": "trace", "event": redact_all(item, settings)}


def _state_result(state, pattern, question: str | None, checkpointer=None) -> dict:
    """The run's result fields from the graph's state where the stream ended (finished, or paused for review:
    inside the pattern another one runs (Auto), the paused graph's own values)."""
    values = state.values
    interrupts = [i.value for i in state.interrupts] if getattr(state, "interrupts", None) else []
    if interrupts and pattern.paused_values:
        values = {**values, **pattern.paused_values(state, checkpointer)}
    return dict(
        answer=values.get("answer", ""),
        standalone_question=values.get("standalone_question", question),
        edited_question=values.get("edited_question", ""),  # the reviewer's edit, which was answered
        termination_reason=values.get("termination_reason") or ("" if interrupts else "error"),
        termination_message=values.get("termination_message", ""),
        sources=values.get("sources", []),
        searched=sorted(set(values.get("searched") or [])),  # what the evaluation scores routing by
        trace=values.get("trace", []),
        interrupted=bool(interrupts),
        interrupt=interrupts[0] if interrupts else None,
        error=None,
        **{name: values.get(name) for name in pattern.result_fields},  # what badges and evaluation read
        **_checked_answer(values),
    )


def _checked_answer(values: dict) -> dict:
    """The claim check's fields of the result, when the answer was checked; the drafts a reviewer changed."""
    out = {}
    if values.get("verification"):
        out.update(claims=values.get("claims") or [], claim_support=values.get("claim_support") or {},
                   verification=values["verification"])
    if values.get("drafts"):  # exports carry every version: the drafts and the answer that stood
        out["drafts"] = values["drafts"]
    return out


def _still_paused(stream, status: str, settings: Settings, thread_id: str, run_id: int) -> bool:
    """Close the graph's stream; True when a cancelled resume stopped before its review node ran (the thread
    still waits for that review). Never raises: nothing may keep the run from being closed."""
    try:
        if stream is not None:
            stream.close()
        return status == "cancelled" and bool(pending_interrupts(settings, thread_id))
    except Exception as exc:
        log.warning("while closing run %s: %s", run_id, exc)
        return False


def _closed(registry, run_id: int, status: str, result: dict, *, paused: bool, earlier: dict, seen: list[dict],
            usage: UsageCallback, path: list[str], started: float, spans, settings: Settings) -> tuple[str, dict, list]:
    """Close the run with its final status and (redacted) result, whatever stopped it: (status, result, the model
    adapter's notices). A run cancelled while its thread still waits for review is ``waiting`` again, with the
    paused run's record; one cancelled otherwise keeps the trace it got as far as."""
    if paused:
        status, result = "waiting", {**result, **earlier}
    elif status == "cancelled":
        result.update(_failure("cancelled", CANCELLED_MESSAGE), error=None, trace=seen)
    notices = usage.notice_events()  # model-adapter notices (cut off, tools emulated): in the trace, said once
    if notices:
        result["trace"] = list(result.get("trace") or []) + notices
    pattern_usage = {node: stats for node, stats in usage.per_node.items() if node not in CHECK_NODES}  # check: its own
    result.update(_totals(merge_usage(earlier.get("usage", {}), pattern_usage), path, started))
    result = redact_all(result, settings)
    _close(registry, run_id, status, result)
    if spans is not None:
        spans.finish(result, status)
    return status, result, notices


def _ending(status: str, result: dict, notices: list[dict], thread_id: str, settings: Settings) -> Iterator[dict]:
    """The last events of a closed run: the model notices, the review pause, then ``error`` or ``done``."""
    for item in notices:
        yield {"type": "trace", "event": redact_all(item, settings)}
    if result.get("interrupted"):
        yield {"type": "interrupt", "payload": result["interrupt"], "thread_id": thread_id}
    if status == "failed":
        yield {"type": "error", "message": result["error"], "result": result}
    else:
        yield {"type": "done", "result": result}


def _claim(registry, thread_id: str, pattern_id: str, question: str | None, origin: str,
           resuming: bool) -> tuple[int, dict]:
    """Claim the thread for this run (atomically): a new turn, or the paused run being resumed.

    Returns the run id and, when resuming, the paused run's record (question, path, usage so far).
    """
    try:
        if resuming:
            previous = registry.claim_review(thread_id)
            return previous["id"], {**(previous["result"] or {}), "question": previous["question"]}
        return registry.begin_turn(thread_id, pattern_id, question, origin), {}
    except ThreadBusyError as exc:
        raise RunInputError(str(exc)) from None
    except transient_errors() as exc:  # the registry stayed locked or unreachable: nothing started, nothing lost
        problem = store_error(exc, "the thread registry", "threads.sqlite")  # or it cannot be written at all
        raise RunInputError(str(problem or f"The thread registry is busy ({exc}); try again in a moment.")) from None


def _registry(settings: Settings):
    """The thread registry, or a RunInputError that says why it cannot be opened (the question is kept)."""
    try:
        return get_registry(settings)
    except StoreError as exc:
        raise RunInputError(str(exc)) from None


def _close(registry, run_id: int, status: str, result: dict) -> None:
    try:
        registry.finish_run(run_id, status, result)
    except db_errors() as exc:  # the run is no longer this process's: the next reader closes it as interrupted
        log.warning("could not record the end of run %s (%s); it will be marked interrupted", run_id, exc)


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
        "decoding": decoding_totals(usage),  # tokens/s and prompt-lookup drafts, where the model reports them
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
