"""Corrective RAG: grade retrieval as correct / ambiguous / incorrect and correct course.

correct   -> refine the kept documents into relevant sentence strips -> answer
ambiguous -> refine what is there, and add a web search with a short rewritten query
incorrect -> drop the documents, rewrite to a web query, search the web -> answer
When the web is unavailable the answer uses whatever strips survived, or says the evidence
is insufficient; the termination message says which. Optional human review pauses before the answer
with the refined strips and any web results; an edited question is retrieved and graded again.
"""

from __future__ import annotations

from typing import Annotated, Literal

from langchain_core.documents import Document
from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime

from core.llm import graders
from core.patterns import Pattern
from core.patterns.common import (
    ANSWERED,
    NO_RELEVANT_DOCUMENTS,
    USER_REJECTED,
    WEB_UNAVAILABLE,
    BaseState,
    after_retrieval,
    answer_from_documents,
    final,
    graph_with_review,
    make_review_documents,
    run_sources,
    say,
    search_collections,
)
from core.patterns.state import per_question, question_defaults
from core.prompts import workflow as P
from core.runtime.context import RunContext
from core.runtime.trace import doc_ref, event, stop

MAX_STRIPS_PER_DOC = 12  # bounds the refinement calls: a chunk rarely holds more sentences


class CragState(BaseState, total=False):
    """Corrective RAG's fields: all of them belong to the question being answered (an edit grades afresh)."""

    verdict: Annotated[str, per_question("", "correct / ambiguous / incorrect, over all documents")]
    kept: Annotated[list[Document], per_question([], "documents graded correct or ambiguous")]
    strips: Annotated[list[Document], per_question([], "refined knowledge: relevant sentences, with their "
                                                       "document's metadata")]
    web_query: Annotated[str, per_question("", "the question rewritten as a short web query")]
    web_documents: Annotated[list[Document], per_question([], "what the web search found")]
    web_status: Annotated[str, per_question("", "'ok', or why the web search gave nothing")]


def retrieve(state: CragState, runtime: Runtime[RunContext]) -> dict:
    """Node: the top-k chunks over every source of the run."""
    ctx = runtime.context
    ids = [src.id for src in run_sources(ctx, state)]
    docs, events = search_collections(ctx, "retrieve", ids, state["standalone_question"])
    return {"documents": docs, "trace": events, "searched": ids}


def grade_documents(state: CragState, runtime: Runtime[RunContext]) -> dict:
    """Node: grade each chunk correct / ambiguous / incorrect; the verdict over all of them routes."""
    ctx = runtime.context
    docs = state.get("documents", [])
    outcomes = graders.crag_grade(ctx.grader, state["standalone_question"], docs, ctx.settings.max_concurrency,
                                  ctx.thresholds)
    events, kept, grades = [], [], []
    for doc, outcome in zip(docs, outcomes):
        grade = outcome.value
        grades.append(grade.grade)
        if grade.grade != "incorrect":
            kept.append(doc)
        events.append(event("grade_documents", "error" if outcome.fallback else "verdict", grader="crag",
                            target=doc_ref(doc), verdict=grade.grade, score=round(grade.confidence, 2),
                            reason=outcome.why(), **outcome.trace_fields()))
    verdict = "correct" if "correct" in grades else "ambiguous" if "ambiguous" in grades else "incorrect"
    events.append(event("grade_documents", "route", grader="crag", verdict=verdict,
                        reason=f"{grades.count('correct')} correct, {grades.count('ambiguous')} ambiguous, "
                               f"{grades.count('incorrect')} incorrect"))
    return {"verdict": verdict, "kept": kept, "trace": events}


def route_after_grading(state: CragState) -> Literal["refine_knowledge", "rewrite_for_web"]:
    """Router: refine what was found, or (all incorrect) go to the web."""
    return "rewrite_for_web" if state["verdict"] == "incorrect" else "refine_knowledge"


def refine_knowledge(state: CragState, runtime: Runtime[RunContext]) -> dict:
    """Node: keep the relevant sentence strips of each kept document."""
    ctx = runtime.context
    question = state["standalone_question"]
    per_doc = [graders.split_strips(d.page_content)[:MAX_STRIPS_PER_DOC] for d in state["kept"]]
    outcomes = graders.grade_strips(ctx.grader, question, per_doc, ctx.settings.max_concurrency, ctx.thresholds)
    refined, events = [], []
    for doc, strips, outcome in zip(state["kept"], per_doc, outcomes):
        verdicts = outcome.value.verdicts
        kept = [strip for strip, v in zip(strips, verdicts) if v == "yes"]
        dropped = [strip for strip, v in zip(strips, verdicts) if v != "yes"]
        if kept:
            refined.append(Document(page_content="\n".join(kept), metadata=dict(doc.metadata), id=doc.id))
        if outcome.fallback:
            reason = f"grader output unusable ({outcome.error}); kept every strip"
        else:
            reason = ("dropped: " + " | ".join(d[:60] for d in dropped)) if dropped else "all kept"
        events.append(event("refine_knowledge", "error" if outcome.fallback else "verdict",
                            grader="strip_relevance", target=doc_ref(doc),
                            verdict=f"kept {len(kept)} of {len(strips)} strips", reason=reason,
                            kept=[k[:120] for k in kept], **outcome.trace_fields()))
    return {"strips": refined, "trace": events}


def route_after_refining(state: CragState) -> Literal["review_documents", "generate", "rewrite_for_web"]:
    """Router: answer (or review) from the strips when retrieval was correct, else add a web search."""
    if state["verdict"] == "correct" and state.get("strips"):
        return "review_documents" if state.get("review") else "generate"
    return "rewrite_for_web"  # ambiguous, or nothing survived refinement: supplement from the web


