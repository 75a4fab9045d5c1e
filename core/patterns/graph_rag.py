"""Graph RAG: answer from an entity–relation graph instead of from text chunks.

Each collection's graph is extracted once (structured output into networkx) and stored next to it;
it is rebuilt only when the collection's chunks change. A question is linked to graph nodes (names
found in it, plus the entities a model lists), the neighbourhood up to ``HOPS`` hops is collected,
and its relations, each with the chunk it came from, are the context of the answer. Optional human
review pauses before the answer with those relations, grouped by the chunk they came from (drop a
chunk's relations, or edit the question: its entities are linked again).
"""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph

from core.knowledge import entity_graph as eg
from core.llm import graders
from core.patterns import Pattern
from core.patterns.common import (
    ANSWERED,
    DIRECT_ANSWER,
    NO_RELEVANT_DOCUMENTS,
    USER_REJECTED,
    BaseState,
    answer_directly,
    final,
    make_contextualize,
    make_review_documents,
    run_sources,
    say,
)
from core.prompts import agents as P
from core.prompts import answer_request, escape_fences
from core.runtime.context import RunContext
from core.runtime.trace import event, progress_reporter, stop

HOPS = 2
MAX_RELATIONS = 30
MAX_GRAPH_COLLECTIONS = 4


class GraphRagState(BaseState, total=False):
    graph_max_chunks: int  # option: chunks extracted per collection (at most eg.GRAPH_MAX_CHUNKS); 0 = that
    graphs: list[dict]  # build info per collection: status, digest, nodes, edges, ms
    mentions: list[str]
    entities: list[dict]  # linked nodes: {node, name, mention, how}
    relations: list[dict]  # the relations used as context


def build(ctx: RunContext) -> StateGraph:
    s = ctx.settings

    def load_graph(state: GraphRagState) -> dict:
        """Extract (or load) the graph of each of the run's sources, at most MAX_GRAPH_COLLECTIONS."""
        cap = min(state.get("graph_max_chunks") or eg.GRAPH_MAX_CHUNKS, eg.GRAPH_MAX_CHUNKS)
        sources = run_sources(ctx, state)
        infos, events = [], []
        for source in sources[:MAX_GRAPH_COLLECTIONS]:
            # a first build can take minutes on a small local model: the live status counts the chunks
            progress = progress_reporter("load_graph", "extract_graph", source.id)
            _, info = eg.ensure_graph(s, ctx.kb, ctx.grader, source.id, cap, _model_name(ctx), progress)
            infos.append(info)
        if len(sources) > MAX_GRAPH_COLLECTIONS:
            skipped = ", ".join(src.id for src in sources[MAX_GRAPH_COLLECTIONS:])
            events.append(event("load_graph", "info", grader="graph", target="collections",
                                verdict=f"{MAX_GRAPH_COLLECTIONS} of {len(sources)}",
                                reason=f"at most {MAX_GRAPH_COLLECTIONS} graphs per run; not used: {skipped} "
                                       "(choose fewer sources in the sidebar)"))
        events += [event("load_graph", "error" if info["errors"] else "info", grader="graph", target=info["collection"],
                         verdict=info["status"],
                         reason=f"{info['nodes']} nodes, {info['edges']} relations from {info['chunks']} chunk(s) "
                                f"in {info['ms']} ms" + (f"; {len(info['errors'])} chunk(s) failed extraction"
                                                         if info["errors"] else ""))
                   for info in infos]
        if not infos:
            events.append(event("load_graph", "error", grader="graph", target="collections", verdict="none",
                                reason="the run has no source to build a graph from"))
        return {"graphs": [{k: v for k, v in i.items() if k != "errors"} for i in infos], "trace": events}

    def graph_for(state: GraphRagState):
        """The merged graph of the sources load_graph checked in this run (by digest: no chunk is fetched again)."""
        graphs = []
        for info in state.get("graphs", []):
            graph = eg.graph_with_digest(s, info["collection"], info["digest"])
            if graph is None:  # another process replaced it since: check again
                graph, _ = eg.ensure_graph(s, ctx.kb, ctx.grader, info["collection"],
                                           min(state.get("graph_max_chunks") or eg.GRAPH_MAX_CHUNKS, eg.GRAPH_MAX_CHUNKS),
                                           _model_name(ctx))
            graphs.append(graph)
        return eg.merge_graphs(graphs)

    def link_entities(state: GraphRagState) -> dict:
        question = state["standalone_question"]
        outcome = graders.ask(ctx.grader, eg.QuestionEntities, P.GRAPH_ENTITIES_SYSTEM, f"Question: {question}",
                              eg.QuestionEntities(entities=[]))
        mentions = [eg.clean_name(m) for m in outcome.value.entities if eg.clean_name(m)]
        graph = graph_for(state)
        linked = eg.link_entities(graph, question, mentions)
        events = [event("link_entities", "error" if outcome.fallback else "verdict", grader="entities",
                        target="question", verdict=f"{len(mentions)} mention(s)",
                        reason=("; ".join(mentions) or "none") + (f" ({outcome.error})" if outcome.fallback else ""))]
        events += [event("link_entities", "route", grader="entity_linker", target=m["name"], verdict=m["how"],
                         reason=f"'{m['mention']}' -> node '{m['name']}'") for m in linked]
        return {"mentions": mentions, "entities": linked, "trace": events}

    def route_after_linking(state: GraphRagState) -> Literal["collect_relations", "direct_answer", "not_found"]:
        if state.get("entities"):
            return "collect_relations"
        return "not_found" if state.get("mentions") else "direct_answer"

    def collect_relations(state: GraphRagState) -> dict:
        graph = graph_for(state)
        relations = eg.neighbourhood(graph, [m["node"] for m in state["entities"]], HOPS, MAX_RELATIONS)
        ev = event("collect_relations", "tool", grader="graph", target=", ".join(m["name"] for m in state["entities"]),
                   verdict=f"{len(relations)} relation(s)", reason=f"neighbourhood up to {HOPS} hops",
                   relations=[eg.relation_line(r) for r in relations])
        return {"relations": relations, "trace": [ev]}

    def route_after_relations(state: GraphRagState) -> Literal["review_documents", "generate", "not_found"]:
        if not state.get("relations"):
            return "not_found"
        return "review_documents" if state.get("review") else "generate"

    def generate(state: GraphRagState) -> dict:
        relations = state["relations"]
        system = P.GRAPH_ANSWER_SYSTEM.format(relations=escape_fences("\n".join(eg.relation_line(r) for r in relations)))
        reply = ctx.llm.invoke([SystemMessage(system), HumanMessage(answer_request(state["standalone_question"]))])
        docs = eg.relation_documents(relations)
        return {**final(str(reply.content).strip(), docs),
                **stop("generate", "answered", f"answered from {len(relations)} relation(s) around "
                                               f"{len(state['entities'])} matched entit(ies)")}

    def direct_answer(state: GraphRagState) -> dict:
        return {**final(answer_directly(ctx, state["messages"])),
                **stop("direct_answer", "direct_answer", "the question names no entity: answered directly")}

    def not_found(state: GraphRagState) -> dict:
        question = state["standalone_question"]
        answer = say(question, "지식 그래프에서 질문의 대상을 찾지 못해 답할 수 없습니다.",
                     "I cannot answer: the knowledge graph has nothing about what the question asks.")
        why = ("no relations around the matched entities" if state.get("entities")
               else f"no graph node matches the question's entities ({', '.join(state.get('mentions', []))})")
        return {**final(answer), **stop("not_found", "no_relevant_documents", why)}

    def relations_as_documents(state: GraphRagState) -> list:
        """The relations the answer will read, one document per chunk they came from (what the sources list)."""
        return eg.relation_documents(state.get("relations", []))

    def keep_relations(state: GraphRagState, kept: list) -> dict:
        chunks = {d.metadata["chunk_id"] for d in kept}
        return {"relations": [r for r in state.get("relations", []) if (r["chunk_id"] or r["label"]) in chunks]}

    def new_question(state: GraphRagState, question: str) -> dict:
        return {"mentions": [], "entities": [], "relations": []}

    review = make_review_documents(lambda state: "link_entities", documents_of=relations_as_documents,
                                   keep=keep_relations, on_edit=new_question)

    builder = StateGraph(GraphRagState)
    builder.add_node("contextualize", make_contextualize(ctx))
    for node in (load_graph, link_entities, collect_relations, generate, direct_answer, not_found):
        builder.add_node(node)
    builder.add_node("review_documents", review, destinations=("generate", "link_entities", END))

    builder.add_edge(START, "contextualize")
    builder.add_edge("contextualize", "load_graph")
    builder.add_edge("load_graph", "link_entities")
    builder.add_conditional_edges("link_entities", route_after_linking)
    builder.add_conditional_edges("collect_relations", route_after_relations)
    builder.add_edge("generate", END)
    builder.add_edge("direct_answer", END)
    builder.add_edge("not_found", END)
    return builder


