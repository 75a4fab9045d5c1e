"""The agents' tools (retrievers over collections, web search) and what every agent shares around them.

Tools are plain specs bound to the model as OpenAI-style function schemas; the graphs run them in
their own nodes, so every call is traced, its documents kept for sources, and only the tools the
agent was given can ever run (a tool name read in a document is just an unknown name).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.types import Command, interrupt

from core.context import RunContext
from core.knowledge import KnowledgeError
from core.patterns.common import sources_from
from core.prompts import agents as P
from core.prompts import escape_fences, fence
from core.review import normalise_decision, tool_approval
from core.trace import doc_ref, event

OBSERVATION_DOC_CHARS = 700  # per chunk, in what the model reads
SHORT = 240  # what the trace keeps of a thought, an input or an observation
MAX_TOOL_CALLS = 3  # per agent turn; more are dropped (and traced)


@dataclass(frozen=True)
class AgentTool:
    name: str
    description: str
    collections: tuple[str, ...] = ()  # searched together, merged by score
    web: bool = False  # a web search instead of a retriever
    query_hint: str = "a short, specific search query"

    def schema(self) -> dict:
        """The OpenAI-style function schema ``bind_tools`` accepts from every provider."""
        return {"type": "function", "function": {
            "name": self.name, "description": " ".join(self.description.split()),
            "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": self.query_hint}},
                           "required": ["query"]}}}

    def line(self) -> str:
        """How the prompt-protocol ReAct lists the tool."""
        return f"{self.name}: {' '.join(self.description.split())}"


def search_documents_tool(collections: list[str]) -> AgentTool:
    return AgentTool("search_documents", P.SEARCH_DOCUMENTS_TOOL, tuple(collections))


def policy_tools() -> list[AgentTool]:
    """The ReAct agents' tools: one retriever per policy report, and the web."""
    return [AgentTool("japan_ict", P.JAPAN_ICT_TOOL, ("japan_ict",)),
            AgentTool("usa_ict", P.USA_ICT_TOOL, ("usa_ict",)),
            AgentTool("web_search", P.WEB_SEARCH_TOOL, web=True, query_hint="a short keyword query (a few words)")]


def bind_agent_tools(model, tools: list[AgentTool], parallel: bool = False):
    """The model with the tools bound; ``parallel`` allows several calls in one turn where supported."""
    kwargs = {"tool_choice": "auto"}
    if parallel and type(model).__name__ != "ChatOllama":  # Ollama's client rejects the flag (calls in parallel anyway)
        kwargs["parallel_tool_calls"] = True
    return model.bind_tools([t.schema() for t in tools], **kwargs)


# ---------------------------------------------------------------- running a tool


def source_label(doc: Document) -> str:
    """The label a chunk is cited by: its URL, or the file name (with the page for PDFs)."""
    meta = doc.metadata
    if meta.get("url"):
        return meta["url"]
    source = meta.get("source", "?")
    return f"{source} p.{meta.get('page', 1)}" if source.lower().endswith(".pdf") else source


def label_sources(docs: list[Document]) -> list[dict]:
    """The run's source records (as ``final`` makes them), each with the label it is cited by."""
    return [dict(src, label=source_label(doc)) for src, doc in zip(sources_from(docs), docs)]


def _doc_key(doc: Document) -> str:
    return doc.metadata.get("chunk_id") or doc.metadata.get("url") or doc.page_content[:80]


def merge_documents(old: list[Document], new: list[Document]) -> list[Document]:
    """``old`` followed by the documents of ``new`` not already in it (by chunk id or URL)."""
    seen = {_doc_key(d) for d in old}
    out = list(old)
    for doc in new:
        if _doc_key(doc) not in seen:
            seen.add(_doc_key(doc))
            out.append(doc)
    return out


def format_labelled(docs: list[Document], chars: int | None = OBSERVATION_DOC_CHARS) -> str:
    """Chunks as the model reads them: a source label, then the text fenced as data."""
    blocks = []
    for doc in docs:
        text = doc.page_content if chars is None else doc.page_content[:chars]
        blocks.append(f"[Source: {escape_fences(source_label(doc))}]\n{fence(text)}")
    return "\n\n".join(blocks)


@dataclass
class ToolRun:
    name: str
    query: str
    status: str  # ok | empty | unavailable | error
    documents: list[Document] = field(default_factory=list)
    text: str = ""  # the observation the model reads
    call_id: str = ""


