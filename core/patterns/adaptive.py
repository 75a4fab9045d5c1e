"""Adaptive RAG: route each question to one of the run's sources, the web or a direct answer.

The routes are generated from the sources (core.knowledge.sources): the router's schema is an enum of the
enabled collection ids plus ``web`` and ``direct``, and its prompt lists each description. With
more than ``MAX_OFFERED`` sources the router sees only those whose descriptions are closest to
the question (embedding similarity), and the trace says which.

Variant ``complexity`` routes by how hard the question is instead: simple -> one retrieval;
compare / analyse -> at most 3 sub-questions, each retrieved and answered (fan-out with Send),
then one synthesis. Optional human review pauses before the answer is written.
"""

from __future__ import annotations

from typing import Annotated, Literal

from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from core.knowledge.sources import MAX_OFFERED, closest
from core.llm import graders
from core.patterns import Pattern
from core.patterns.common import (
    ANSWERED,
    DIRECT_ANSWER,
    NO_RELEVANT_DOCUMENTS,
    USER_REJECTED,
    WEB_UNAVAILABLE,
    BaseState,
    after_retrieval,
    answer_directly,
    answer_from_documents,
    final,
    graph_with_review,
    make_review_documents,
    run_sources,
    say,
    search_collections,
)
from core.patterns.common import search_web as web_documents
from core.patterns.state import per_question, per_turn, question_defaults
from core.prompts import answer_request, escape_fences
from core.prompts import workflow as P
from core.runtime.context import RunContext
from core.runtime.trace import add_or_reset, event, stop

MAX_SUB_QUESTIONS = 3


class AdaptiveState(BaseState, total=False):
    """Adaptive RAG's fields; the route of the question being answered is forgotten when a reviewer edits it."""

    variant: Annotated[str, per_turn("domain", "'domain' (route to a source, the web or a direct answer) or "
                                               "'complexity' (retrieve once, or decompose)")]
    route: Annotated[str, per_question("", "a source id, 'web' or 'direct': where the router sent the question")]
    complexity: Annotated[str, per_question("", "the classifier's verdict: simple, compare or analyse")]
    sub_questions: Annotated[list[str], per_turn([], "the decomposed question's parts (at most MAX_SUB_QUESTIONS)")]
    sub_answers: Annotated[list[dict], per_turn(None, "each part's {question, answer, documents}, as they arrive"),
                           add_or_reset]
    web_status: Annotated[str, per_question("", "'ok', or why the web search gave nothing")]


class SubQuestion(BaseState, total=False):
    """What one fanned-out sub-question's branch reads: the part to answer and the run's sources."""

    sub_question: str


def choose_variant(state: AdaptiveState) -> Literal["route_question", "classify_complexity"]:
    """Router: the variant's first step (domain routing, or the complexity classifier)."""
    return "classify_complexity" if state.get("variant") == "complexity" else "route_question"


# -- domain routing


def route_question(state: AdaptiveState, runtime: Runtime[RunContext]) -> dict:
    """Node: route the question to one of the run's sources, the web or a direct answer."""
    ctx = runtime.context
    question = state["standalone_question"]
    sources = run_sources(ctx, state)
    events = []
    if len(sources) > MAX_OFFERED:
        offered, scores = closest(ctx.kb, question, sources, MAX_OFFERED)
        events.append(event("route_question", "info", grader="source_shortlist", target="sources",
                            verdict=f"{len(offered)} of {len(sources)} offered",
                            reason="closest descriptions: " + ", ".join(f"{s.id} {score:.2f}"
                                                                        for s, score in zip(offered, scores)),
                            offered=[s.id for s in offered]))
        sources = offered
    outcome = graders.route_question(ctx.grader, question, sources)
    route = outcome.value.route
    ids = {s.id for s in sources}
    names = {s.id: s.name for s in sources} | {"web": "web search", "direct": "direct answer"}
    if outcome.fallback:
        events.append(event("route_question", "error", grader="question_router", verdict=names["direct"], target=route,
                            reason=f"router output unusable ({outcome.error}); falling back to a direct answer"))
    else:
        events.append(event("route_question", "route", grader="question_router", verdict=names[route], target=route,
                            reason=f"question routed to {names[route]}" + (f" (collection {route})" if route in ids else ""),
                            offered=[s.id for s in sources]))
    return {"route": route, "trace": events}


def pick_route(state: AdaptiveState) -> Literal["search_collection", "search_web", "direct_answer"]:
    """Router: the node the chosen route runs."""
    return {"web": "search_web", "direct": "direct_answer"}.get(state["route"], "search_collection")


