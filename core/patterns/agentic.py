"""Agentic RAG: the model decides to answer directly or call the retriever; the graph keeps it honest.

Retrieved context is graded before any answer is written from it; a failing grade rewrites the
query while the retry budget lasts, then falls back to saying the documents do not support an
answer. Answers cite ``[Source: label]``, and every citation is checked against the labels the
tool returned in this run: unsupported ones are removed and the trace names them. Optional human
review pauses before the answer with the graded chunks the tool calls gathered; an edited question is
searched again.
"""

from __future__ import annotations

from typing import Annotated, Literal

from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime

from core.knowledge.citations import format_labelled, label_sources, source_label
from core.knowledge.citations import verify_citations as check_citations
from core.llm import graders
from core.llm.tool_choice import ANSWER
from core.patterns import Pattern
from core.patterns.common import (
    ANSWERED,
    DIRECT_ANSWER,
    NO_RELEVANT_DOCUMENTS,
    USER_REJECTED,
    BaseState,
    after_grading,
    final,
    graph_with_review,
    make_review_documents,
    rewrite_query,
    run_sources,
    say,
)
from core.patterns.next_step import choice_event, chosen, read_step
from core.patterns.state import per_question, question_defaults
from core.patterns.tools import (
    MAX_TOOL_CALLS,
    action_event,
    bind_agent_tools,
    cap_calls,
    merge_documents,
    new_call,
    observation_event,
    query_of,
    run_tool,
    search_documents_tool,
    tools_event,
)
from core.prompts import agents as P
from core.prompts import answer_request
from core.runtime.context import RunContext
from core.runtime.trace import doc_ref, event, stop

HISTORY_MESSAGES = 6  # earlier conversation the agent sees, to answer follow-ups already answered


class AgenticState(BaseState, total=False):
    """Agentic RAG's fields: all of them belong to the question being answered (an edit searches afresh)."""

    tool_calls: Annotated[list[dict], per_question([], "the retriever calls to run next (from the agent, or a "
                                                       "rewrite)")]
    query: Annotated[str, per_question("", "the latest search query, what a rewrite improves")]
    retrieved: Annotated[list[Document], per_question([], "this round's tool results, before grading")]
    labels: Annotated[list[str], per_question([], "every source label the tool returned in this run")]
    rewrites: Annotated[int, per_question(0, "query rewrites spent (of max_rewrites)")]
    draft: Annotated[str, per_question("", "the answer before its citations are verified")]


def tools_of(ctx: RunContext, state: AgenticState) -> list:
    """One retriever over the run's sources (its description lists them)."""
    return [search_documents_tool(run_sources(ctx, state))]


def counters(ctx: RunContext, state: AgenticState) -> dict:
    """The rewrite budget as the trace shows it: spent and allowed."""
    return {"rewrites": state.get("rewrites", 0), "max_rewrites": ctx.settings.max_rewrites}


def agent(state: AgenticState, runtime: Runtime[RunContext]) -> dict:
    """Node: the model answers directly or calls the retriever (a reply with neither searches with the question).

    Retrieve-or-answer is first read from the model's probabilities (core.patterns.next_step): a confident
    reading makes the model write the search query, or the answer; otherwise it decides itself.
    """
    ctx = runtime.context
    history = [m for m in state.get("messages", [])[:-1] if m.type in ("human", "ai")][-HISTORY_MESSAGES:]
    tools = tools_of(ctx, state)
    asked = [SystemMessage(P.AGENT_SYSTEM), *history, HumanMessage(state["standalone_question"])]
    outcome = read_step(ctx, state, [SystemMessage(P.AGENT_SYSTEM + "\n\nTools:\n" + "\n".join(t.line() for t in tools)),
                              *asked[1:]], tools, after_results=False)
    step = chosen(outcome)
    model = bind_agent_tools(ctx.llm, tools, tool_choice="none" if step == ANSWER else step or "auto")
    reply = model.invoke(asked)
    listed = tools_event("agent", tools)
    written = ", ".join(c["name"] for c in reply.tool_calls) or "answer"
    choice = choice_event("agent", 1, outcome, written if step is None else None, written)
    if reply.tool_calls:
        calls, notes = cap_calls(reply.tool_calls, "agent")
        return {"tool_calls": calls, "query": query_of(calls[0].get("args")) or state["standalone_question"],
                "trace": [listed, choice] + [action_event("agent", 1, c) for c in calls] + notes}
    text = str(reply.content).strip()
    if not text:  # neither an answer nor a call: search with the question rather than answer nothing
        call = new_call(tools[0].name, state["standalone_question"])
        ev = event("agent", "route", grader="agent", target=tools[0].name, verdict="fallback",
                   reason="the agent gave neither an answer nor a tool call; searching with the question")
        return {"tool_calls": [call], "query": state["standalone_question"], "trace": [listed, choice, ev]}
    ev = event("agent", "route", grader="agent", target="direct", verdict="answer",
               reason="the agent answered without calling a tool")
    return {"tool_calls": [], "draft": text, "trace": [listed, choice, ev]}


