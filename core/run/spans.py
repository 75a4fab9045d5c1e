"""The spans of one run, built from LangChain callbacks in the OpenInference conventions (Phoenix reads them).

One span for the run; one per graph node, with the decisions of our trace events (routes, verdicts, retry
reasons, why the run stopped) as attributes and as span events; one per model call (messages, token
counts), one per tool call, and a retriever span where a node searched (document ids and scores).
OpenInference's own LangChain instrumentation is not used: it patches every callback manager in the
process and records each node's whole state, while our decisions live in the trace events only the
node's output carries. Every value is redacted of the run's keys before it is set (core.secrets).
Imported only when telemetry is on (core.run.telemetry).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langgraph.errors import GraphInterrupt
from openinference.semconv.trace import DocumentAttributes as Doc
from openinference.semconv.trace import MessageAttributes as Msg
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as Attr
from openinference.semconv.trace import ToolCallAttributes as Call
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from core.runtime.trace import target_text
from core.secrets import redact_all

MAX_TEXT = 4000  # characters of one value in a span: enough to read a prompt or chunk, not a whole corpus
ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
KIND = Attr.OPENINFERENCE_SPAN_KIND
log = logging.getLogger(__name__)


class RunSpans(BaseCallbackHandler):
    """Callbacks of one run that open and close its spans (thread-safe: nodes run in parallel)."""

    def __init__(self, tracer, settings, *, pattern_id: str, thread_id: str, run_id: int,
                 question: str | None, resuming: bool) -> None:
        """Open the run's root span (its pattern, thread, run id and question); node and model spans go under it."""
        self.tracer, self.settings = tracer, settings
        self.lock = threading.Lock()
        self.open: dict[UUID, Span] = {}
        # runs without a span of their own (the graph, chains inside a node, routers) -> where their children go
        self.through: dict[UUID, Span] = {}
        self.routers: set[UUID] = set()  # chains inside a node: a router among them returns the next node's name
        # a subgraph's node returns its inner nodes' trace events again: what its inner node spans already showed
        self.covered: dict[Span, Counter] = {}
        self.up: dict[Span, Span] = {}  # node span -> the node span of the subgraph around it
        about = {"pattern": pattern_id, "thread_id": thread_id, "run_id": run_id, "resumed": resuming}
        self.root = tracer.start_span(f"{pattern_id} run", attributes=self._clean({
            KIND: Kind.CHAIN.value, Attr.INPUT_VALUE: question or "", Attr.SESSION_ID: thread_id,
            Attr.METADATA: _json(about), "rag.pattern": pattern_id, "rag.run_id": run_id, "rag.resumed": resuming}))

    # ------------------------------------------------------------ graph nodes

    def on_chain_start(self, serialized, inputs, *, run_id: UUID, parent_run_id: UUID | None = None,
                       metadata: dict | None = None, **kwargs: Any) -> None:
        """Open a node's span (a chain inside a node, a router among them, passes its children on)."""
        node = (metadata or {}).get("langgraph_node")
        # the node itself, not a chain in it; "__start__" of a subgraph only passes the parent's state on
        if parent_run_id is not None and node and kwargs.get("name") == node and not node.startswith("__"):
            span = self._start(run_id, parent_run_id, node, {KIND: Kind.CHAIN.value, "rag.node": node,
                                                             "rag.step": (metadata or {}).get("langgraph_step")})
            with self.lock:
                parent = self._parent(parent_run_id)
                self.covered[span] = Counter()
                if parent in self.covered:
                    self.up[span] = parent
            return
        with self.lock:
            self.through[run_id] = self._parent(parent_run_id)
            if parent_run_id is not None:
                self.routers.add(run_id)

    def on_chain_end(self, outputs, *, run_id: UUID, **kwargs: Any) -> None:
        """Close a node's span with its decisions; a router's choice goes on its node's span as ``rag.next``."""
        with self.lock:
            holder, router = self.through.pop(run_id, None), run_id in self.routers
            self.routers.discard(run_id)
            span = self.open.pop(run_id, None)
        if span is not None:
            self._end_node(span, outputs)
        elif router and isinstance(outputs, str) and holder is not self.root and holder.is_recording():
            holder.set_attribute("rag.next", outputs)  # a conditional edge's choice, e.g. generate

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Close a node's span as failed (or as paused, for a review interrupt)."""
        with self.lock:
            self.through.pop(run_id, None)
            self.routers.discard(run_id)
            span = self.open.pop(run_id, None)
        if span is None:
            return
        if isinstance(error, GraphInterrupt):  # paused for review: not a failure
            self._close(span, {"rag.interrupted": True})
        else:
            self._close(span, error=f"{type(error).__name__}: {error}")

    def _end_node(self, span: Span, outputs) -> None:
        """A node's decisions onto its span: attributes, one span event per trace event, retriever spans."""
        update = outputs if isinstance(outputs, dict) else getattr(outputs, "update", None)  # a dict or a Command
        update = update if isinstance(update, dict) else {}
        events = self._fresh(span, [e for e in update.get("trace") or [] if isinstance(e, dict)])
        goto = getattr(outputs, "goto", None)
        attrs = {**decisions(events), "rag.next": goto if isinstance(goto, str) and goto else None}
        if events:
            attrs.update({Attr.OUTPUT_VALUE: _json(events), Attr.OUTPUT_MIME_TYPE: "application/json"})
        for item in events:
            span.add_event(str(item.get("kind")), self._clean(event_attributes(item)))
        self._retriever_spans(span, events, update)
        self._close(span, attrs)

    def _fresh(self, span: Span, events: list[dict]) -> list[dict]:
        """The events not already shown by a node span inside this one; they count as shown for those around it."""
        with self.lock:
            seen, fresh = self.covered.pop(span, Counter()), []
            for item in events:
                key = _json(item)
                if seen[key]:
                    seen[key] -= 1
                else:
                    fresh.append(item)
            outer = self.up.pop(span, None)
            while outer is not None and outer in self.covered:
                self.covered[outer].update(_json(item) for item in fresh)
                outer = self.up.get(outer)
        return fresh

    def _retriever_spans(self, node_span: Span, events: list[dict], update: dict) -> None:
        """One retriever span per search the node traced, with the documents' ids, scores and text."""
        returned = {_doc_id(d): d for value in update.values() if isinstance(value, list)
                    for d in value if isinstance(d, Document)}
        for item in events:
            refs = item.get("documents")
            if item.get("kind") != "tool" or not isinstance(refs, list):
                continue
            attrs = {KIND: Kind.RETRIEVER.value, Attr.INPUT_VALUE: item.get("reason") or item.get("query"),
                     "rag.collections": str(item.get("target") or "")}
            for i, ref in enumerate(refs):
                attrs.update(document_attributes(i, ref, returned.get(str(ref.get("chunk_id") or ""))))
            span = self.tracer.start_span(str(item.get("grader") or "retriever"), attributes=self._clean(attrs),
                                          context=trace.set_span_in_context(node_span),
                                          start_time=getattr(node_span, "start_time", None))
            self._close(span)

    # ------------------------------------------------------------ model and tool calls

    def on_chat_model_start(self, serialized, messages, *, run_id: UUID, parent_run_id: UUID | None = None,
                            metadata: dict | None = None, invocation_params: dict | None = None,
                            **kwargs: Any) -> None:
        """Open a model call's span with its model, parameters and messages."""
        params, meta = invocation_params or {}, metadata or {}
        name = kwargs.get("name") or (serialized or {}).get("name") or "llm"
        attrs = {KIND: Kind.LLM.value, "rag.node": meta.get("langgraph_node"),
                 Attr.LLM_MODEL_NAME: params.get("model") or params.get("model_name") or meta.get("ls_model_name") or name,
                 Attr.LLM_PROVIDER: meta.get("ls_provider"), Attr.LLM_INVOCATION_PARAMETERS: _json(params)}
        for i, message in enumerate(messages[0] if messages else []):
            attrs.update(message_attributes(Attr.LLM_INPUT_MESSAGES, i, message))
        self._start(run_id, parent_run_id, name, attrs)

    def on_llm_end(self, response, *, run_id: UUID, **kwargs: Any) -> None:
        """Close a model call's span with its reply and token counts."""
        with self.lock:
            span = self.open.pop(run_id, None)
        if span is None:
            return
        generations = [g for gens in response.generations for g in gens]
        message = getattr(generations[0], "message", None) if generations else None
        attrs = token_counts(message, response.llm_output)
        if message is not None:
            attrs.update(message_attributes(Attr.LLM_OUTPUT_MESSAGES, 0, message))
        self._close(span, attrs)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Close a model call's span as failed."""
        self._fail(run_id, error)

    def on_tool_start(self, serialized, input_str: str, *, run_id: UUID, parent_run_id: UUID | None = None,
                      **kwargs: Any) -> None:
        """Open a tool call's span with its input."""
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        self._start(run_id, parent_run_id, name, {KIND: Kind.TOOL.value, Attr.TOOL_NAME: name,
                                                  Attr.INPUT_VALUE: input_str})

    def on_tool_end(self, output, *, run_id: UUID, **kwargs: Any) -> None:
        """Close a tool call's span with its output."""
        with self.lock:
            span = self.open.pop(run_id, None)
        if span is not None:
            self._close(span, {Attr.OUTPUT_VALUE: str(getattr(output, "content", output))})

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Close a tool call's span as failed."""
        self._fail(run_id, error)

    # ------------------------------------------------------------ the run

    def finish(self, result: dict, status: str) -> None:
        """End the run's span with how the run ended (and any step a cancelled run left open). Never raises."""
        try:
            with self.lock:
                left = list(self.open.values())
                self.open.clear()
            for span in left:
                self._close(span, error=f"the run ended ({status}) before this step finished")
            attrs = {Attr.OUTPUT_VALUE: result.get("answer") or "", "rag.status": status,
                     "rag.termination_reason": result.get("termination_reason"),
                     "rag.termination_message": result.get("termination_message"),
                     "rag.path": list(result.get("path") or []), "rag.llm_calls": result.get("llm_calls"),
                     "rag.tokens": result.get("tokens"), "rag.ms": result.get("ms")}
            self._close(self.root, attrs, error=result.get("error") if status == "failed" else None,
                        ok=status in ("done", "waiting"))  # a cancelled run neither failed nor succeeded
        except Exception as exc:  # telemetry must not be the reason a run cannot be closed
            log.warning("could not end the spans of run %s: %s", result.get("run_id"), exc)

    # ------------------------------------------------------------ helpers

    def _parent(self, parent_run_id: UUID | None) -> Span:
        """The span a new run hangs under (call with the lock held)."""
        if parent_run_id is None:
            return self.root
        return self.open.get(parent_run_id) or self.through.get(parent_run_id) or self.root

    def _start(self, run_id: UUID, parent_run_id: UUID | None, name: str, attrs: dict) -> Span:
        with self.lock:
            parent = self._parent(parent_run_id)
            span = self.open[run_id] = self.tracer.start_span(name, context=trace.set_span_in_context(parent),
                                                              attributes=self._clean(attrs))
        return span

    def _fail(self, run_id: UUID, error: BaseException) -> None:
        with self.lock:
            span = self.open.pop(run_id, None)
        if span is not None:
            self._close(span, error=f"{type(error).__name__}: {error}")

    def _close(self, span: Span, attrs: dict | None = None, error: str | None = None, ok: bool = True) -> None:
        """Set the attributes and the status (an error text redacted like the rest), and end the span.
        ``record_exception`` is not used: a traceback's locals and frames are not redacted."""
        if attrs:
            span.set_attributes(self._clean(attrs))
        if error:
            span.set_status(Status(StatusCode.ERROR, self._clean({"e": error})["e"]))
        elif ok:
            span.set_status(Status(StatusCode.OK))
        span.end()

    def _clean(self, attrs: dict) -> dict:
        """Attributes as OpenTelemetry takes them, every text redacted of the run's keys and cut to MAX_TEXT."""
        out = {}
        for key, value in redact_all({k: v for k, v in attrs.items() if v is not None}, self.settings).items():
            if isinstance(value, list):
                value = [_short(str(v)) for v in value]
            elif isinstance(value, str):
                value = _short(value)
            elif not isinstance(value, (bool, int, float)):
                value = _short(_json(value))
            out[key] = value
        return out


