"""The loop both ReAct flavours share: the tools node, the answer at the end, the step counters and the wiring.

Only the ``agent`` node and how its replies are kept (a text scratchpad, or tool-call messages) differ
between ``react`` and ``react_native``; this module holds the rest, and declares no pattern itself.
"""

from __future__ import annotations

from typing import Annotated, Literal

from langchain_core.documents import Document
from langchain_core.messages import HumanMessage
from langgraph.graph import END, StateGraph
from langgraph.runtime import Runtime

from core.knowledge.citations import label_sources
from core.llm import graders
from core.patterns.common import (
    ANSWERED,
    DIRECT_ANSWER,
    BaseState,
    answer_directly,
    answer_from_documents,
    final,
    graph_with_review,
    run_sources,
    say,
)
from core.patterns.state import per_turn
from core.patterns.tools import (
    AgentTool,
    merge_documents,
    observation_event,
    query_of,
    run_tool,
    source_tools,
)
from core.prompts import agents as P
from core.runtime.context import RunContext
from core.runtime.trace import ERROR, Reason, event, stop

MAX_ITERATIONS = Reason("max_iterations", "iteration limit reached", "반복 한도 도달", "budget")
REPEATED_ACTION = Reason("repeated_action", "the agent repeated a tool call again after being told it had already made it",
                         "에이전트가 이미 한 도구 호출이라는 알림을 받고도 또 반복함", "budget")
REASONS = (ANSWERED, DIRECT_ANSWER, MAX_ITERATIONS, REPEATED_ACTION, ERROR)  # what either flavour stops with
RESULT_FIELDS = ("iterations", "parse_errors")  # the evaluation's step parse rate reads them


class LoopState(BaseState, total=False):
    """The fields of the loop both ReAct flavours share; each flavour adds its own scratchpad."""

    pending: Annotated[list[dict], per_turn([], "the tool call(s) waiting to run")]
    iterations: Annotated[int, per_turn(0, "model replies so far")]
    parse_errors: Annotated[int, per_turn(0, "replies that were not a well-formed step (always 0 with native tool "
                                             "calls)")]
    final_answer: Annotated[str, per_turn("", "the agent's final answer, once it gave one")]
    made: Annotated[list[str], per_turn([], "every tool call run this turn, as 'name(query)': a repeat is not run "
                                            "again")]
    repeat_noted: Annotated[bool, per_turn(False, "the agent has been told once that it repeated a call")]
    repeated: Annotated[str, per_turn("", "the call(s) of a step that only repeated earlier calls after that note: "
                                          "the loop stops there")]
    answering: Annotated[bool, per_turn(False, "the next step is the answer (its text may still be unwritten: the "
                                               "loop's end writes it from the documents found, or directly)")]


REPEAT_NOTE = ("You already made this exact call in this turn; its result, repeated below, will not change. "
               "Your next step must be the Final Answer from the observations, or a call of another tool for a part "
               "of the question they do not cover yet.")


REPEATED_NOTED = "already made in this turn: its result is given back with a note to answer or call another tool"
REPEATED_WITH_DOCUMENTS = "already made in this turn, again after the note: the run answers from the documents found"
ANSWERED_AFTER_REPEAT = "written from the documents found, after the agent repeated a call"
REPEATED_STUCK = "already made in this turn, again after the note, and nothing found: the loop stops"


def tools_of(ctx: RunContext, state: dict) -> list[AgentTool]:
    """The run's tools: one retriever per source of the run (named after its collection), and the web."""
    return source_tools(run_sources(ctx, state), ctx.web_ready)


def make_tools_node(record_step):
    """Node ``tools``: run the pending call(s); ``record_step(state, call, run)`` returns the scratchpad update.

    A call identical to one already made this turn is not searched again as new (its result cannot change): the
    agent gets that result back with a note that its next step must answer or call another tool. A step made
    only of such calls after that note is stuck: with documents found the run answers from them (their
    observations held what the agent kept asking for), without any it stops with ``repeated``. (Qwen 1.5B
    repeats its first search once in about half of its runs.)
    """

    def tools(state: dict, runtime: Runtime[RunContext]) -> dict:
        ctx = runtime.context
        offered = tools_of(ctx, state)
        question = state.get("standalone_question", "")
        docs: list[Document] = list(state.get("documents", []))
        made: list[str] = list(state.get("made") or [])
        events, update, repeats, searched = [], {}, [], []
        for call in state.get("pending", []):
            name, query = call.get("name", ""), query_of(call.get("args"))
            key = f"{name}({query})"
            run = run_tool(ctx, offered, call, question)
            if key in made:
                repeats.append(key)
                run.status, run.text = "repeated", f"{REPEAT_NOTE}\n\n{run.text}"
            else:
                searched += run.searched
                docs = merge_documents(docs, run.documents)
                events.append(observation_event("tools", state.get("iterations", 0), run))
                made.append(key)
            update = record_step({**state, **update}, call, run)
        stuck = bool(repeats) and len(repeats) == len(state.get("pending", [])) and state.get("repeat_noted", False)
        if repeats:
            why = (REPEATED_WITH_DOCUMENTS if stuck and docs else REPEATED_STUCK if stuck else REPEATED_NOTED)
            events.append(event("tools", "verdict", grader="repeat_guard", target="; ".join(repeats), verdict="repeated",
                                reason=why))
        stop_here = {"answering": True} if stuck and docs else {"repeated": "; ".join(repeats)} if stuck else {}
        return {**update, "documents": docs, "pending": [], "trace": events, "made": made, "searched": searched,
                **({"repeat_noted": True} if repeats else {}), **stop_here}

    return tools