def route_after_agent(state: AgenticState) -> Literal["retrieve", "direct_answer"]:
    """Router: run the agent's retriever calls, or take its direct answer."""
    return "retrieve" if state.get("tool_calls") else "direct_answer"


def direct_answer(state: AgenticState) -> dict:
    """Node: the agent's answer without retrieval is the turn's answer."""
    return {**final(state["draft"]), **stop("direct_answer", "direct_answer", "the agent answered without retrieval")}


def retrieve(state: AgenticState, runtime: Runtime[RunContext]) -> dict:
    """Node: run the pending retriever calls; their chunks are graded next and their labels may be cited."""
    ctx = runtime.context
    round_ = state.get("rewrites", 0) + 1
    found: list[Document] = []
    labels = list(state.get("labels", []))
    events, tools, searched = [], tools_of(ctx, state), []
    for call in state["tool_calls"]:
        run = run_tool(ctx, tools, call, state.get("standalone_question", ""))
        searched += run.searched
        found = merge_documents(found, run.documents)
        labels.extend(source_label(d) for d in run.documents)
        events.append(observation_event("retrieve", round_, run))
    return {"retrieved": found, "labels": list(dict.fromkeys(labels)), "tool_calls": [], "trace": events,
            "searched": searched}


def grade_documents(state: AgenticState, runtime: Runtime[RunContext]) -> dict:
    """Node: grade each retrieved chunk's relevance; the relevant ones are what the answer may use."""
    ctx = runtime.context
    docs = state.get("retrieved", [])
    outcomes = graders.grade_documents(ctx.grader, state["standalone_question"], docs, ctx.settings.max_concurrency,
                                       ctx.thresholds)
    kept, events = [], []
    for doc, outcome in zip(docs, outcomes):
        if outcome.value.relevant == "yes":
            kept.append(doc)
        events.append(event("grade_documents", "error" if outcome.fallback else "verdict", grader="relevance",
                            target=doc_ref(doc), verdict=outcome.value.relevant, score=doc.metadata.get("score"),
                            reason=outcome.why(), **outcome.trace_fields()))
    summary = event("grade_documents", "verdict", grader="context", target="retrieved context",
                    verdict="pass" if kept else "fail", reason=f"{len(kept)} of {len(docs)} chunk(s) relevant",
                    counters=counters(ctx, state))
    return {"documents": kept, "trace": events + [summary]}


def route_after_grading(state: AgenticState, runtime: Runtime[RunContext]
                        ) -> Literal["review_documents", "generate", "rewrite_question", "fallback"]:
    """Router: review or answer when a chunk passed, else rewrite while the budget lasts, else give up."""
    return after_grading(state, state.get("rewrites", 0) < runtime.context.settings.max_rewrites, "fallback")


def rewrite_question(state: AgenticState, runtime: Runtime[RunContext]) -> dict:
    """Node: rewrite the search query after failed grading, and call the retriever with it."""
    ctx = runtime.context
    base = state["standalone_question"] if not state.get("rewrites") else state.get("query") or state["standalone_question"]
    rewrites = state.get("rewrites", 0) + 1
    query, events = rewrite_query(ctx, base, "context failed grading", rewrites,
                                  {**counters(ctx, state), "rewrites": rewrites})
    return {"query": query, "rewrites": rewrites, "tool_calls": [new_call("search_documents", query, "rewrite")],
            "trace": events}


def generate(state: AgenticState, runtime: Runtime[RunContext]) -> dict:
    """Node: the draft answer from the graded chunks, citing ``[Source: label]``."""
    system = P.CITED_ANSWER_SYSTEM.format(context=format_labelled(state["documents"], chars=None))
    reply = runtime.context.llm.invoke([SystemMessage(system), HumanMessage(answer_request(state["standalone_question"]))])
    return {"draft": str(reply.content).strip()}


