"""Self-RAG: decide whether to retrieve, grade every document, grade the answer, and loop.

Retrieval is a subgraph that fans out with Send to the sources the router picks (the run's
collections and the web, at most ``MAX_FANOUT`` at once) and fans in through a list reducer.
Two separate budgets bound the loops: rewrites (relevance) and regenerations (generation). When a
budget runs out the run ends with the best grounded answer so far, or says plainly that the
evidence was not enough. Optional human review pauses after grading, before an answer is written from
the documents that passed; an edited question is routed to sources and searched again.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypedDict

from langchain_core.documents import Document
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from core.knowledge.sources import MAX_OFFERED, closest
from core.llm import graders
from core.patterns import Pattern
from core.patterns.common import (
    DIRECT_ANSWER,
    NO_RELEVANT_DOCUMENTS,
    USER_REJECTED,
    BaseState,
    after_grading,
    answer_directly,
    answer_from_documents,
    final,
    graph_with_review,
    make_review_documents,
    rewrite_query,
    run_sources,
    say,
    search_collections,
    search_web,
)
from core.patterns.state import per_question, per_turn, question_defaults
from core.prompts import workflow as P
from core.runtime.context import RunContext
from core.runtime.trace import Reason, add_or_reset, doc_ref, event, stop

ACCEPTED = Reason("accepted", "answer accepted", "답변 승인됨", "answered")
RETRY_BUDGET_EXHAUSTED = Reason("retry_budget_exhausted", "retry budget exhausted", "재시도 한도 소진", "budget")
NOT_ENOUGH_EVIDENCE = Reason("not_enough_evidence", "not enough evidence", "근거 부족", "declined")

# The usefulness score that accepts: 4 ("answers with small gaps") and 5, as the grader prompt defines
# "useful". Accepting only 5 sent Qwen's exact "₩35,000입니다 [1]" (scored 4 three times) through every
# regeneration to retry_budget_exhausted.
ACCEPT_USEFULNESS = 4
MAX_FANOUT = 4  # sources searched in parallel per round (collections and web): bounds the grading


class SelfRagState(BaseState, total=False):
    """Self-RAG's fields; those of the question being answered start over when a reviewer edits it."""

    retrieval: Annotated[str, per_turn("", "'yes' / 'no': does this question need documents at all")]
    query: Annotated[str, per_question("", "what is searched; rewrites change it, the question stays")]
    search_sources: Annotated[list[str], per_turn([], "the sources the router chose to search this round")]
    search_results: Annotated[list[Document], per_question(None, "what this round's searches found, before grading"),
                              add_or_reset]
    relevance_retries: Annotated[int, per_question(0, "query rewrites spent (of max_rewrites)")]
    generations: Annotated[int, per_question(0, "answers written (1 + the regenerations spent of max_generations)")]
    grounded: Annotated[str, per_question("", "the hallucination grader's verdict, its fallback ('no') included: "
                                              "what the routers read")]
    grounding: Annotated[str, per_question("", "'yes' / 'no' for the answer the run returns, '' when unchecked or "
                                               "the grader failed")]
    usefulness: Annotated[int, per_question(0, "the usefulness grader's score of the last answer (1-5)")]
    feedback: Annotated[str, per_question("", "why the last answer was rejected, for the next generation")]
    best: Annotated[dict, per_question({}, "the best grounded answer so far: {answer, score, documents}")]


# ---------------------------------------------------------------- the search subgraph


class SearchInput(TypedDict):
    """What the search subgraph is given: the query and the sources to search."""

    query: str
    search_sources: list[str]


class SearchState(SearchInput, total=False):
    """The search subgraph's state: what its branches found, traced and searched (handed up)."""

    search_results: Annotated[list[Document], add_or_reset]
    trace: Annotated[list[dict], add_or_reset]
    searched: Annotated[list[str], add_or_reset]  # handed up to the main graph's field of the same name


class SourceTask(TypedDict):
    """One fanned-out search: the query and one source (a collection id, or 'web')."""

    query: str
    source: str


def fan_out(state: SearchState) -> list[Send]:
    """One search task per selected source."""
    return [Send("search_source", {"query": state["query"], "source": s}) for s in state["search_sources"]]


def search_source(task: SourceTask, runtime: Runtime[RunContext]) -> dict:
    """Node: search one source (a collection, or the web) for the query."""
    ctx = runtime.context
    if task["source"] == "web":
        docs, ev, _ = search_web(ctx, "search_source", task["query"])
        return {"search_results": docs, "trace": [ev], "searched": ["web"]}
    docs, events = search_collections(ctx, "search_source", [task["source"]], task["query"])
    return {"search_results": docs, "trace": events, "searched": [task["source"]]}


