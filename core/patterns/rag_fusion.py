"""RAG-Fusion: the model rewrites the question several ways, each query is searched over the run's
collections, and the ranked lists are merged by reciprocal rank fusion (RRF) before one answer.

A passage that several wordings of the question find ranks high even when no single search put it
first; that is what fusion adds over Basic RAG. The original question is searched too, so a weak or
failed rewriter still leaves the baseline search. Optional human review pauses before the answer with
the fused documents; an edited question is rewritten and searched again.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated

from langchain_core.documents import Document
from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from core.llm import graders
from core.llm.budgets import bounded_text
from core.patterns import Pattern
from core.patterns.common import (
    ANSWERED,
    NO_RELEVANT_DOCUMENTS,
    USER_REJECTED,
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

QUERY_REWRITES = 3  # rewrites the model writes; with the question itself, 4 searches per run
QUERY_CHARS = 60  # a search query's longest spelling: the prompt says so and the schema bounds it (its token budget)
RRF_K = 60  # the constant of Cormack et al. (2009): damps the weight of the very first ranks
_LABEL = re.compile(r"^\s*(?:\d+[.)]\s*|[-*•]\s*)?(?:(?:question|query|질문|검색어)\s*[:：]\s*)?", re.I)


class SearchQueries(BaseModel):
    """The model's rewrites of the question (structured output)."""

    queries: list[bounded_text(QUERY_CHARS)] = Field(min_length=1, max_length=QUERY_REWRITES)


class FusionState(BaseState, total=False):
    """RAG-Fusion's fields: both belong to the question being answered (an edit rewrites and searches afresh)."""

    queries: Annotated[list[str], per_question([], "what was searched: the question, then the model's rewrites")]
    rankings: Annotated[list[list[Document]], per_question([], "one ranked list per query, in the order of "
                                                               "``queries``")]


def doc_key(doc: Document) -> str:
    """The identity of a chunk across searches: its chunk id, its id, or a digest of its text."""
    meta = doc.metadata or {}
    return str(meta.get("chunk_id") or doc.id or hashlib.sha1(doc.page_content.encode()).hexdigest())


def reciprocal_rank_fusion(rankings: list[list[Document]], k: int = RRF_K) -> list[tuple[Document, float, list]]:
    """``(document, score, its rank in each list or None)``, best first: score = Σ 1 / (k + rank), ranks from 1.

    Ties keep the order in which the documents were first seen (list by list), so the result is deterministic.
    """
    seen: dict[str, Document] = {}
    ranks: dict[str, list] = {}
    for i, ranking in enumerate(rankings):
        for rank, doc in enumerate(ranking, 1):
            key = doc_key(doc)
            seen.setdefault(key, doc)
            slots = ranks.setdefault(key, [None] * len(rankings))
            slots[i] = slots[i] or rank  # a chunk listed twice in one list counts once, at its best rank
    scored = [(seen[key], sum(1 / (k + r) for r in slots if r), slots) for key, slots in ranks.items()]
    return sorted(scored, key=lambda item: -item[1])  # sorted() is stable: ties stay in first-seen order


def clean_queries(question: str, written: list[str]) -> list[str]:
    """The question first, then each distinct rewrite (labels and numbering removed, at most 300 characters)."""
    cleaned = [_LABEL.sub("", " ".join(str(q).split()))[:300].strip() for q in written]
    return list(dict.fromkeys([question, *[q for q in cleaned if q]]))[: QUERY_REWRITES + 1]


def ranks_text(slots: list) -> str:
    """A document's rank in each search, '-' where it was not found."""
    return ", ".join(str(r) if r else "-" for r in slots)


# ---------------------------------------------------------------- nodes


def write_queries(state: FusionState, runtime: Runtime[RunContext]) -> dict:
    """The model's rewrites of the question (structured output); on a reply that cannot be read, the question alone."""
    question = state["standalone_question"]
    system = P.FUSION_QUERIES_SYSTEM.format(n=QUERY_REWRITES, chars=QUERY_CHARS)
    outcome = graders.ask(runtime.context.grader, SearchQueries, system, f"Question: {question}",
                          SearchQueries(queries=[question]))
    queries = clean_queries(question, outcome.value.queries)
    if outcome.fallback:
        events = [event("write_queries", "error", grader="query_writer", target="queries", verdict="fallback",
                        reason=f"rewriter output unusable ({outcome.error}); searching with the question only")]
    else:
        events = [event("write_queries", "rewrite", grader="query_writer", target="query", verdict=query,
                        reason=f"search query {n} of {QUERY_REWRITES}") for n, query in enumerate(queries[1:], 1)]
    return {"queries": queries, "trace": events}