def rewrite_for_web(state: CragState, runtime: Runtime[RunContext]) -> dict:
    """Node: the question rewritten as a short web query."""
    outcome = graders.rewrite_question(runtime.context.grader, state["standalone_question"], for_web=True)
    why = {"incorrect": "all documents graded incorrect", "ambiguous": "retrieval ambiguous: adding a web supplement"}
    reason = why.get(state["verdict"], "no strip survived refinement")
    return {"web_query": outcome.value.question,
            "trace": [event("rewrite_for_web", "error" if outcome.fallback else "rewrite", grader="web_rewriter",
                            verdict=outcome.value.question, reason=reason)]}


def web_search(state: CragState, runtime: Runtime[RunContext]) -> dict:
    """Node: search the web with the rewritten query."""
    result = runtime.context.web(state["web_query"])
    return {"web_documents": result.documents, "web_status": "ok" if result.ok else result.reason, "searched": ["web"],
            "trace": [event("web_search", "tool", grader="web_search", target=result.query, verdict=result.status,
                            reason=result.reason or f"{len(result.documents)} results")]}


def generate(state: CragState, runtime: Runtime[RunContext]) -> dict:
    """Node: the answer from the strips and web results, or why there is none."""
    question = state["standalone_question"]
    strips, web = state.get("strips", []), state.get("web_documents", [])
    docs = strips + web
    # by status, not by what is left: a reviewer may drop every web result of a search that worked
    web_failed = bool(state.get("web_query")) and state.get("web_status") != "ok"
    if not docs:
        answer = say(question, "확인할 수 있는 근거가 부족해 답할 수 없습니다.",
                     "There is not enough evidence to answer this.")
        if web_failed and state.get("web_status") and "no results" not in state["web_status"]:
            return {**final(answer), **stop("generate", "web_unavailable",
                                            f"web search unavailable ({state['web_status']}) and no strip survived")}
        return {**final(answer), **stop("generate", "no_relevant_documents",
                                        "no relevant documents in the collections or on the web")}
    notes = [P.STRIPS_NOTE] + ([P.WEB_NOTE] if web else [])
    answer = answer_from_documents(runtime.context, question, docs, "\n".join(notes))
    if web_failed:
        n = sum(len(d.page_content.splitlines()) for d in strips)
        message = f"web search unavailable ({state.get('web_status')}): answered from the {n} strip(s) that survived"
        return {**final(answer, docs), **stop("generate", "web_unavailable", message)}
    origin = f"{len(strips)} refined document(s)" + (f" and {len(web)} web result(s)" if web else "")
    return {**final(answer, docs), **stop("generate", "answered", f"answered from {origin}")}


def knowledge_of(state: CragState) -> list[Document]:
    """What the answer will read: the refined strips, then the web results."""
    return state.get("strips", []) + state.get("web_documents", [])


def keep_knowledge(state: CragState, kept: list[Document]) -> dict:
    """The strips and web results a reviewer kept."""
    return {"strips": [d for d in state.get("strips", []) if d in kept],
            "web_documents": [d for d in state.get("web_documents", []) if d in kept]}


def new_question(state: CragState, question: str) -> dict:
    """An edited question is retrieved and graded afresh: every field of the old one goes."""
    return question_defaults(CragState)


def build() -> StateGraph:
    """Retrieve, grade, refine or rewrite for the web, (review,) answer."""
    review = make_review_documents("retrieve", documents_of=knowledge_of, keep=keep_knowledge, on_edit=new_question)
    builder = graph_with_review(CragState, (retrieve, grade_documents, refine_knowledge, rewrite_for_web, web_search,
                                            generate), "retrieve", review, ("generate", "retrieve", END))
    builder.add_edge("retrieve", "grade_documents")
    builder.add_conditional_edges("grade_documents", route_after_grading)
    builder.add_conditional_edges("refine_knowledge", route_after_refining)
    builder.add_edge("rewrite_for_web", "web_search")
    builder.add_conditional_edges("web_search", after_retrieval(), ["review_documents", "generate"])
    builder.add_edge("generate", END)
    return builder


def max_llm_calls(settings, sources: int | None = None) -> int:
    """contextualize 1 + CRAG grade per document (graders.VERDICT_CALLS) + strip grades per document (one read
    of p per strip, at most MAX_STRIPS_PER_DOC, then, where none is given, one written call for all its strips,
    retried once) + web rewrite 2 + answer 1 (a written grader may be retried once on a parse failure).
    With review on, the bound holds for each stretch between two review decisions (an edit retrieves again)."""
    per_document = graders.VERDICT_CALLS + MAX_STRIPS_PER_DOC + 2
    return 1 + per_document * settings.k + 2 + 1


PATTERN = Pattern(
    id="corrective",
    title="Corrective RAG",
    description="Grades retrieval correct / ambiguous / incorrect, refines documents into relevant strips,\n"
                "and falls back to a rewritten web search when the collections do not hold the answer.",
    order=40,
    description_ko="검색 결과를 정확 / 모호 / 부정확으로 평가하고 문서를 관련 조각으로 정제하며,\n"
                   "컬렉션에 답이 없으면 질문을 고쳐 웹 검색으로 보충합니다.",
    field_values={"verdict": ("CragGrade", "grade")},
    termination_reasons=(ANSWERED, NO_RELEVANT_DOCUMENTS, WEB_UNAVAILABLE, USER_REJECTED),
    build=build,
    max_llm_calls=max_llm_calls,
    supports_review=True,
    state=CragState,
)