def query_of(args) -> str:
    """The query argument, tolerating the shapes small models produce (a string, other key names)."""
    if isinstance(args, str):
        return " ".join(args.split())
    if isinstance(args, dict):
        value = args.get("query")
        if value is None and len(args) == 1:
            value = next(iter(args.values()))
        return " ".join(str(value or "").split())
    return ""


def run_tool(ctx: RunContext, tools: list[AgentTool], call: dict) -> ToolRun:
    """Run one tool call; every failure becomes an observation the agent can read, never an exception."""
    name, query = call.get("name", ""), query_of(call.get("args"))
    by_name = {t.name: t for t in tools}
    run = ToolRun(name, query, "error", call_id=call.get("id", ""))
    if name not in by_name:
        run.text = f"{name!r} is not a tool. Use one of: {', '.join(by_name)}."
        return run
    if not query:
        run.text = "The tool needs a non-empty query."
        return run
    tool = by_name[name]
    if tool.web:
        result = ctx.web(query)
        run.status, run.documents = result.status, result.documents
        run.text = (format_labelled(result.documents) if result.ok
                    else f"Web search {result.status}: {result.reason or 'no results'}.")
        return run
    found, problems = [], []
    for collection in tool.collections:
        try:
            found.extend(ctx.retrieve(collection, query))
        except KnowledgeError as exc:
            problems.append(str(exc))
    found.sort(key=lambda d: d.metadata.get("score", 0.0), reverse=True)
    run.documents = found[: ctx.settings.k]  # several collections are merged by score, like one
    if run.documents:
        run.status, run.text = "ok", format_labelled(run.documents)
    elif problems:
        run.status, run.text = "unavailable", "The documents cannot be searched: " + "; ".join(problems)
    else:
        run.status, run.text = "empty", "No documents found."
    return run


# ---------------------------------------------------------------- the trace shape every agent shares


def short(text, limit: int = SHORT) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def thought_event(node: str, iteration: int, thought: str) -> dict:
    return event(node, "info", grader="agent", step="thought", target="thought", verdict=f"step {iteration}",
                 reason=short(thought))


def action_event(node: str, iteration: int, call: dict) -> dict:
    args = call.get("args")
    shown = args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False)
    return event(node, "route", grader="agent", step="action", target=call.get("name", "?"), verdict=f"step {iteration}",
                 reason=short(shown), tool_input=args if isinstance(args, dict) else {"query": str(args)})


def observation_event(node: str, iteration: int, run: ToolRun) -> dict:
    summary = f"{len(run.documents)} documents" if run.status == "ok" else run.status
    return event(node, "tool", grader=run.name or "?", step="observation", target=short(run.query, 120),
                 verdict=summary, reason=short(run.text), iteration=iteration,
                 documents=[doc_ref(d) for d in run.documents] or None,
                 collections=sorted({d.metadata["collection"] for d in run.documents
                                     if d.metadata.get("collection")}) or None)


def final_event(node: str, answer: str) -> dict:
    return event(node, "info", grader="agent", step="final", target="final answer", reason=short(answer))


def new_call(name: str, query: str, prefix: str = "call") -> dict:
    return {"name": name, "args": {"query": query}, "id": f"{prefix}_{uuid.uuid4().hex[:10]}", "type": "tool_call"}


def cap_calls(calls: list[dict], node: str) -> tuple[list[dict], list[dict]]:
    """At most MAX_TOOL_CALLS per turn (a runaway model must not fan out without limit)."""
    calls = [dict(c, id=c.get("id") or new_call(c.get("name", ""), "")["id"]) for c in calls]
    if len(calls) <= MAX_TOOL_CALLS:
        return calls, []
    dropped = calls[MAX_TOOL_CALLS:]
    note = event(node, "info", grader="agent", target="tool calls",
                 verdict=f"kept {MAX_TOOL_CALLS} of {len(calls)}",
                 reason="dropped: " + ", ".join(f"{c.get('name')}({short(query_of(c.get('args')), 60)})" for c in dropped))
    return calls[:MAX_TOOL_CALLS], [note]


def compact_tool_messages(messages: list[AnyMessage], keep_last: int = 2, chars: int = 300) -> list[AnyMessage]:
    """Older tool results shortened, so a long loop stays inside a small model's context window."""
    tool_positions = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
    old = set(tool_positions[:-keep_last] if keep_last else tool_positions)
    return [m.model_copy(update={"content": short(m.content, chars)}) if i in old else m
            for i, m in enumerate(messages)]