def search_queries(state: FusionState, runtime: Runtime[RunContext]) -> dict:
    """One search per query over the run's collections; each is a ranked list for the fusion."""
    ctx = runtime.context
    ids = [src.id for src in run_sources(ctx, state)]
    rankings, events = [], []
    for query in state.get("queries") or [state["standalone_question"]]:
        docs, found = search_collections(ctx, "search_queries", ids, query)
        rankings.append(docs)
        events += found
    return {"rankings": rankings, "trace": events, "searched": ids}


def fuse_rankings(state: FusionState, runtime: Runtime[RunContext]) -> dict:
    """Reciprocal rank fusion of the ranked lists; the top k fused documents are what the answer reads."""
    rankings = state.get("rankings") or []
    fused = reciprocal_rank_fusion(rankings)
    top = fused[: runtime.context.settings.k]
    events = [event("fuse_rankings", "verdict", grader="rrf", target=doc_ref(doc), verdict=f"fused rank {n}",
                    score=round(score, 4), reason=f"ranks in each search: {ranks_text(slots)}", ranks=slots)
              for n, (doc, score, slots) in enumerate(top, 1)]
    events.append(event("fuse_rankings", "info", grader="rrf", target="documents", verdict=f"kept {len(top)} of {len(fused)}",
                        reason=f"reciprocal rank fusion (k={RRF_K}) of {len(rankings)} ranked list(s)"))
    documents = [doc.model_copy(update={"metadata": {**doc.metadata, "rrf_score": round(score, 4)}})
                 for doc, score, _ in top]
    return {"documents": documents, "trace": events}


def generate(state: FusionState, runtime: Runtime[RunContext]) -> dict:
    """The answer from the fused documents, with citations; no model call when nothing was found."""
    question, docs = state["standalone_question"], state.get("documents", [])
    if not docs:
        answer = say(question, "관련 문서를 찾지 못해 답할 수 없습니다.", "I found no documents to answer from.")
        return {**final(answer), **stop("generate", "no_relevant_documents", "no documents were retrieved")}
    answer = answer_from_documents(runtime.context, question, docs)
    return {**final(answer, docs), **stop("generate", "answered", f"answered from {len(docs)} fused document(s)")}


def new_question(state: FusionState, question: str) -> dict:
    """A reviewer's edit: the old rewrites and rankings were for the old question."""
    return question_defaults(FusionState)


def build() -> StateGraph:
    """Write the queries, search each, fuse the rankings, (review,) answer."""
    review = make_review_documents("write_queries", on_edit=new_question)
    builder = graph_with_review(FusionState, (write_queries, search_queries, fuse_rankings, generate), "write_queries",
                                review, ("generate", "write_queries", END))
    builder.add_edge("write_queries", "search_queries")
    builder.add_edge("search_queries", "fuse_rankings")
    builder.add_conditional_edges("fuse_rankings", after_retrieval(), ["review_documents", "generate"])
    builder.add_edge("generate", END)
    return builder


def max_llm_calls(settings, sources: int | None = None) -> int:
    """contextualize 1 (follow-ups) + the rewrites 2 (one parse retry) + the answer 1. Searches and the fusion
    call no model. With review on, the bound holds for each stretch between two review decisions."""
    return 1 + 2 + 1


PATTERN = Pattern(
    id="rag_fusion",
    title="RAG-Fusion",
    description=f"The model rewrites the question {QUERY_REWRITES} ways; each query is searched over your collections,\n"
                f"and the ranked lists are merged by reciprocal rank fusion (k={RRF_K}) before one answer.",
    order=15,
    description_ko=f"모델이 질문을 {QUERY_REWRITES}가지로 고쳐 쓰고, 각 검색어로 컬렉션을 검색한 뒤\n"
                   f"순위 목록들을 순위 역수 융합(RRF, k={RRF_K})으로 합쳐 한 번에 답합니다.",
    termination_reasons=(ANSWERED, NO_RELEVANT_DOCUMENTS, USER_REJECTED),
    texts_ko=(
        ("search query {n} of {limit}", "검색어 {limit}개 중 {n}번째"),
        ("rewriter output unusable ({error}); searching with the question only",
         "재작성기 출력을 쓸 수 없어({error}) 질문만으로 검색합니다"),
        ("fused rank {n}", "융합 순위 {n}"),
        ("ranks in each search: {ranks}", "검색별 순위: {ranks}"),
        ("reciprocal rank fusion (k={k}) of {n} ranked list(s)", "순위 목록 {n}개의 순위 역수 융합 (k={k})"),
        ("answered from {n} fused document(s)", "융합한 문서 {n}개로 답했습니다"),
    ),
    build=build,
    max_llm_calls=max_llm_calls,
    supports_review=True,
    state=FusionState,
)