def counters(state: dict, settings) -> dict:
    """The loop's budget as the trace shows it: steps, parse errors and tool calls."""
    return {"iterations": state.get("iterations", 0), "max_iterations": settings.max_iterations,
            "parse_errors": state.get("parse_errors", 0), "tool_calls": _tool_calls(state)}


def _tool_calls(state: dict) -> int:
    return len(state.get("made") or [])


def finish(state: dict, runtime: Runtime[RunContext]) -> dict:
    """Node: the agent's final answer, with the documents its tools returned as sources.

    An answer step without words is written here: from the documents found, or directly where none were
    (a greeting the agent was sure needed no search).
    """
    ctx = runtime.context
    question = state["standalone_question"]
    docs = state.get("documents", [])
    answer = (state.get("final_answer") or "").strip()
    c = counters(state, ctx.settings)
    if not answer and docs:  # the model stopped without words: write the answer from what it found
        answer = answer_from_documents(ctx, question, docs)
    elif not answer and state.get("answering"):
        answer = answer_directly(ctx, state.get("messages") or [HumanMessage(question)])
    if not answer:
        answer = say(question, "모델이 빈 답을 돌려주었습니다.", "The model returned an empty answer.")
        return {**final(answer), **stop("finish", "error", "the agent ended with an empty reply", counters=c)}
    reason = "answered" if c["tool_calls"] else "direct_answer"
    message = (f"final answer after {c['iterations']} step(s), {c['tool_calls']} tool call(s)"
               + (f", {c['parse_errors']} parse error(s)" if c["parse_errors"] else ""))
    if docs and state.get("repeat_noted") and not state.get("final_answer"):
        message += "; " + ANSWERED_AFTER_REPEAT
    return {**final(answer, docs), "sources": label_sources(docs), **stop("finish", reason, message, counters=c)}


def best_answer(state: dict, runtime: Runtime[RunContext]) -> dict:
    """Node: the step limit was reached; answer from the documents gathered so far, if any."""
    ctx = runtime.context
    question = state["standalone_question"]
    docs = state.get("documents", [])
    c = counters(state, ctx.settings)
    if state.get("repeated"):
        reason, why = "repeated_action", f"the agent repeated {state['repeated']}, already made in this turn"
    else:
        reason, why = "max_iterations", f"stopped at the step limit ({c['iterations']} of {c['max_iterations']})"
    if docs:
        answer = answer_from_documents(ctx, question, docs, P.BEST_SO_FAR_NOTE)
        return {**final(answer, docs), "sources": label_sources(docs),
                **stop("best_answer", reason, f"{why}: answered from {len(docs)} document(s) found so far",
                       counters=c)}
    if reason == "repeated_action":
        answer = say(question, "에이전트가 같은 검색을 되풀이했고, 답할 근거를 찾지 못했습니다.",
                     "The agent repeated a search it had already made and found no evidence to answer.")
    else:
        answer = say(question, f"단계 한도({c['max_iterations']}회)에 도달했지만 답할 근거를 찾지 못했습니다.",
                     f"I reached the step limit ({c['max_iterations']}) without finding evidence to answer.")
    return {**final(answer), **stop("best_answer", reason, f"{why}: no documents gathered", counters=c)}


def after_step(state: dict, runtime: Runtime[RunContext]) -> Literal["agent", "best_answer", "finish"]:
    """Router after a tool step, a parse error or a rejection: another model step while the budget lasts (the
    run's ``max_iterations``, read when it routes) and the agent is not repeating itself."""
    if state.get("answering"):
        return "finish"
    if state.get("repeated"):
        return "best_answer"
    return "agent" if state.get("iterations", 0) < runtime.context.settings.max_iterations else "best_answer"


def react_graph(state_schema: type, agent, route_after_agent, review, record_step) -> StateGraph:
    """The loop both ReAct flavours share; only the agent node, its router and its protocol (``record_step``,
    the review's refusal) differ."""
    builder = graph_with_review(state_schema, (agent, make_tools_node(record_step), finish, best_answer), "agent",
                                review, ("tools", "agent", "best_answer"))
    builder.add_conditional_edges("agent", route_after_agent)
    builder.add_conditional_edges("tools", after_step)
    builder.add_edge("finish", END)
    builder.add_edge("best_answer", END)
    return builder


def max_llm_calls(settings, sources: int | None = None) -> int:
    """contextualize 1 + the model's reply per step (max_iterations) + the reading of each step's choice: the first
    whether to look up (graders.VERDICT_CALLS) and two readings of the tool, each later one 1
    + the answer at the end 1 (from the documents, or directly)."""
    m = settings.max_iterations
    return 1 + m + (graders.VERDICT_CALLS + 2) + (m - 1) + 1
