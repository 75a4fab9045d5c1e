"""ReAct, native tool calling: the tools go to the model's API, which may call several at once.

Same tools, same loop around the agent (``react_loop``) and same trace as the prompt-protocol flavour (``react``):
only the ``agent`` step differs. The model's reply either carries tool calls (run, then the loop
continues) or is the final answer. ``max_iterations`` bounds the model replies.
"""

from __future__ import annotations

from typing import Annotated, Literal

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from core.llm.tool_choice import ANSWER
from core.patterns import Pattern
from core.patterns.next_step import choice_event, chosen, read_step
from core.patterns.react_loop import (
    REASONS,
    RESULT_FIELDS,
    LoopState,
    after_step,
    max_llm_calls,
    react_graph,
    tools_of,
)
from core.patterns.state import per_turn
from core.patterns.tool_review import make_review_tool_calls
from core.patterns.tools import (
    action_event,
    bind_agent_tools,
    cap_calls,
    compact_tool_messages,
    final_event,
    thought_event,
    tools_event,
    with_calls,
)
from core.prompts import agents as P
from core.runtime.context import RunContext


class ReactNativeState(LoopState, total=False):
    """The tool-calling agent's exchange, on top of the shared loop's fields."""

    agent_messages: Annotated[list[AnyMessage], per_turn([], "this turn's tool-calling exchange (the conversation "
                                                             "stays in messages)")]


def agent(state: ReactNativeState, runtime: Runtime[RunContext]) -> dict:
    """Node: one model reply with the tools bound: its tool calls (at most MAX_TOOL_CALLS), or the final answer.

    The step is first read from the model's probabilities over the tools and answering (core.patterns.next_step):
    a confident reading binds that one tool (the model writes only its arguments) or none (the model answers);
    otherwise the model chooses among all the tools itself, several at once if it likes.
    """
    ctx = runtime.context
    iteration = state.get("iterations", 0) + 1
    exchange = compact_tool_messages(state.get("agent_messages", []))
    tools = tools_of(ctx, state)
    listed = [tools_event("agent", tools, ctx.web_ready)] if iteration == 1 else []
    asked = [SystemMessage(P.REACT_NATIVE_SYSTEM), HumanMessage(state["standalone_question"]), *exchange]
    outcome = read_step(ctx, state, [SystemMessage(P.REACT_NATIVE_SYSTEM + "\n\nTools:\n" + "\n".join(t.line() for t in tools)),
                              *asked[1:]], tools, after_results=bool(exchange))
    step = chosen(outcome)
    model = bind_agent_tools(ctx.llm, tools, parallel=step is None,
                             tool_choice="none" if step == ANSWER else step or "auto")
    reply = model.invoke(asked)
    text = str(reply.content or "").strip()
    calls, notes = cap_calls(reply.tool_calls, "agent") if reply.tool_calls else ([], [])
    written = ", ".join(c["name"] for c in calls) or "answer"
    choice = choice_event("agent", iteration, outcome, written if step is None else None, written)
    if not calls:
        return {"iterations": iteration, "final_answer": text, "answering": True, "pending": [],
                "trace": listed + [choice] + ([final_event("agent", text)] if text else [])}
    events = listed + ([thought_event("agent", iteration, text)] if text else []) + [choice]
    events += [action_event("agent", iteration, c) for c in calls] + notes
    return {"iterations": iteration, "pending": calls,
            "agent_messages": state.get("agent_messages", []) + [with_calls(reply, calls)], "trace": events}


def route_after_agent(state: ReactNativeState) -> Literal["review_tool_calls", "tools", "finish"]:
    """Router: the tool calls (reviewed first when asked), or the final answer."""
    if state.get("pending"):
        return "review_tool_calls" if state.get("review") else "tools"
    return "finish"  # an answer, or a reply with neither (the loop's end writes one)


def record_step(state: ReactNativeState, call: dict, run) -> dict:
    """The exchange with the tool's result as a ToolMessage answering its call."""
    result = ToolMessage(content=run.text, tool_call_id=call["id"], name=call["name"])
    return {"agent_messages": state.get("agent_messages", []) + [result]}


def reject(state: ReactNativeState, calls: list[dict], message: str) -> dict:
    """The exchange with each rejected call answered by the reviewer's refusal."""
    refusals = [ToolMessage(content=f"The reviewer rejected this call: {message}", tool_call_id=c["id"], name=c["name"])
                for c in calls]
    return {"agent_messages": state.get("agent_messages", []) + refusals}


def edit(state: ReactNativeState, calls: list[dict]) -> dict:
    """The exchange saying what actually ran: the agent's last message carries the edited calls."""
    exchange = list(state.get("agent_messages", []))
    if exchange and exchange[-1].type == "ai":  # the history says what actually ran
        exchange[-1] = with_calls(exchange[-1], calls)
    return {"agent_messages": exchange}


def build() -> StateGraph:
    """The shared ReAct loop around the tool-calling agent."""
    review = make_review_tool_calls("pending", "tools", reject, after_step, edit)
    return react_graph(ReactNativeState, agent, route_after_agent, review, record_step)


PATTERN = Pattern(
    id="react_native",
    title="ReAct agent (native tool calls)",
    description="The same agent with the tools sent through the model's tool-calling API, several calls at once.\n"
                "Same tools, same trace and the same step limit as the text-protocol ReAct: compare them.",
    order=70,
    description_ko="같은 에이전트가 모델의 도구 호출 API로 도구를 부르며, 한 번에 여러 호출을 할 수 있습니다.\n"
                   "텍스트 형식 ReAct와 도구, 추적, 단계 한도가 같으니 둘을 비교해 보세요.",
    termination_reasons=REASONS,
    build=build,
    max_llm_calls=max_llm_calls,
    answer_nodes=frozenset({"agent", "best_answer", "finish"}),
    state=ReactNativeState,
    supports_review=True,
    result_fields=RESULT_FIELDS,
)
