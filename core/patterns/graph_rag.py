"""Graph RAG: answer from an entity–relation graph instead of from text chunks.

Each collection's graph is extracted when the collection is ingested or re-indexed, in the background
(``core.knowledge.graph_builds``; the sample collections ship theirs), and stored next to it, keyed by
its chunks and the extracting model (the run's grader). A question is linked to graph nodes (names
found in it, plus the entities a model lists), the neighbourhood up to ``HOPS`` hops is collected,
and its relations, each with the chunk it came from, are the context of the answer. Optional human
review pauses before the answer with those relations, grouped by the chunk they came from (drop a
chunk's relations, or edit the question: its entities are linked again).

A question on a collection whose graph is not ready (still being built, or never built for these chunks
and this model) does not extract anything itself unless asked to: it starts the build in the background
if none runs, has the build read the chunks the question retrieves first and waits for those alone,
answers from what is built so far (the build stores its graph after every batch), and says so in its
trace (``not_ready``) and at the end of the answer, naming the way to wait. Waiting is
the run option ``graph_wait`` (default: the ``RAG_GRAPH_WAIT`` setting, off): the run then follows the
build's progress and answers from the whole graph. A quick, honest partial answer is what a chat user
expects from a question; a demo that needs the whole graph asks to wait.
"""

from __future__ import annotations

import time
from typing import Annotated, Literal

from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime

from core.knowledge import entity_graph as eg
from core.knowledge import graph_builds
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
    graph_with_review,
    make_review_documents,
    run_sources,
    say,
)
from core.patterns.state import per_question, per_turn, question_defaults
from core.prompts import agents as P
from core.prompts import answer_request, format_documents, is_korean
from core.runtime.context import RunContext
from core.runtime.trace import event, progress_reporter, stop

HOPS = 2
MAX_RELATIONS = 30
PASSAGES = 2  # source chunks whose text the answer reads beside the relations
MAX_GRAPH_COLLECTIONS = 4


class GraphRagState(BaseState, total=False):
    """Graph RAG's fields; the entities and relations of the question being answered go when a reviewer edits it."""

    graph_max_chunks: Annotated[int, per_turn(0, "option: chunks extracted per collection (at most "
                                                 "eg.GRAPH_MAX_CHUNKS); 0 = that")]
    graph_wait: Annotated[bool | None, per_turn(None, "option: wait for a graph that is not ready (None: "
                                                      "settings.graph_wait)")]
    graphs: Annotated[list[dict], per_turn([], "build info per collection: status, digest, ready, done, nodes, "
                                               "edges, ms")]
    graph_note: Annotated[str, per_turn("", "said at the end of the answer when a graph was not ready")]
    mentions: Annotated[list[str], per_question([], "the entities the model listed in the question")]
    entities: Annotated[list[dict], per_question([], "linked nodes: {node, name, mention, how}")]
    relations: Annotated[list[dict], per_question([], "the relations used as context")]


def load_graph(state: GraphRagState, runtime: Runtime[RunContext]) -> dict:
    """The graph of each of the run's sources (at most MAX_GRAPH_COLLECTIONS): ready, waited for, or partial."""
    ctx = runtime.context
    cap = _cap(state)
    wait = ctx.settings.graph_wait if state.get("graph_wait") is None else bool(state["graph_wait"])
    sources = run_sources(ctx, state)
    question = state["standalone_question"]
    infos = [_graph_info(ctx, source.id, cap, wait, question) for source in sources[:MAX_GRAPH_COLLECTIONS]]
    events = []
    if len(sources) > MAX_GRAPH_COLLECTIONS:
        skipped = ", ".join(src.id for src in sources[MAX_GRAPH_COLLECTIONS:])
        events.append(event("load_graph", "info", grader="graph", target="collections",
                            verdict=f"{MAX_GRAPH_COLLECTIONS} of {len(sources)}",
                            reason=f"at most {MAX_GRAPH_COLLECTIONS} graphs per run; not used: {skipped} "
                                   "(choose fewer sources in the sidebar)"))
    events += [_graph_event(info) for info in infos]
    if not infos:
        events.append(event("load_graph", "error", grader="graph", target="collections", verdict="none",
                            reason="the run has no source to build a graph from"))
    waiting = [i for i in infos if not i["ready"]]
    note = _not_ready_note(question, waiting) if waiting else ""
    return {"graphs": [{k: v for k, v in i.items() if k != "errors"} for i in infos], "graph_note": note,
            "trace": events}


