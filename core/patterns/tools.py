"""The agents' tools (retrievers over collections, web search), how they run, and their trace events.

Tools are plain specs bound to the model as OpenAI-style function schemas, generated from the run's
sources (core.knowledge.sources); the graphs run them in their own nodes, so every call is traced, its
documents kept for sources, and only the tools the agent was given can ever run (a tool name read
in a document is just an unknown name). Citations live in core.knowledge.citations, the approval node in
core.patterns.tool_review.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from core.knowledge.citations import format_labelled
from core.knowledge.korean_tokens import tokens
from core.knowledge.sources import Source, as_prompt_text, tool_names
from core.prompts import agents as P
from core.runtime.context import RunContext
from core.runtime.trace import doc_ref, event

SHORT = 240  # what the trace keeps of a thought, an input or an observation
MAX_TOOL_CALLS = 3  # per agent turn; more are dropped (and traced)


@dataclass(frozen=True)
class AgentTool:
    """A tool an agent may call: a retriever over collections, or the web search."""

    name: str
    description: str
    collections: tuple[str, ...] = ()  # searched together, merged by score
    web: bool = False  # a web search instead of a retriever
    query_hint: str = "a short, specific search query"
    aliases: tuple[str, ...] = ()  # the collection's display name and its parts: what a model may write instead

    def schema(self) -> dict:
        """The OpenAI-style function schema ``bind_tools`` accepts from every provider."""
        return {"type": "function", "function": {
            "name": self.name, "description": " ".join(self.description.split()),
            "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": self.query_hint}},
                           "required": ["query"]}}}

    def line(self) -> str:
        """How the prompt-protocol ReAct (and a step's reading) lists the tool."""
        return f"{self.name}: {' '.join(self.description.split())}"


WEB_TOOL = AgentTool("web_search", P.WEB_SEARCH_TOOL, web=True, query_hint="a short keyword query (a few words)")


def search_documents_tool(sources: list[Source]) -> AgentTool:
    """One retriever over every source of the run, merged by score; its description lists them."""
    listed = "\n".join(f"- {as_prompt_text(s.name)}: {as_prompt_text(s.description)}" for s in sources) or "(none enabled)"
    return AgentTool("search_documents", P.SEARCH_DOCUMENTS_TOOL.format(sources=listed), tuple(s.id for s in sources))


def source_tools(sources: list[Source], web_ready: bool = True) -> list[AgentTool]:
    """The ReAct agents' tools: one retriever per source, named after its collection, and the web.

    Without a web key the web tool is left out (``tools_event`` says so): offered, even marked as
    unavailable, a small model calls it first and then again (Qwen2.5 1.5B did in 8 of 9 runs).
    """
    names = tool_names(sources, taken=(WEB_TOOL.name,))
    return [AgentTool(names[s.id], as_prompt_text(s.description) if s.name == names[s.id] else
                      P.COLLECTION_TOOL.format(name=as_prompt_text(s.name), description=as_prompt_text(s.description)),
                      (s.id,),
                      aliases=display_names(s.name))
            for s in sources] + ([WEB_TOOL] if web_ready else [])


def display_names(name: str) -> tuple[str, ...]:
    """A display name and, for a bilingual one ("와인 리스트 · Wine list"), each of its parts."""
    parts = [p.strip() for p in name.split("·")]
    return tuple(dict.fromkeys(p for p in [name.strip(), *parts] if p))


def tools_event(node: str, tools: list[AgentTool], web_ready: bool = True) -> dict:
    """The tool list the agent was given this run, with what each one searches."""
    left_out = "" if web_ready else f"; {WEB_TOOL.name} left out: web search is not configured (no TAVILY_API_KEY)"
    return event(node, "info", grader="agent", step="tools", target="tools", verdict=f"{len(tools)} tool(s)",
                 reason=", ".join(t.name for t in tools) + left_out,
                 tools=[{"name": t.name, "collections": list(t.collections), "web": t.web} for t in tools])


def bind_agent_tools(model, tools: list[AgentTool], parallel: bool = False, tool_choice: str = "auto"):
    """The model with the tools bound; ``parallel`` allows several calls in one turn where supported.

    ``tool_choice``: "auto" (the model decides), a tool's name (that tool must be called: only its arguments
    are written) or "none" (an answer in words). No tools (no collection enabled, no web key): the plain model,
    since APIs reject ``tool_choice`` without tools.
    """
    if not tools:
        return model
    kwargs = {"tool_choice": tool_choice}
    # Ollama's client rejects the flag (it calls in parallel anyway)
    if parallel and tool_choice == "auto" and type(model).__name__ != "ChatOllama":
        kwargs["parallel_tool_calls"] = True
    return model.bind_tools([t.schema() for t in tools], **kwargs)


# ---------------------------------------------------------------- running a tool


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


@dataclass
class ToolRun:
    """One tool call's run: what it searched, its status, its documents and the observation the model reads."""

    name: str
    query: str
    status: str  # ok | empty | unavailable | error
    documents: list[Document] = field(default_factory=list)
    text: str = ""  # the observation the model reads
    call_id: str = ""
    searched: list[str] = field(default_factory=list)  # what the call looked in: collection ids, or "web"
    written: str = ""  # the query the model wrote, when the question was searched instead (restates_tool)


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


def _heads(tool: AgentTool) -> str:
    """What a tool is called: its name, display names, and each description sentence's part before a colon
    ("The La Foresta Italian restaurant's menu: dishes, prices, ..." -> the part naming the collection)."""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(tool.description.split()))
    return " ".join([tool.name, *tool.aliases, *(part.split(":")[0] for part in sentences if ":" in part)])


