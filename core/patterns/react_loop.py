"""The loop both ReAct flavours share: the tools node, the answer at the end, the step counters and the wiring.

Only the ``agent`` node and how its replies are kept (a text scratchpad, or tool-call messages) differ
between ``react`` and ``react_native``; this module holds the rest, and declares no pattern itself.
"""

from __future__ import annotations

from langchain_core.documents import Document
from langgraph.graph import END, START, StateGraph

from core.knowledge.citations import label_sources
from core.patterns.common import (
    ANSWERED,
    DIRECT_ANSWER,
    BaseState,
    answer_from_documents,
    final,
    make_contextualize,
    run_sources,
    say,
)
from core.patterns.tools import (
    AgentTool,
    ToolRun,
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
    pending: list[dict]  # the tool call(s) waiting to run
    iterations: int  # model replies so far
    parse_errors: int  # replies that were not a well-formed step (always 0 with native tool calls)
    final_answer: str
    made: list[str]  # every tool call run this turn, as "name(query)": a repeat is not run again
    repeat_noted: bool  # the agent has been told once that it repeated a call
    repeated: str  # the call(s) of a step that only repeated earlier calls after that note: the loop stops there


# the per-turn reset of the loop's fields; each flavour adds its own scratchpad
LOOP_RESET = {"pending": [], "iterations": 0, "parse_errors": 0, "final_answer": "", "made": [], "repeat_noted": False,
              "repeated": ""}


REPEAT_NOTE = ("You already made this exact call in this turn, and its result above will not change. "
               "Write the Final Answer from the observations now, or call another tool for a part of the "
               "question they do not cover yet.")


def make_tools_of(ctx: RunContext):
    """The run's tools: one retriever per source of the run (named after its collection), and the web."""

    def tools_of(state: dict) -> list[AgentTool]:
        return source_tools(run_sources(ctx, state), ctx.web_ready)

    return tools_of


def make_tools_node(ctx: RunContext, tools_of, record_step):
    """Node ``tools``: run the pending call(s); ``record_step(state, call, run)`` returns the scratchpad update.

    A call identical to one already made this turn is not run again (its result cannot change): the
    agent is told so instead. A step made only of such calls after that note sets ``repeated``, and the
    loop ends with the best answer: an agent that repeats itself twice is stuck, and more steps would
    only spend the budget. (Qwen 1.5B repeats its first search once in about half of its runs; told
    so, it can still answer or search the other half of a two-part question.)
    """

    def run_tools(state: dict) -> dict:
        tools = tools_of(state)
        docs: list[Document] = list(state.get("documents", []))
        made: list[str] = list(state.get("made") or [])
        events, update, repeats, searched = [], {}, [], []
        for call in state.get("pending", []):
            name, query = call.get("name", ""), query_of(call.get("args"))
            key = f"{name}({query})"
            if key in made:
                repeats.append(key)
                run = ToolRun(name, query, "repeated", text=REPEAT_NOTE, call_id=call.get("id", ""))
            else:
                run = run_tool(ctx, tools, call)
                searched += run.searched
                docs = merge_documents(docs, run.documents)
                events.append(observation_event("tools", state.get("iterations", 0), run))
                made.append(key)
            update = record_step({**state, **update}, call, run)
        stuck = bool(repeats) and len(repeats) == len(state.get("pending", [])) and state.get("repeat_noted", False)
        if repeats:
            events.append(event("tools", "verdict", grader="repeat_guard", target="; ".join(repeats), verdict="repeated",
                                reason="already made in this turn: not run again"
                                       + ("; repeated after being told so: the loop stops" if stuck
                                          else "; the agent is told so")))
        return {**update, "documents": docs, "pending": [], "trace": events, "made": made, "searched": searched,
                **({"repeat_noted": True} if repeats else {}), **({"repeated": "; ".join(repeats)} if stuck else {})}

    run_tools.__name__ = "tools"
    return run_tools


def counters(state: dict, settings) -> dict:
    return {"iterations": state.get("iterations", 0), "max_iterations": settings.max_iterations,
            "parse_errors": state.get("parse_errors", 0), "tool_calls": _tool_calls(state)}


def _tool_calls(state: dict) -> int:
    return len(state.get("made") or [])


def make_finish(ctx: RunContext):
    """Node: the agent's final answer, with the documents its tools returned as sources."""

    def finish(state: dict) -> dict:
        question = state["standalone_question"]
        docs = state.get("documents", [])
        answer = (state.get("final_answer") or "").strip()
        c = counters(state, ctx.settings)
        if not answer and docs:  # the model stopped without words: write the answer from what it found
            answer = answer_from_documents(ctx, question, docs)
        if not answer:
            answer = say(question, "모델이 빈 답을 돌려주었습니다.", "The model returned an empty answer.")
            return {**final(answer), **stop("finish", "error", "the agent ended with an empty reply", counters=c)}
        reason = "answered" if c["tool_calls"] else "direct_answer"
        message = (f"final answer after {c['iterations']} step(s), {c['tool_calls']} tool call(s)"
                   + (f", {c['parse_errors']} parse error(s)" if c["parse_errors"] else ""))
        return {**final(answer, docs), "sources": label_sources(docs), **stop("finish", reason, message, counters=c)}

    return finish


def make_best_answer(ctx: RunContext):
    """Node: the step limit was reached; answer from the documents gathered so far, if any."""

    def best_answer(state: dict) -> dict:
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

    return best_answer


def after_step(ctx: RunContext, next_node: str):
    """Router after a tool step or a rejection: another model step while the budget lasts (the run's
    ``max_iterations``, read when it routes) and the agent is not repeating itself."""

    def route(state: dict) -> str:
        if state.get("repeated"):
            return "best_answer"
        return next_node if state.get("iterations", 0) < ctx.settings.max_iterations else "best_answer"

    return route


def wire_react_loop(builder: StateGraph, ctx: RunContext, agent, route_after_agent, review, tools_of,
                    record_step) -> StateGraph:
    """The loop both ReAct flavours share; only the agent node and its protocol differ."""
    builder.add_node("contextualize", make_contextualize(ctx))
    builder.add_node("agent", agent)
    builder.add_node("review_tool_calls", review, destinations=("tools", "agent", "best_answer"))
    builder.add_node("tools", make_tools_node(ctx, tools_of, record_step))
    builder.add_node("finish", make_finish(ctx))
    builder.add_node("best_answer", make_best_answer(ctx))

    builder.add_edge(START, "contextualize")
    builder.add_edge("contextualize", "agent")
    builder.add_conditional_edges("agent", route_after_agent)
    builder.add_conditional_edges("tools", after_step(ctx, "agent"), ["agent", "best_answer"])
    builder.add_edge("finish", END)
    builder.add_edge("best_answer", END)
    return builder


def max_llm_calls(settings, sources: int | None = None) -> int:
    """contextualize 1 + one model reply per step (max_iterations) + the answer at the limit 1."""
    return 1 + settings.max_iterations + 1
