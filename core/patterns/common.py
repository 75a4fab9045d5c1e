"""State, nodes and helpers that every pattern shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypedDict

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from core import prompts
from core.knowledge.citations import sources_from
from core.knowledge.sources import Source, active_sources
from core.llm import graders
from core.patterns.state import kept, per_turn, turn_defaults
from core.prompts import is_korean
from core.runtime.context import RunContext
from core.runtime.review import document_review, kept_documents, normalise_decision
from core.runtime.trace import Reason, add_or_reset, doc_ref, event, stop

# reasons several patterns stop with; each pattern lists the ones it uses in its PATTERN
ANSWERED = Reason("answered", "answered from the retrieved documents", "검색한 문서로 답변함", "answered")
DIRECT_ANSWER = Reason("direct_answer", "answered directly, no retrieval needed", "검색 없이 바로 답변함", "direct")
NO_RELEVANT_DOCUMENTS = Reason("no_relevant_documents", "no relevant documents", "관련 문서 없음", "declined")
WEB_UNAVAILABLE = Reason("web_unavailable", "web search unavailable", "웹 검색 사용 불가", "declined")
USER_REJECTED = Reason("user_rejected", "rejected by the reviewer", "검토자가 거절함", "rejected")


class BaseState(TypedDict, total=False):
    """What every pattern's state holds (core.patterns.state: each field's default and when it is reset).

    These fields are all per turn: a reviewer's edit of the question resets the ones it must itself
    (make_review_documents), so a pattern's ``per_question`` fields are only its own.
    """

    question: Annotated[str, per_turn("", "this turn's message as the user typed it")]
    messages: Annotated[list[AnyMessage], kept("the conversation: the users' questions and the final answers"),
                        add_messages]
    standalone_question: Annotated[str, per_turn("", "the question after contextualising follow-ups")]
    documents: Annotated[list[Document], per_turn([], "the documents the answer will be written from")]
    answer: Annotated[str, per_turn("", "the answer this turn returns")]
    sources: Annotated[list[dict], per_turn([], "the answer's citable sources")]
    trace: Annotated[list[dict], per_turn(None, "every decision of this turn, as plain-dict events"), add_or_reset]
    termination_reason: Annotated[str, per_turn("", "why the run stopped: a declared Reason's id")]
    termination_message: Annotated[str, per_turn("", "why the run stopped, in a sentence")]
    review: Annotated[bool, per_turn(False, "pause for human review before answering (this turn)")]
    edited_question: Annotated[str, per_turn("", "the question as the reviewer edited it ('' = not edited)")]
    source_ids: Annotated[list[str], per_turn([], "the collections this run works over (chosen in the sidebar); "
                                                  "[] = every enabled one")]
    searched: Annotated[list[str], per_turn(None, "what this turn searched: collection ids, 'web' for web search"),
                        add_or_reset]
    # the shared tail (core.patterns.answer_review): the claim check and the reviewer's pause on the answer
    review_answer: Annotated[str, per_turn("off", "pause for review of the answer: off | unsupported | always")]
    claims: Annotated[list[dict], per_turn([], "each sentence of the answer with its mark, evidence and reason")]
    claim_support: Annotated[dict, per_turn({}, "how many claims are supported, unsupported, unchecked")]
    verification: Annotated[dict, per_turn({}, "what the claim checks of this turn cost, apart from the pattern")]
    answer_settled: Annotated[bool, per_turn(False, "the reviewer decided on the answer: it is not paused again")]
    answer_revisions: Annotated[int, per_turn(0, "drafts the reviewer sent back (of max_generations)")]
    revision_note: Annotated[str, per_turn("", "the reviewer's note with the last draft sent back")]
    drafts: Annotated[list[dict], per_turn(None, "the answers the reviewer changed: text, marks, decision"), add_or_reset]


# the base fields a run's options may set (a pattern's own per-turn fields are options too: Pattern.reset)
BASE_OPTIONS = ("source_ids",)


def turn_input(state_schema: type, question: str, options: dict | None = None, review: bool = False,
               review_answer: str = "off") -> dict:
    """The graph input that starts a new turn: every per-turn field at its default (the conversation kept),
    this turn's question, the review it asked for (documents or tool calls; the answer), and the run's options."""
    return {**turn_defaults(state_schema), "question": question, "standalone_question": question,
            "messages": [HumanMessage(question)], "review": review, "review_answer": review_answer, **(options or {})}


def run_sources(ctx: RunContext, state: dict) -> list[Source]:
    """The sources this run works over: those chosen for it, else every enabled one."""
    return active_sources(ctx.kb, state.get("source_ids"))


def sources_event(node: str, sources: list[Source], chosen: list[str] | None, retrieval: str = "") -> dict:
    """Which sources a run had, and how it searches them, so a resumed or exported run says so."""
    how = "chosen for this run" if chosen else "every enabled collection"
    return event(node, "info", grader="sources", target="sources", verdict=f"{len(sources)} source(s)",
                 reason=f"{how}: " + (", ".join(f"{s.name} ({s.id})" for s in sources) or "none"),
                 sources=[s.id for s in sources], retrieval=retrieval or None)


def contextualize(state: BaseState, runtime: Runtime[RunContext]) -> dict:
    """Node: record the run's sources; turn a follow-up into a standalone question (no LLM call on the first turn)."""
    ctx = runtime.context
    chosen = state.get("source_ids")
    sources = run_sources(ctx, state)
    recorded = {"source_ids": [s.id for s in sources],
                "trace": [sources_event("contextualize", sources, chosen, ctx.retrieval)]}
    history = state.get("messages", [])[:-1]
    question = state["question"]
    if not any(m.type == "ai" for m in history):  # first turn, or only failed turns before
        return {"standalone_question": question, **recorded}
    convo = history[-6:] + [HumanMessage(question)]
    reply = ctx.grader.invoke([SystemMessage(prompts.CONTEXTUALIZE_SYSTEM), *convo],
                              config={"tags": ["nostream"]})
    rewritten = " ".join(str(reply.content).split())[:500] or question
    return {
        "standalone_question": rewritten, "source_ids": recorded["source_ids"],
        "trace": [event("contextualize", "rewrite", grader="contextualize", target="question",
                        verdict=rewritten, reason=f"follow-up rewritten from: {question}")] + recorded["trace"],
    }