def search_collection(state: AdaptiveState, runtime: Runtime[RunContext]) -> dict:
    """Node: the top-k chunks of the collection the question was routed to."""
    docs, events = search_collections(runtime.context, "search_collection", [state["route"]], state["standalone_question"])
    return {"documents": docs, "trace": events, "searched": [state["route"]]}


def search_web(state: AdaptiveState, runtime: Runtime[RunContext]) -> dict:
    """Node: web search for the question (unavailable without a key: the answer says so)."""
    docs, ev, status = web_documents(runtime.context, "search_web", state["standalone_question"])
    return {"documents": docs, "web_status": status, "trace": [ev], "searched": ["web"]}


def direct_answer(state: AdaptiveState, runtime: Runtime[RunContext]) -> dict:
    """Node: answer from the conversation, without retrieval."""
    answer = answer_directly(runtime.context, state["messages"])
    why = "router chose a direct answer" if state.get("route") == "direct" else "direct answer"
    return {**final(answer), **stop("direct_answer", "direct_answer", why)}


def generate(state: AdaptiveState, runtime: Runtime[RunContext]) -> dict:
    """Node: the answer from the documents found, or why there is none."""
    docs = state.get("documents", [])
    question = state["standalone_question"]
    if not docs and state.get("route") == "web":
        # the reason (English, from the search tool) stays in the trace: a Korean answer stays Korean
        answer = say(question, "웹 검색을 사용할 수 없어 답할 수 없습니다. 이유는 실행 추적에 있습니다.",
                     f"I cannot answer: web search is unavailable ({state.get('web_status')}).")
        return {**final(answer), **stop("generate", "web_unavailable",
                                        f"web search unavailable: {state.get('web_status')}")}
    if not docs:
        answer = say(question, "관련 문서를 찾지 못해 답할 수 없습니다.",
                     "I found no documents to answer from.")
        return {**final(answer), **stop("generate", "no_relevant_documents", "no documents were retrieved")}
    answer = answer_from_documents(runtime.context, question, docs, P.WEB_NOTE if state.get("route") == "web" else "")
    return {**final(answer, docs), **stop("generate", "answered", f"answered from {len(docs)} document(s)")}


# -- complexity routing


def classify_complexity(state: AdaptiveState, runtime: Runtime[RunContext]) -> dict:
    """Node: judge the question simple, compare or analyse (complexity variant)."""
    outcome = graders.classify_complexity(runtime.context.grader, state["standalone_question"])
    level = outcome.value.complexity
    kind = "error" if outcome.fallback else "route"
    reason = (f"classifier output unusable ({outcome.error}); treating as simple" if outcome.fallback
              else f"question judged {level}")
    return {"complexity": level, "trace": [event("classify_complexity", kind, grader="complexity",
                                                 verdict=level, reason=reason)]}


def pick_complexity(state: AdaptiveState) -> Literal["retrieve", "decompose"]:
    """Router: one retrieval for a simple question, else decompose it."""
    return "retrieve" if state.get("complexity", "simple") == "simple" else "decompose"


def retrieve(state: AdaptiveState, runtime: Runtime[RunContext]) -> dict:
    """Node: the top-k chunks over every source of the run."""
    ctx = runtime.context
    ids = [src.id for src in run_sources(ctx, state)]
    docs, events = search_collections(ctx, "retrieve", ids, state["standalone_question"])
    return {"documents": docs, "trace": events, "searched": ids}


def decompose(state: AdaptiveState, runtime: Runtime[RunContext]) -> dict:
    """Node: split the question into at most MAX_SUB_QUESTIONS sub-questions."""
    outcome = graders.decompose(runtime.context.grader, state["standalone_question"], MAX_SUB_QUESTIONS)
    parts = outcome.value.questions
    ev = event("decompose", "error" if outcome.fallback else "rewrite", grader="decomposer",
               verdict=f"{len(parts)} sub-question(s)", reason=" | ".join(parts))
    return {"sub_questions": parts, "sub_answers": [], "trace": [ev]}


def fan_out(state: AdaptiveState, runtime: Runtime[RunContext]) -> list[Send]:
    """Edge: one ``answer_sub_question`` branch per sub-question, over the run's sources."""
    ids = [src.id for src in run_sources(runtime.context, state)]
    return [Send("answer_sub_question", {"sub_question": q, "source_ids": ids}) for q in state["sub_questions"]]