def with_calls(message: AIMessage, calls: list[dict]) -> AIMessage:
    return message.model_copy(update={"tool_calls": calls, "invalid_tool_calls": []})


# ---------------------------------------------------------------- human approval of tool calls


def edited_calls(pending: list[dict], decision: dict) -> list[dict]:
    """The calls an ``edit`` decision asks for: explicit tool calls, or a new query for every call."""
    if decision.get("tool_calls"):
        out = []
        for call in decision["tool_calls"]:
            args = call.get("args") if isinstance(call.get("args"), dict) else {"query": query_of(call.get("args"))}
            out.append({"name": str(call.get("name", "")), "args": args,
                        "id": call.get("id") or new_call("", "", "edited")["id"], "type": "tool_call"})
        return out
    query = " ".join(str(decision.get("question", "")).split())
    return [dict(c, args={**(c.get("args") or {}), "query": query}) for c in pending]


def make_review_tool_calls(pending_key: str, act_node: str,
                           on_reject: Callable[[dict, list[dict], str], dict],
                           after_reject: Callable[[dict], str],
                           on_edit: Callable[[dict, list[dict]], dict] | None = None):
    """Node: pause before tools run; approve runs them, edit runs the edited calls, reject tells the agent.

    ``on_reject(state, calls, message)`` returns the state update that feeds the refusal back to the
    agent; ``after_reject(state)`` names the node to continue at (the agent, or the end of its budget);
    ``on_edit(state, calls)`` may rewrite what the agent's history says it asked for.
    """

    def review_tool_calls(state: dict) -> Command:
        calls = state.get(pending_key) or []
        decision = normalise_decision(interrupt(tool_approval("review_tool_calls", state["standalone_question"], calls)))
        action = decision["action"]
        if action == "approve":
            note = event("review_tool_calls", "interrupt", verdict="approve", target="tool calls",
                         reason=f"approved {len(calls)} call(s)")
            return Command(goto=act_node, update={"trace": [note]})
        if action == "edit":
            edited = edited_calls(calls, decision)
            note = event("review_tool_calls", "interrupt", verdict="edit", target="tool calls",
                         reason="edited to: " + "; ".join(f"{c['name']}({short(query_of(c['args']), 80)})" for c in edited))
            extra = on_edit(state, edited) if on_edit else {}
            return Command(goto=act_node, update={**extra, pending_key: edited, "trace": [note]})
        message = decision.get("message") or "no reason given"
        note = event("review_tool_calls", "interrupt", verdict="reject", target="tool calls",
                     reason=f"rejected by the reviewer: {message}")
        update = on_reject(state, calls, message)
        update["trace"] = [note] + list(update.get("trace") or [])
        return Command(goto=after_reject({**state, **update}), update={**update, pending_key: []})

    return review_tool_calls


# ---------------------------------------------------------------- citations

CITATION = re.compile(r"\[\s*(?:Source|Sources|출처)\s*:\s*([^\]]*)\]", re.IGNORECASE)


def _norm_label(label: str) -> str:
    return "".join(label.casefold().split()).strip("'\"`")


def verify_citations(answer: str, known_labels: list[str]) -> tuple[str, list[str], list[str]]:
    """Keep ``[Source: label]`` citations whose label a tool returned in this run; remove the others.

    Returns the cleaned answer, the verified labels and the removed labels (in order of appearance).
    """
    known = {_norm_label(label) for label in known_labels}
    verified: list[str] = []
    removed: list[str] = []

    def check(match: re.Match) -> str:
        inner = match.group(1).strip()
        parts = [inner] if _norm_label(inner) in known else [p.strip() for p in re.split(r"[;,]", inner) if p.strip()]
        good = [p for p in parts if _norm_label(p) in known]
        verified.extend(good)
        removed.extend(p for p in parts if _norm_label(p) not in known)
        if not parts:
            removed.append(inner or "(empty)")
        return f"[Source: {'; '.join(good)}]" if good else "\x00"

    cleaned = CITATION.sub(check, answer)
    # close the gap a removed citation leaves, and only there (the rest of the layout stays as written)
    cleaned = re.sub(r"[ \t]*\x00+(?=[.,;:!?)]|[ \t]*$)", "", cleaned, flags=re.MULTILINE)
    cleaned = re.sub(r"[ \t]*\x00+[ \t]*", " ", cleaned).strip()
    return cleaned, list(dict.fromkeys(verified)), list(dict.fromkeys(removed))