def decisions(events: list[dict]) -> dict:
    """What the trace events decided, as span attributes: routes, verdicts, retry reasons, why the run stopped."""
    routes = [target_text(e.get("target")) or str(e.get("verdict")) for e in events if e.get("kind") == "route"]
    verdicts = [f"{e.get('grader') or e.get('node')}: {target_text(e.get('verdict'))}"
                for e in events if e.get("kind") == "verdict"]
    retries = [str(e.get("reason") or e.get("verdict")) for e in events if e.get("kind") in ("retry", "rewrite")]
    errors = [str(e.get("reason")) for e in events if e.get("kind") == "error"]
    stops = [e for e in events if e.get("kind") == "stop"]
    out: dict[str, Any] = {"rag.routes": routes, "rag.verdicts": verdicts, "rag.retry_reasons": retries,
                           "rag.errors": errors}
    out = {k: v for k, v in out.items() if v}
    if stops:
        out.update({"rag.termination_reason": stops[-1].get("verdict"), "rag.termination_message": stops[-1].get("reason")})
    return out


def event_attributes(item: dict) -> dict:
    """One trace event as flat span-event attributes (nested values as JSON)."""
    out = {f"rag.{key}": value if isinstance(value, (str, bool, int, float)) else _json(value)
           for key, value in item.items() if key not in ("target", "documents")}
    if item.get("target") is not None:
        out["rag.target"] = target_text(item["target"])
    if isinstance(item.get("documents"), list):
        out["rag.documents"] = [target_text(ref) for ref in item["documents"]]
    return out