def build_search():
    """Subgraph: one parallel branch per selected source; results meet in the list reducer."""
    builder = StateGraph(SearchState, context_schema=RunContext, input_schema=SearchInput, output_schema=SearchState)
    builder.add_node(search_source)
    builder.add_conditional_edges(START, fan_out, ["search_source"])
    builder.add_edge("search_source", END)
    return builder.compile()


# ---------------------------------------------------------------- the main graph


def counters(ctx: RunContext, state: SelfRagState) -> dict:
    """Both budgets as the trace shows them: rewrites and generations, spent and allowed."""
    return {"relevance_retries": state.get("relevance_retries", 0), "generations": state.get("generations", 0),
            "max_rewrites": ctx.settings.max_rewrites, "max_generations": ctx.settings.max_generations}


def decide_retrieval(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: does the question need documents at all (the retrieval-need grader)."""
    ctx = runtime.context
    outcome = graders.needs_retrieval(ctx.grader, state["standalone_question"], run_sources(ctx, state),
                                      ctx.thresholds)
    need, kind = outcome.value.retrieve, outcome.value.kind.replace("_", " ")
    reason = (f"grader output unusable ({outcome.error}); retrieving to be safe" if outcome.fallback
              else (f"retrieval needed: {kind}" if need == "yes" else f"no retrieval needed: {kind}"))
    return {"query": state["standalone_question"], "retrieval": need,
            "trace": [event("decide_retrieval", "error" if outcome.fallback else "route",
                            grader="retrieval_need", verdict=need, reason=reason, **outcome.trace_fields())]}


def route_retrieval(state: SelfRagState) -> Literal["select_sources", "direct_answer"]:
    """Router: search, or answer directly."""
    return "direct_answer" if state["retrieval"] == "no" else "select_sources"


def direct_answer(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: answer from the conversation, without retrieval."""
    return {**final(answer_directly(runtime.context, state["messages"])),
            **stop("direct_answer", "direct_answer", "answered directly: no retrieval needed")}


def select_sources(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: the sources to search this round (a shortlist by description first when there are many)."""
    ctx = runtime.context
    sources, events = run_sources(ctx, state), []
    if len(sources) > MAX_OFFERED:
        sources, scores = closest(ctx.kb, state["query"], sources, MAX_OFFERED)
        events.append(event("select_sources", "info", grader="source_shortlist", target="sources",
                            verdict=f"{len(sources)} offered",
                            reason="closest descriptions: " + ", ".join(f"{s.id} {v:.2f}" for s, v in zip(sources, scores)),
                            offered=[s.id for s in sources]))
    outcome = graders.select_sources(ctx.grader, state["query"], sources, MAX_FANOUT)
    chosen = outcome.value.sources
    names = {s.id: s.name for s in sources} | {"web": "web search"}
    shown = ", ".join(names.get(c, c) for c in chosen)
    reason = (f"router output unusable ({outcome.error}); searching {shown}" if outcome.fallback
              else f"searching {shown} in parallel")
    events.append(event("select_sources", "error" if outcome.fallback else "route", grader="source_router",
                        verdict=",".join(chosen), target=",".join(chosen), reason=reason,
                        offered=[s.id for s in sources] + ["web"]))
    return {"search_sources": chosen, "search_results": None, "trace": events}


def grade_documents(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: grade each search result's relevance; the relevant ones are what the answer may use."""
    ctx = runtime.context
    docs = state.get("search_results", [])
    outcomes = graders.grade_documents_for_answer(ctx.grader, state["standalone_question"], docs,
                                                  ctx.settings.max_concurrency, ctx.thresholds)
    kept, events = [], []
    for doc, outcome in zip(docs, outcomes):
        verdict = outcome.value.relevant
        if verdict == "yes":
            kept.append(doc)
        events.append(event("grade_documents", "error" if outcome.fallback else "verdict", grader="relevance",
                            target=doc_ref(doc), verdict=verdict, score=doc.metadata.get("score"),
                            reason=outcome.why(), **outcome.trace_fields()))
    return {"documents": kept, "trace": events}


def route_after_grading(state: SelfRagState, runtime: Runtime[RunContext]
                        ) -> Literal["review_documents", "generate", "rewrite_question", "finish"]:
    """Router: review or answer when a document passed, else rewrite while the budget lasts, else finish."""
    return after_grading(state, state.get("relevance_retries", 0) < runtime.context.settings.max_rewrites, "finish")


def rewrite_question(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: rewrite the search query (no relevant documents, or an answer not useful enough)."""
    ctx = runtime.context
    retries = state.get("relevance_retries", 0) + 1
    why = ("no relevant documents" if not state.get("documents")
           else f"answer not useful enough ({state.get('usefulness')}/5)")
    query, events = rewrite_query(ctx, state["query"], why, retries, {**counters(ctx, state), "relevance_retries": retries})
    return {"query": query, "relevance_retries": retries, "documents": [], "feedback": "", "trace": events}


def generate(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: an answer from the relevant documents (a regeneration is told why the last one failed)."""
    ctx = runtime.context
    docs = state["documents"]
    extra = P.REGENERATE_NOTE.format(reason=state["feedback"]) if state.get("feedback") else ""
    answer = answer_from_documents(ctx, state["standalone_question"], docs, extra)
    generations = state.get("generations", 0) + 1
    update = {"answer": answer, "generations": generations}
    if state.get("feedback"):  # a regeneration: say which budget it spent, and why
        update["trace"] = [event("generate", "retry", grader="regenerations", target="answer",
                                 verdict=f"regeneration {generations - 1} of {ctx.settings.max_generations}",
                                 reason=state["feedback"], counters={**counters(ctx, state), "generations": generations})]
    return update


def grade_hallucination(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: is the answer grounded in the documents."""
    ctx = runtime.context
    outcome = graders.grade_grounded(ctx.grader, state["documents"], state["answer"], state["standalone_question"],
                                     ctx.thresholds)
    grounded = outcome.value.grounded
    ev = event("grade_hallucination", "error" if outcome.fallback else "verdict", grader="hallucination",
               target="answer", verdict=grounded, reason=outcome.why(), counters=counters(ctx, state),
               **outcome.trace_fields())
    update = {"grounded": grounded, "grounding": "" if outcome.fallback else grounded, "trace": [ev]}
    if grounded != "yes":
        update["feedback"] = "it stated facts the documents do not contain"
    return update


def route_after_hallucination(state: SelfRagState, runtime: Runtime[RunContext]
                              ) -> Literal["grade_usefulness", "generate", "finish"]:
    """Router: grade usefulness when grounded, else regenerate while the budget lasts, else finish."""
    if state["grounded"] == "yes":
        return "grade_usefulness"
    return "generate" if state["generations"] <= runtime.context.settings.max_generations else "finish"


def grade_usefulness(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: score the grounded answer's usefulness (1-5) and keep the best so far."""
    ctx = runtime.context
    outcome = graders.grade_usefulness(ctx.grader, state["standalone_question"], state["answer"], ctx.thresholds)
    score = outcome.value.score
    update: dict = {"usefulness": score}
    best = state.get("best") or {}
    if score > best.get("score", 0):
        update["best"] = {"answer": state["answer"], "score": score, "documents": state["documents"]}
    # the score decides (4-5 accepts, 3 regenerates, below 3 rewrites): the verdict says so, not the model's yes/no
    verdict = "useful" if score >= ACCEPT_USEFULNESS else "partly useful" if score >= 3 else "not useful"
    events = [event("grade_usefulness", "error" if outcome.fallback else "verdict", grader="usefulness",
                    target="answer", verdict=f"{verdict} ({score}/5)", score=score,
                    reason=outcome.why(), counters=counters(ctx, state), **outcome.trace_fields())]
    if score < ACCEPT_USEFULNESS:
        # the near misses a regeneration can mend: the documents' facts, of the wrong kind or beside the point
        update["feedback"] = (f"it was grounded but did not answer what was asked ({score}/5): give exactly what the "
                              "question asks for, the kind of thing it names")
    update["trace"] = events
    return update


def route_after_usefulness(state: SelfRagState, runtime: Runtime[RunContext]
                           ) -> Literal["accept", "generate", "rewrite_question", "finish"]:
    """Router: accept at ACCEPT_USEFULNESS, regenerate a partly useful answer, rewrite a useless one; finish when the
    budget is spent."""
    ctx = runtime.context
    score = state["usefulness"]
    if score >= ACCEPT_USEFULNESS:
        return "accept"
    if score >= 3:
        return "generate" if state["generations"] <= ctx.settings.max_generations else "finish"
    return "rewrite_question" if state.get("relevance_retries", 0) < ctx.settings.max_rewrites else "finish"


def accept(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: the grounded, useful answer is the turn's answer."""
    return {**final(state["answer"], state["documents"]),
            **stop("accept", "accepted", f"answer accepted: grounded and useful ({state['usefulness']}/5)",
                   counters=counters(runtime.context, state))}


def finish(state: SelfRagState, runtime: Runtime[RunContext]) -> dict:
    """A budget ran out: the best grounded answer so far, or an honest 'not enough evidence'."""
    ctx = runtime.context
    c = counters(ctx, state)
    spent = (f"{c['relevance_retries']} of {ctx.settings.max_rewrites} rewrite(s) and "
             f"{max(c['generations'] - 1, 0)} of {ctx.settings.max_generations} regeneration(s)")
    best = state.get("best")
    if best:
        return {**final(best["answer"], best["documents"]), "grounding": "yes",  # only a grounded answer is kept
                **stop("finish", "retry_budget_exhausted",
                       f"gave up after {spent}: returned the best grounded answer ({best['score']}/5)", counters=c)}
    question = state["standalone_question"]
    answer = say(question, "확인할 수 있는 근거가 부족해 답하지 않겠습니다.",
                 "There is not enough evidence in the documents to answer this.")
    answer_update = {**final(answer), "grounding": ""}  # a decline: no answer of the documents was returned
    if not state.get("documents"):
        message = f"gave up after {c['relevance_retries']} of {ctx.settings.max_rewrites} rewrite(s): no relevant documents"
        return {**answer_update, **stop("finish", "no_relevant_documents", message, counters=c)}
    message = f"gave up after {spent}: no answer was grounded in the documents"
    return {**answer_update, **stop("finish", "not_enough_evidence", message, counters=c)}


def new_question(state: SelfRagState, question: str) -> dict:
    """An edited question starts over: searched as written, budgets and the best answer so far cleared."""
    return {**question_defaults(SelfRagState), "query": question}


def build() -> StateGraph:
    """Decide on retrieval, search the chosen sources in parallel, grade, (review,) answer, grade the answer, loop."""
    review = make_review_documents("select_sources", on_edit=new_question)
    builder = graph_with_review(SelfRagState, (decide_retrieval, direct_answer, select_sources, grade_documents,
                                               rewrite_question, generate, grade_hallucination, grade_usefulness, accept,
                                               finish), "decide_retrieval", review, ("generate", "select_sources", END))
    builder.add_node("multi_search", build_search())
    builder.add_conditional_edges("decide_retrieval", route_retrieval)
    builder.add_edge("direct_answer", END)
    builder.add_edge("select_sources", "multi_search")
    builder.add_edge("multi_search", "grade_documents")
    builder.add_conditional_edges("grade_documents", route_after_grading)
    builder.add_edge("rewrite_question", "select_sources")
    builder.add_edge("generate", "grade_hallucination")
    builder.add_conditional_edges("grade_hallucination", route_after_hallucination)
    builder.add_conditional_edges("grade_usefulness", route_after_usefulness)
    builder.add_edge("accept", END)
    builder.add_edge("finish", END)
    return builder


def max_llm_calls(settings, sources: int | None = None) -> int:
    """A written grader may be retried once on a parse failure (x2); a verdict read from probabilities is one
    call, then the written one where none is given (graders.VERDICT_CALLS, V below).

    contextualize 1 + retrieval decision V
    + per search round (1 + max_rewrites): source router 2 + relevance V per document (k per searched source;
      the fan-out is min(MAX_FANOUT, collections + web), MAX_FANOUT when the number of sources is not given)
    + rewrites: 2 each
    + per generation (1 + max_generations): answer 1 + hallucination V + usefulness V
    With review on, the bound holds for each stretch between two review decisions: an edited question
    starts at the source router with fresh budgets.
    """
    fanout = MAX_FANOUT if sources is None else min(MAX_FANOUT, sources + 1)
    rounds = 1 + settings.max_rewrites
    generations = 1 + settings.max_generations
    v = graders.VERDICT_CALLS
    return 1 + v + rounds * (2 + v * fanout * settings.k) + 2 * settings.max_rewrites + generations * (1 + 2 * v)


PATTERN = Pattern(
    id="self_rag",
    title="Self-RAG",
    description="Decides whether to retrieve, searches several sources in parallel, grades every document,\n"
                "then grades its own answer for grounding and usefulness and retries within two budgets.",
    order=30,
    description_ko="검색이 필요한지 정하고, 여러 출처를 동시에 검색해 문서마다 평가한 뒤\n"
                   "자기 답변의 근거와 유용성을 평가하고 두 가지 한도 안에서 다시 시도합니다.",
    result_fields=("grounding",),
    field_values={"retrieval": ("RetrievalNeed", "retrieve"), "grounded": ("Grounded", "grounded"),
                  "usefulness": ("Usefulness", "score"), "search_sources": ("Sources", "sources")},
    termination_reasons=(ACCEPTED, DIRECT_ANSWER, RETRY_BUDGET_EXHAUSTED, NO_RELEVANT_DOCUMENTS, NOT_ENOUGH_EVIDENCE,
                         USER_REJECTED),
    build=build,
    max_llm_calls=max_llm_calls,
    answer_nodes=frozenset({"generate", "direct_answer"}),
    supports_review=True,
    state=SelfRagState,
)