def search_collections(ctx: RunContext, node: str, collections: list[str], query: str,
                       k: int | None = None) -> tuple[list[Document], list[dict]]:
    """Top-k over several collections merged by score; a broken collection is traced, not fatal."""
    docs, problems = ctx.search(collections, query, k)
    events = [event(node, "error", target=name, reason=reason) for name, reason in problems]
    events.append(event(node, "tool", grader="retriever", target=",".join(collections), verdict=f"{len(docs)} documents",
                        reason=query, documents=[doc_ref(d) for d in docs], retrieval=ctx.retrieval))
    return docs, events


def search_web(ctx: RunContext, node: str, query: str) -> tuple[list[Document], dict, str]:
    """Web search as a node step: documents, the trace event, and the status ("ok" or why not)."""
    result = ctx.web(query)
    ev = event(node, "tool", grader="web_search", target="web", verdict=result.status,
               reason=result.reason or f"{len(result.documents)} results", query=result.query)
    return result.documents, ev, result.status if result.ok else result.reason


def say(question: str, ko: str, en: str) -> str:
    """A fixed message in the language of the question (for answers the graph writes itself)."""
    return ko if is_korean(question) else en


def answer_from_documents(ctx: RunContext, question: str, docs: list[Document], extra: str = "") -> str:
    """The one place that writes a grounded answer; the token stream goes to the chat bubble."""
    system = prompts.documents_system(docs, extra)
    reply = ctx.llm.invoke([SystemMessage(system), HumanMessage(prompts.answer_request(question))])
    return str(reply.content).strip()


def answer_directly(ctx: RunContext, messages: list[AnyMessage]) -> str:
    """An answer from the recent conversation alone (no documents), in the question's language."""
    recent = list(messages[-8:])
    if recent and recent[-1].type == "human":  # name the language to answer in, as for document answers
        recent[-1] = HumanMessage(prompts.answer_request(str(recent[-1].content)))
    reply = ctx.llm.invoke([SystemMessage(prompts.DIRECT_SYSTEM), *recent])
    return str(reply.content).strip()


def final(answer: str, docs: list[Document] | None = None) -> dict:
    """State update for a finished answer: text, citable sources, and the history entry."""
    return {"answer": answer, "sources": sources_from(docs or []), "messages": [AIMessage(answer)]}