def restates_tool(query: str, tool: AgentTool, question: str) -> bool:
    """Whether a query only names the tool (its name, or its description's opening "X:" part) and shares no
    content word with the question.

    Qwen 1.5B's first ReAct search for "스테이크 메뉴의 가격은 얼마인가요?" was "La Foresta Italian restaurant's
    menu", copied from the menu tool's description: it finds whatever chunk looks most like a menu in general (the
    pasta), and the answer priced the pasta. Such a query names the collection, not what is asked. A topic the
    description lists ("CHIPS 법") is a query of its own and is searched as written.
    """
    words = set(tokens(query))
    return bool(question.strip()) and bool(words) and words <= set(tokens(_heads(tool))) \
        and not words & set(tokens(question))


def run_tool(ctx: RunContext, tools: list[AgentTool], call: dict, question: str = "") -> ToolRun:
    """Run one tool call; every failure becomes an observation the agent can read, never an exception.

    A retriever query that only restates the tool's description is replaced by ``question`` (restates_tool).
    """
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
    if not tool.web and restates_tool(query, tool, question):
        run.written, query = query, " ".join(question.split())
        run.query = query
    run.searched = ["web"] if tool.web else list(tool.collections)
    if tool.web:
        result = ctx.web(query)
        run.status, run.documents = result.status, result.documents
        run.text = (format_labelled(result.documents) if result.ok
                    else f"Web search {result.status}: {result.reason or 'no results'}.")
        return run
    run.documents, problems = ctx.search(list(tool.collections), query)  # the run's retrieval mode, collections fused
    if run.documents:
        run.status, run.text = "ok", format_labelled(run.documents)
    elif problems:
        run.status, run.text = "unavailable", "The documents cannot be searched: " + "; ".join(r for _, r in problems)
    else:
        run.status, run.text = "empty", "No documents found."
    return run


# ---------------------------------------------------------------- the trace shape every agent shares


def short(text, limit: int = SHORT) -> str:
    """The text on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def thought_event(node: str, iteration: int, thought: str) -> dict:
    """The trace event of an agent's thought at one step."""
    return event(node, "info", grader="agent", step="thought", target="thought", verdict=f"step {iteration}",
                 reason=short(thought))


def action_event(node: str, iteration: int, call: dict) -> dict:
    """The trace event of an agent's tool call at one step."""
    args = call.get("args")
    shown = args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False)
    return event(node, "route", grader="agent", step="action", target=call.get("name", "?"), verdict=f"step {iteration}",
                 reason=short(shown), tool_input=args if isinstance(args, dict) else {"query": str(args)})


def observation_event(node: str, iteration: int, run: ToolRun) -> dict:
    """The trace event of a tool's result: what it searched and what it found."""
    summary = f"{len(run.documents)} documents" if run.status == "ok" else run.status
    searched_instead = (f"the query {short(run.written, 80)!r} only restated the tool's description: the question "
                        "was searched instead; ") if run.written else ""
    return event(node, "tool", grader=run.name or "?", step="observation", target=short(run.query, 120),
                 verdict=summary, reason=searched_instead + short(run.text), iteration=iteration,
                 documents=[doc_ref(d) for d in run.documents] or None,
                 retrieval=next((d.metadata["retrieval"] for d in run.documents if d.metadata.get("retrieval")), None),
                 collections=sorted({d.metadata["collection"] for d in run.documents
                                     if d.metadata.get("collection")}) or None)


def final_event(node: str, answer: str) -> dict:
    """The trace event of an agent's final answer."""
    return event(node, "info", grader="agent", step="final", target="final answer", reason=short(answer))


def new_call(name: str, query: str, prefix: str = "call") -> dict:
    """A tool call of ``name`` with ``query`` and a fresh id."""
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
    """The model's message carrying exactly ``calls`` (what was really run)."""
    return message.model_copy(update={"tool_calls": calls, "invalid_tool_calls": []})