def document_attributes(i: int, ref: dict, doc: Document | None) -> dict:
    """A retrieved document in OpenInference's form: id, score, text, where it came from."""
    prefix = f"{Attr.RETRIEVAL_DOCUMENTS}.{i}."
    score = ref.get("score", (doc.metadata.get("score") if doc is not None else None))
    return {prefix + Doc.DOCUMENT_ID: str(ref.get("chunk_id") or target_text(ref)),
            prefix + Doc.DOCUMENT_SCORE: float(score) if isinstance(score, (int, float)) else None,
            prefix + Doc.DOCUMENT_CONTENT: doc.page_content if doc is not None else None,
            prefix + Doc.DOCUMENT_METADATA: _json(ref)}


def message_attributes(prefix: str, i: int, message) -> dict:
    """One chat message (role, text, tool calls) under ``prefix`` (llm.input_messages / llm.output_messages)."""
    base = f"{prefix}.{i}."
    content = message.content if isinstance(message.content, str) else _json(message.content)
    out = {base + Msg.MESSAGE_ROLE: ROLES.get(message.type, message.type), base + Msg.MESSAGE_CONTENT: content}
    for j, call in enumerate(getattr(message, "tool_calls", None) or []):
        out[f"{base}{Msg.MESSAGE_TOOL_CALLS}.{j}.{Call.TOOL_CALL_FUNCTION_NAME}"] = call.get("name")
        out[f"{base}{Msg.MESSAGE_TOOL_CALLS}.{j}.{Call.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}"] = _json(call.get("args"))
    return out


def token_counts(message, llm_output: dict | None) -> dict:
    """Prompt, completion and total tokens of a reply, from its usage metadata or the provider's token_usage."""
    usage = getattr(message, "usage_metadata", None) or {}
    if usage:
        counts = (usage.get("input_tokens"), usage.get("output_tokens"), usage.get("total_tokens"))
    else:
        raw = (llm_output or {}).get("token_usage") or {}
        counts = (raw.get("prompt_tokens"), raw.get("completion_tokens"), raw.get("total_tokens"))
    names = (Attr.LLM_TOKEN_COUNT_PROMPT, Attr.LLM_TOKEN_COUNT_COMPLETION, Attr.LLM_TOKEN_COUNT_TOTAL)
    return {name: int(count) for name, count in zip(names, counts) if count is not None}


def _doc_id(doc: Document) -> str:
    return str(doc.metadata.get("chunk_id") or doc.metadata.get("url") or "")


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _short(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " …"