def make_review_documents(retrieve_again: str | Callable[[dict], str], answer_node: str = "generate", *,
                          documents_of=None, keep=None, on_edit=None):
    """Node: pause with the question and the documents the answer will use; resume with approve / drop / edit / reject.

    ``retrieve_again`` (a node name, or ``(state) -> node name``) says where an edited question is routed and
    searched again: the reviewer must never get an answer written from documents found for the old question.
    The pattern's own fields plug in: ``documents_of(state)`` the documents shown (default ``documents``),
    ``keep(state, kept)`` the update that keeps only the approved ones, ``on_edit(state, question)`` what else
    an edit resets.
    """
    route_edit = (lambda state: retrieve_again) if isinstance(retrieve_again, str) else retrieve_again
    documents_of = documents_of or (lambda state: state.get("documents", []))
    keep = keep or (lambda state, kept: {"documents": kept})

    def review_documents(state: dict) -> Command:  # dict: the pattern's own state, route included
        docs = documents_of(state)
        question = state["standalone_question"]
        decision = normalise_decision(interrupt(document_review("review_documents", question, docs)),
                                      "document_review")
        action = decision["action"]
        if action == "reject":
            message = decision.get("message") or "no reason given"
            return Command(goto=END, update={"answer": "", "sources": [],
                                             **stop("review_documents", "user_rejected", f"rejected by the reviewer: {message}")})
        if action == "edit":
            edited = " ".join(str(decision["question"]).split())
            note = event("review_documents", "interrupt", verdict="edit", target="question",
                         reason=f"question edited to: {edited}; retrieving again")
            return Command(goto=route_edit(state), update={
                "standalone_question": edited, "edited_question": edited, "documents": [], "trace": [note],
                "messages": edited_turn(state.get("messages", []), edited),
                **(on_edit(state, edited) if on_edit else {})})
        kept = kept_documents(docs, decision)
        if docs and not kept:  # nothing left to answer from: the pattern must not answer from no evidence
            return Command(goto=END, update={"answer": "", "sources": [], **stop(
                "review_documents", "user_rejected", "the reviewer dropped every document: nothing to answer from")})
        dropped = len(docs) - len(kept)
        note = event("review_documents", "interrupt", verdict="approve", target="documents",
                     reason=f"approved {len(kept)} document(s)" + (f", dropped {dropped}" if dropped else ""))
        return Command(goto=answer_node, update={**keep(state, kept), "trace": [note]})

    return review_documents


def edited_turn(messages: list[AnyMessage], edited: str) -> list[AnyMessage]:
    """The turn's question replaced by the reviewer's edit (same message id): the answer, a direct answer
    and later follow-ups all read the question that was answered, and the chat shows it."""
    asked = next((m for m in reversed(messages) if m.type == "human"), None)
    return [HumanMessage(edited, id=asked.id)] if asked is not None and asked.id else []


def after_retrieval(review_node: str = "review_documents", answer_node: str = "generate"):
    """Router: to the review pause when this turn asked for one, else straight to the answer."""

    def route_after_retrieval(state: BaseState) -> str:
        return review_node if state.get("review") else answer_node

    return route_after_retrieval


# ---------------------------------------------------------------- grading, then rewriting a failed search


def after_grading(state: dict, retries_left: bool, give_up: str) -> str:
    """Where a run goes once its documents are graded: review or answer when some passed, else rewrite the
    query while its budget lasts, else ``give_up``."""
    if state.get("documents"):
        return "review_documents" if state.get("review") else "generate"
    return "rewrite_question" if retries_left else give_up


def rewrite_query(ctx: RunContext, query: str, why: str, used: int, spent: dict) -> tuple[str, list[dict]]:
    """Rewrite a search query that found nothing usable: the new query, and the events saying which budget
    the retry spent (``used`` of ``max_rewrites``), why, and what the rewriter wrote (or why it failed)."""
    outcome = graders.rewrite_question(ctx.grader, query)
    budget = ctx.settings.max_rewrites
    retry = event("rewrite_question", "retry", grader="rewrites", target="retrieval",
                  verdict=f"rewrite {used} of {budget}", reason=why, counters=spent)
    rewrite = event("rewrite_question", "error" if outcome.fallback else "rewrite", grader="rewriter",
                    verdict=outcome.value.question,
                    reason=f"{why}: rewrite {used} of {budget}" + (f" ({outcome.error})" if outcome.fallback else ""),
                    counters=spent)
    return outcome.value.question, [retry, rewrite]


def graph_with_review(state_schema: type, nodes: tuple, first: str | None, review: Callable,
                      review_goes_to: tuple[str, ...]) -> StateGraph:
    """A pattern's graph before its own edges: START, contextualize, then ``first`` (None: the pattern routes
    from contextualize itself); its ``nodes`` (each named
    after its function); and its review pause ``review`` (make_review_documents, or make_review_tool_calls),
    which continues at one of ``review_goes_to``.

    Nodes take ``(state, runtime: Runtime[RunContext])``: the run streams the graph with ``context=`` its
    RunContext, so models and keys reach the nodes through LangGraph's runtime, never through state or the
    compiled graph, and one compiled graph serves every run.
    """
    builder = StateGraph(state_schema, context_schema=RunContext)
    for node in (contextualize, *nodes):
        builder.add_node(node)
    builder.add_node(review, destinations=review_goes_to)
    builder.add_edge(START, "contextualize")
    if first:
        builder.add_edge("contextualize", first)
    return builder