def answer_sub_question(state: SubQuestion, runtime: Runtime[RunContext]) -> dict:
    """Node: retrieve for one sub-question and answer it from what was found."""
    ctx = runtime.context
    question = state["sub_question"]
    docs, events = search_collections(ctx, "answer_sub_question", state["source_ids"], question)
    answer = answer_from_documents(ctx, question, docs)
    return {"sub_answers": [{"question": question, "answer": answer, "documents": docs}], "trace": events,
            "searched": state["source_ids"]}


def synthesise(state: AdaptiveState, runtime: Runtime[RunContext]) -> dict:
    """Node: one answer from the sub-answers, their citations renumbered into one list."""
    order = {q: i for i, q in enumerate(state["sub_questions"])}
    parts = sorted(state.get("sub_answers", []), key=lambda a: order.get(a["question"], 99))
    docs, blocks = [], []
    for part in parts:  # renumber each sub-answer's citations into one list
        offset = len(docs)
        text = part["answer"]
        for n in range(len(part["documents"]), 0, -1):
            text = text.replace(f"[{n}]", f"[{n + offset}]")
        docs.extend(part["documents"])
        blocks.append(escape_fences(f"Q: {part['question']}\nA: {text}"))
    system = P.SYNTHESISE_SYSTEM.format(sub_answers="\n\n".join(blocks))
    reply = runtime.context.llm.invoke([("system", system), ("human", answer_request(state["standalone_question"]))])
    answer = str(reply.content).strip()
    return {**final(answer, docs),
            **stop("synthesise", "answered", f"synthesised from {len(parts)} sub-answer(s)")}


def route_again(state: AdaptiveState) -> str:
    """An edited question is a new question: it is routed (or classified) again, never sent to the old route."""
    return "classify_complexity" if state.get("variant") == "complexity" else "route_question"


def forget_route(state: AdaptiveState, question: str) -> dict:
    """An edited question is routed afresh: the old route, complexity and web status go."""
    return question_defaults(AdaptiveState)


def build() -> StateGraph:
    """Contextualize, then the variant's first step: route to a source, the web or a direct answer; or classify
    the question's complexity and retrieve once or decompose it."""
    review = make_review_documents(route_again, on_edit=forget_route)
    builder = graph_with_review(AdaptiveState, (route_question, search_collection, search_web, direct_answer, generate,
                                                classify_complexity, retrieve, decompose, answer_sub_question, synthesise),
                                None, review, ("generate", "route_question", "classify_complexity", END))
    builder.add_conditional_edges("contextualize", choose_variant)
    builder.add_conditional_edges("route_question", pick_route)
    for node in ("search_collection", "search_web", "retrieve"):
        builder.add_conditional_edges(node, after_retrieval(), ["review_documents", "generate"])
    builder.add_edge("direct_answer", END)
    builder.add_edge("generate", END)
    builder.add_conditional_edges("classify_complexity", pick_complexity)
    builder.add_conditional_edges("decompose", fan_out, ["answer_sub_question"])
    builder.add_edge("answer_sub_question", "synthesise")
    builder.add_edge("synthesise", END)
    return builder


def max_llm_calls(settings, sources: int | None = None) -> int:
    """contextualize 1 + classify 2 (one parse retry) + decompose 2 + 3 sub-answers + synthesis 1.

    The domain path is smaller: contextualize 1 + router 2 + answer 1. The bound holds for each stretch
    between two review decisions: an edited question is routed (or classified) again, without contextualizing.
    """
    return 1 + 2 + 2 + MAX_SUB_QUESTIONS + 1


PATTERN = Pattern(
    id="adaptive",
    title="Adaptive RAG",
    description="Routes each question to one of your collections (by its description), web search or a direct answer.\n"
                "Variant 'complexity': simple questions retrieve once; comparisons are decomposed.",
    order=20,
    description_ko="질문마다 내 컬렉션 중 하나(설명으로 고름), 웹 검색, 바로 답변 중 한 곳으로 보냅니다.\n"
                   "변형 'complexity': 단순한 질문은 한 번 검색하고, 비교 질문은 하위 질문으로 나눕니다.",
    variant_entries={"domain": "route_question", "complexity": "classify_complexity"},
    field_values={"route": ("Route", "route"), "complexity": ("Complexity", "complexity")},
    termination_reasons=(ANSWERED, DIRECT_ANSWER, NO_RELEVANT_DOCUMENTS, WEB_UNAVAILABLE, USER_REJECTED),
    build=build,
    max_llm_calls=max_llm_calls,
    answer_nodes=frozenset({"generate", "direct_answer", "synthesise"}),
    state=AdaptiveState,
    supports_review=True,
)