def _model_name(ctx: RunContext) -> str:
    model = ctx.grader
    return str(getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__)


def max_llm_calls(settings, sources: int | None = None) -> int:
    """Answering: contextualize 1 + entity listing 2 (one parse retry) + answer 1 = 4 (with review on: for
    each stretch between two review decisions; an edited question lists its entities again).

    Plus, only in a run that (re)builds a graph: extraction 2 per chunk (one parse retry), at most
    GRAPH_MAX_CHUNKS chunks for each source, at most MAX_GRAPH_COLLECTIONS sources (all of them when
    the number of sources is not given).
    """
    graphs = MAX_GRAPH_COLLECTIONS if sources is None else min(MAX_GRAPH_COLLECTIONS, sources)
    return 4 + 2 * eg.GRAPH_MAX_CHUNKS * graphs


PATTERN = Pattern(
    id="graph_rag",
    title="Graph RAG",
    description="Extracts an entity–relation graph from each collection once, links the question to its nodes\n"
                "and answers from the relations around them, listing the entities and relations it used.",
    order=80,
    description_ko="각 컬렉션에서 개체–관계 그래프를 한 번 추출하고, 질문을 그 노드에 연결해\n"
                   "주변 관계로 답하며, 사용한 개체와 관계를 보여 줍니다.",
    termination_reasons=(ANSWERED, DIRECT_ANSWER, NO_RELEVANT_DOCUMENTS, USER_REJECTED),
    build=build,
    max_llm_calls=max_llm_calls,
    answer_nodes=frozenset({"generate", "direct_answer"}),
    supports_review=True,
    reset={"graph_max_chunks": 0, "graphs": [], "mentions": [], "entities": [],
           "relations": []},
)
