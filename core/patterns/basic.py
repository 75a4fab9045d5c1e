"""Basic RAG: retrieve from every source of the run, answer from the top-k chunks. The baseline.

Optional human review pauses before the answer with the retrieved chunks; an edited question is retrieved again.
"""

from __future__ import annotations

from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime

from core.patterns import Pattern
from core.patterns.common import (
    ANSWERED,
    USER_REJECTED,
    BaseState,
    after_retrieval,
    answer_from_documents,
    final,
    graph_with_review,
    make_review_documents,
    run_sources,
    search_collections,
)
from core.runtime.context import RunContext
from core.runtime.trace import stop


def retrieve(state: BaseState, runtime: Runtime[RunContext]) -> dict:
    """Node: the top-k chunks over every source of the run."""
    ctx = runtime.context
    ids = [src.id for src in run_sources(ctx, state)]
    docs, events = search_collections(ctx, "retrieve", ids, state["standalone_question"])
    return {"documents": docs, "trace": events, "searched": ids}


def generate(state: BaseState, runtime: Runtime[RunContext]) -> dict:
    """Node: the answer from the retrieved chunks."""
    docs = state.get("documents", [])
    answer = answer_from_documents(runtime.context, state["standalone_question"], docs)
    end = stop("generate", "answered", f"answered from {len(docs)} retrieved chunks")
    return {**final(answer, docs), **end}


def build() -> StateGraph:
    """Retrieve, (review,) answer."""
    builder = graph_with_review(BaseState, (retrieve, generate), "retrieve", make_review_documents("retrieve"),
                                ("generate", "retrieve", END))
    builder.add_conditional_edges("retrieve", after_retrieval(), ["review_documents", "generate"])
    builder.add_edge("generate", END)
    return builder


PATTERN = Pattern(
    id="basic",
    title="Basic RAG",
    description="Retrieve the top-k chunks from every collection and answer from them.\n"
                "No routing, no grading: the baseline the other patterns improve on.",
    order=10,
    description_ko="모든 컬렉션에서 상위 k개 청크를 검색해 그것으로 답합니다.\n"
                   "라우팅도 평가도 없는 기준선으로, 다른 패턴은 이것을 개선합니다.",
    termination_reasons=(ANSWERED, USER_REJECTED),
    build=build,
    # contextualize (follow-ups only) + generate; after a review edit: generate only
    max_llm_calls=lambda settings, sources=None: 2,
    supports_review=True,
)