def graph_for(ctx: RunContext, state: GraphRagState):
    """The merged graph of the sources load_graph checked in this run (by digest: no chunk is fetched again),
    as far as each is built now."""
    name = eg.model_label(ctx.grader)
    graphs = [eg.graph_with_digest(ctx.settings, info["collection"], info["digest"], name) for info in state.get("graphs", [])]
    return eg.merge_graphs([g for g in graphs if g is not None])  # replaced since by another process: left out


def link_entities(state: GraphRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: the entities the question mentions, linked to nodes of the run's graphs."""
    ctx = runtime.context
    question = state["standalone_question"]
    system = P.GRAPH_ENTITIES_SYSTEM.format(most=eg.QUESTION_ENTITIES, name_chars=eg.NAME_CHARS)
    outcome = graders.ask(ctx.grader, eg.QuestionEntities, system, f"Question: {question}",
                          eg.QuestionEntities(entities=[]))
    mentions = [eg.clean_name(m) for m in outcome.value.entities if eg.clean_name(m)]
    graph = graph_for(ctx, state)
    linked = eg.link_entities(graph, question, mentions)
    events = [event("link_entities", "error" if outcome.fallback else "verdict", grader="entities",
                    target="question", verdict=f"{len(mentions)} mention(s)",
                    reason=("; ".join(mentions) or "none") + (f" ({outcome.error})" if outcome.fallback else ""))]
    events += [event("link_entities", "route", grader="entity_linker", target=m["name"], verdict=m["how"],
                     reason=f"'{m['mention']}' -> node '{m['name']}'") for m in linked]
    return {"mentions": mentions, "entities": linked, "trace": events}


def route_after_linking(state: GraphRagState) -> Literal["collect_relations", "direct_answer", "not_found"]:
    """Router: collect relations around linked entities; no mention at all answers directly."""
    if state.get("entities"):
        return "collect_relations"
    return "not_found" if state.get("mentions") else "direct_answer"


def collect_relations(state: GraphRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: the relations within HOPS hops of the linked entities (at most MAX_RELATIONS)."""
    graph = graph_for(runtime.context, state)
    relations = eg.neighbourhood(graph, [m["node"] for m in state["entities"]], HOPS, MAX_RELATIONS,
                                 state["standalone_question"])
    ev = event("collect_relations", "tool", grader="graph", target=", ".join(m["name"] for m in state["entities"]),
               verdict=f"{len(relations)} relation(s)", reason=f"neighbourhood up to {HOPS} hops",
               relations=[eg.relation_line(r) for r in relations])
    return {"relations": relations, "trace": [ev]}


def route_after_relations(state: GraphRagState) -> Literal["review_documents", "generate", "not_found"]:
    """Router: answer (or review) from the relations, or say nothing was found."""
    if not state.get("relations"):
        return "not_found"
    return "review_documents" if state.get("review") else "generate"


def generate(state: GraphRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: the answer from the relations, grouped by the chunk they came from, the nearest chunks' text
    beside theirs (what a short relation leaves out), with a note when a graph was not fully built."""
    relations = state["relations"]
    question = state["standalone_question"]
    docs = eg.relation_documents(relations, _passages(runtime.context, relations, question))
    # numbered without their titles: Qwen 1.5B named "라 포레스타 와인 리스트", a title, among the wines
    shown = [Document(page_content=d.page_content, metadata={k: v for k, v in d.metadata.items() if k != "title"})
             for d in docs]
    system = P.GRAPH_ANSWER_SYSTEM.format(documents=format_documents(shown))
    form = P.GRAPH_ANSWER_FORM_KO if is_korean(question) else P.GRAPH_ANSWER_FORM
    llm, events = runtime.context.llm, []
    asked = eg.asked_entities(relations, [m["name"] for m in state["entities"]], question)
    if asked and getattr(llm, "answer_openings", False):
        # Qwen 1.5B made the question's steak the subject and named no wine (docs/BENCHMARKS.md, session 26, 29):
        # the answer now starts with one of the things asked for, chosen and continued by the model
        llm = llm.bind(opening=asked)
        events.append(event("generate", "info", grader="graph", target="answer", verdict=f"{len(asked)} opening(s)",
                            reason="the answer starts with one of what the question asks for: " + "; ".join(asked)))
    reply = llm.invoke([SystemMessage(system), HumanMessage(f"{answer_request(question)}\n{form}")])
    done = stop("generate", "answered", f"answered from {len(relations)} relation(s) around "
                                        f"{len(state['entities'])} matched entit(ies)")
    return {**final(_with_note(str(reply.content).strip(), state), docs), **done,
            "trace": events + done.get("trace", [])}


def _passages(ctx: RunContext, relations: list[dict], question: str) -> dict[str, str]:
    """chunk id -> text of the PASSAGES chunks the relations came from that share most words with the
    question (a chunk gone since is left out)."""
    by_collection: dict[str, list[str]] = {}
    for collection, chunk_id in eg.passage_chunks(relations):
        by_collection.setdefault(collection, []).append(chunk_id)
    texts: dict[str, str] = {}
    for collection, ids in by_collection.items():
        if collection and ctx.kb.exists(collection):
            texts.update(ctx.kb.chunk_texts(collection, ids))
    ordered = {chunk: texts[chunk] for _, chunk in eg.passage_chunks(relations) if chunk in texts}
    return eg.best_passages(ordered, question, PASSAGES)


def direct_answer(state: GraphRagState, runtime: Runtime[RunContext]) -> dict:
    """Node: the question names no entity: answer from the conversation."""
    return {**final(answer_directly(runtime.context, state["messages"])),
            **stop("direct_answer", "direct_answer", "the question names no entity: answered directly")}


def not_found(state: GraphRagState) -> dict:
    """Node: the graph has nothing about what the question asks: say so."""
    question = state["standalone_question"]
    answer = say(question, "지식 그래프에서 질문의 대상을 찾지 못해 답할 수 없습니다.",
                 "I cannot answer: the knowledge graph has nothing about what the question asks.")
    why = ("no relations around the matched entities" if state.get("entities")
           else f"no graph node matches the question's entities ({', '.join(state.get('mentions', []))})")
    if state.get("graph_note"):
        why += " (the graph is not fully built yet)"
    return {**final(_with_note(answer, state)), **stop("not_found", "no_relevant_documents", why)}


def relations_as_documents(state: GraphRagState) -> list:
    """The relations the answer will read, one document per chunk they came from (what the sources list)."""
    return eg.relation_documents(state.get("relations", []))


def keep_relations(state: GraphRagState, kept: list) -> dict:
    """The relations of the chunks a reviewer kept."""
    chunks = {d.metadata["chunk_id"] for d in kept}
    return {"relations": [r for r in state.get("relations", []) if (r["chunk_id"] or r["label"]) in chunks]}


def new_question(state: GraphRagState, question: str) -> dict:
    """An edited question has its entities linked again: the old mentions, entities and relations go."""
    return question_defaults(GraphRagState)


def build() -> StateGraph:
    """Load the graphs, link the question's entities, collect the relations around them, (review,) answer."""
    review = make_review_documents("link_entities", documents_of=relations_as_documents, keep=keep_relations,
                                   on_edit=new_question)
    builder = graph_with_review(GraphRagState, (load_graph, link_entities, collect_relations, generate, direct_answer,
                                                not_found), "load_graph", review, ("generate", "link_entities", END))
    builder.add_edge("load_graph", "link_entities")
    builder.add_conditional_edges("link_entities", route_after_linking)
    builder.add_conditional_edges("collect_relations", route_after_relations)
    builder.add_edge("generate", END)
    builder.add_edge("direct_answer", END)
    builder.add_edge("not_found", END)
    return builder


def _cap(state: GraphRagState) -> int:
    return min(state.get("graph_max_chunks") or eg.GRAPH_MAX_CHUNKS, eg.GRAPH_MAX_CHUNKS)


def _graph_info(ctx: RunContext, collection: str, cap: int, wait: bool, question: str) -> dict:
    """The collection's graph info after making sure a build runs if it is not ready; waits for it if asked,
    else for the chunks the question retrieves, which the build reads first (``first``: how many).

    A graph whose every chunk failed extraction is built again. A build already running for another
    model or cap is waited for, then this run's own is started.
    """
    started = time.perf_counter()
    name = eg.model_label(ctx.grader)
    _, info = eg.current_graph(ctx.settings, ctx.kb, collection, name, cap)
    if not info["ready"] or info["failed"]:
        build = graph_builds.start(ctx.settings, ctx.kb, ctx.grader, collection, cap)
        # a first build takes minutes on a small local model: the live status counts the chunks
        report = progress_reporter("load_graph", "extract_graph", collection)
        if not wait and build.model == name:
            docs, _ = ctx.search([collection], question)
            first = build.read_first([d.id or d.metadata.get("chunk_id", "") for d in docs], report)
            _, info = eg.current_graph(ctx.settings, ctx.kb, collection, name, cap)
            info["first"] = first
        if wait:
            build.wait(report)
            if build.state == "ready" and build.model != name:  # someone else's build: now ours
                build = graph_builds.start(ctx.settings, ctx.kb, ctx.grader, collection, cap)
                build.wait(report)
            if build.state == "failed":
                raise RuntimeError(f"the graph of {collection} could not be built: {build.error}")
            _, info = eg.current_graph(ctx.settings, ctx.kb, collection, name, cap)
            info["status"] = "built"
    info["ms"] = int((time.perf_counter() - started) * 1000)
    return info


def _graph_event(info: dict) -> dict:
    """load_graph's trace line for one collection: how its graph was found, or that it is not ready.

    Each message is one literal (not assembled from parts), so its Korean template in ui/i18n/trace.py matches.
    """
    nodes, edges, chunks = info["nodes"], info["edges"], info["chunks"]
    if not info["ready"] and info.get("first"):
        return event("load_graph", "info", grader="graph", target=info["collection"], verdict="not_ready",
                     reason=f"graph not ready: the {info['first']} chunk(s) the question retrieves were read first, "
                            f"{info['done']} of {chunks} chunk(s) read by {info['model']} so far, the rest being "
                            f"built in the background; answering from what is built ({nodes} nodes, {edges} "
                            "relations); ask again when it is built, or set graph_wait to wait for it")
    if not info["ready"]:
        return event("load_graph", "info", grader="graph", target=info["collection"], verdict="not_ready",
                     reason=f"graph not ready: {info['done']} of {chunks} chunk(s) read by {info['model']}, "
                            f"being built in the background; answering from what is built ({nodes} nodes, {edges} "
                            "relations); ask again when it is built, or set graph_wait to wait for it")
    if info["errors"]:
        return event("load_graph", "error", grader="graph", target=info["collection"], verdict=info["status"],
                     reason=f"{nodes} nodes, {edges} relations from {chunks} chunk(s) in {info['ms']} ms; "
                            f"{len(info['errors'])} extraction call(s) failed")
    return event("load_graph", "info", grader="graph", target=info["collection"], verdict=info["status"],
                 reason=f"{nodes} nodes, {edges} relations from {chunks} chunk(s) in {info['ms']} ms")


def _not_ready_note(question: str, infos: list[dict]) -> str:
    """The answer's last paragraph when a graph is not ready: what was used, and how to get the whole graph."""
    parts = ", ".join(f"{i['collection']} ({i['done']}/{i['chunks']})" for i in infos)
    return say(question, f"참고: {parts}의 지식 그래프를 아직 만드는 중이라 지금까지 만든 부분으로만 답했습니다. "
                         "다 만들어진 뒤 다시 묻거나, '그래프 기다리기'(graph_wait)를 켜고 물어 보세요.",
               f"Note: the knowledge graph of {parts} chunks is still being built, so this answer uses only what "
               "is built so far. Ask again when it is finished, or turn on 'Wait for the graph' (graph_wait).")


def _with_note(answer: str, state: GraphRagState) -> str:
    return f"{answer}\n\n{state['graph_note']}" if state.get("graph_note") else answer


def max_llm_calls(settings, sources: int | None = None) -> int:
    """contextualize 1 + entity listing 2 (one parse retry) + answer 1 = 4 (with review on: for each stretch
    between two review decisions; an edited question lists its entities again), whatever the sources.

    Graph extraction is not a call of the run: it runs in a background build (``graph_builds``), which a
    run waits for (the whole graph with ``graph_wait``, else the chunks its question retrieves) without
    making its calls.
    """
    return 4


PATTERN = Pattern(
    id="graph_rag",
    title="Graph RAG",
    description="Extracts an entity–relation graph from each collection at ingest, links the question to its nodes\n"
                "and answers from the relations around them, listing the entities and relations it used.",
    order=80,
    description_ko="색인할 때 각 컬렉션에서 개체–관계 그래프를 추출하고, 질문을 그 노드에 연결해\n"
                   "주변 관계로 답하며, 사용한 개체와 관계를 보여 줍니다.",
    termination_reasons=(ANSWERED, DIRECT_ANSWER, NO_RELEVANT_DOCUMENTS, USER_REJECTED),
    build=build,
    max_llm_calls=max_llm_calls,
    answer_nodes=frozenset({"generate", "direct_answer"}),
    supports_review=True,
    state=GraphRagState,
)