def verify_citations(state: AgenticState, runtime: Runtime[RunContext]) -> dict:
    """Node: remove the draft's citations of labels the tool never returned; the result is the answer."""
    answer, verified, removed = check_citations(state.get("draft", ""), state.get("labels", []))
    ev = event("verify_citations", "verdict", grader="citations", target="answer",
               verdict=f"{len(verified)} verified, {len(removed)} removed",
               reason=("removed unsupported: " + "; ".join(removed)) if removed
               else ("every citation matches a retrieved source" if verified else "the answer cites nothing"),
               verified=verified, removed=removed)
    docs = state["documents"]
    end = stop("verify_citations", "answered", f"answered from {len(docs)} graded chunk(s)",
               counters=counters(runtime.context, state))
    return {**final(answer, docs), "sources": label_sources(docs), **end, "trace": [ev] + end["trace"]}


def fallback(state: AgenticState, runtime: Runtime[RunContext]) -> dict:
    """Node: no chunk passed grading within the budget: say so rather than answer from failed context."""
    ctx = runtime.context
    question = state["standalone_question"]
    answer = say(question, "색인된 문서에서 이 질문에 답할 근거를 찾지 못했습니다. "
                           "질문을 바꾸거나 관련 문서를 추가해 주세요.",
                 "The indexed documents do not support an answer to this question. "
                 "Try rephrasing it, or add documents that cover it.")
    message = (f"no retrieved chunk passed grading after {state.get('rewrites', 0)} rewrite(s) "
               f"(budget {ctx.settings.max_rewrites}); not answering from failed context")
    return {**final(answer), **stop("fallback", "no_relevant_documents", message, counters=counters(ctx, state))}


def keep_documents(state: AgenticState, kept: list[Document]) -> dict:
    """The approved chunks; a dropped chunk's label is no longer a source an answer may cite."""
    dropped = {source_label(d) for d in state.get("documents", []) if d not in kept} - {source_label(d) for d in kept}
    return {"documents": kept, "labels": [label for label in state.get("labels", []) if label not in dropped]}


def new_question(state: AgenticState, question: str) -> dict:
    """An edited question is searched as written, with a fresh rewrite budget and no labels from the old search."""
    return {**question_defaults(AgenticState), "tool_calls": [new_call("search_documents", question, "review")],
            "query": question}


def build() -> StateGraph:
    """The agent answers or calls the retriever; retrieved chunks are graded, rewritten while the budget lasts,
    (reviewed,) answered and their citations checked."""
    review = make_review_documents("retrieve", keep=keep_documents, on_edit=new_question)
    builder = graph_with_review(AgenticState, (agent, direct_answer, retrieve, grade_documents, rewrite_question, generate,
                                               verify_citations, fallback), "agent", review, ("generate", "retrieve", END))
    builder.add_conditional_edges("agent", route_after_agent)
    builder.add_edge("direct_answer", END)
    builder.add_edge("retrieve", "grade_documents")
    builder.add_conditional_edges("grade_documents", route_after_grading)
    builder.add_edge("rewrite_question", "retrieve")
    builder.add_edge("generate", "verify_citations")
    builder.add_edge("verify_citations", END)
    builder.add_edge("fallback", END)
    return builder


def max_llm_calls(settings, sources: int | None = None) -> int:
    """contextualize 1 + agent: the reading of its step (whether to look up: graders.VERDICT_CALLS), then its reply 1
    + first round: relevance per chunk (graders.VERDICT_CALLS: p read once, then written with one parse retry),
      up to MAX_TOOL_CALLS calls of k chunks
    + each rewrite: rewriter 2 + relevance per chunk (one call of k chunks)
    + answer 1. Citation checking is code, not a model call.
    With review on, the bound holds for each stretch between two review decisions (an edit searches again).
    """
    k = settings.k
    v = graders.VERDICT_CALLS
    return 1 + v + 1 + v * MAX_TOOL_CALLS * k + settings.max_rewrites * (2 + v * k) + 1


PATTERN = Pattern(
    id="agentic",
    title="Agentic RAG",
    description="The model answers directly or calls the retriever; context is graded, failed searches are\n"
                "rewritten within a budget, and every [Source: …] citation is checked against the tool output.",
    order=50,
    description_ko="모델이 바로 답하거나 검색 도구를 부릅니다. 컨텍스트를 평가하고, 실패한 검색은 한도 안에서\n"
                   "질문을 고쳐 다시 하며, [Source: …] 인용은 모두 도구가 돌려준 출처와 대조합니다.",
    termination_reasons=(ANSWERED, DIRECT_ANSWER, NO_RELEVANT_DOCUMENTS, USER_REJECTED),
    build=build,
    max_llm_calls=max_llm_calls,
    answer_nodes=frozenset({"agent", "generate"}),
    supports_review=True,
    state=AgenticState,
)
