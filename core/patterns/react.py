"""ReAct, prompt protocol: Thought / Action / Action Input / Observation as plain text.

The tools are listed in the system prompt and the model's free text is parsed; a reply that does
not follow the format is fed back as the Observation and counted. Every model reply counts as one
step; at ``max_iterations`` steps the run ends with the best answer the gathered documents allow.
The native tool-calling flavour (``react_native``) shares the tools, the loop around the agent
(``react_loop``) and the trace shape, so the two can be compared question by question.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Literal

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import StateGraph
from langgraph.runtime import Runtime

from core.patterns import Pattern
from core.patterns.next_step import choice_event, read_step, settle_text_step
from core.patterns.react_loop import (
    REASONS,
    RESULT_FIELDS,
    LoopState,
    after_step,
    counters,
    max_llm_calls,
    react_graph,
    tools_of,
)
from core.patterns.state import per_turn
from core.patterns.tool_review import make_review_tool_calls
from core.patterns.tools import (
    AgentTool,
    action_event,
    final_event,
    new_call,
    query_of,
    short,
    thought_event,
    tools_event,
)
from core.prompts import agents as P
from core.prompts import answer_request, language_name
from core.runtime.context import RunContext
from core.runtime.trace import event

RECENT_OBSERVATIONS = 2  # shown whole; older ones are shortened to keep a small model's context small


class ReactState(LoopState, total=False):
    """The text-protocol agent's scratchpad, on top of the shared loop's fields."""

    steps: Annotated[list[dict], per_turn([], "scratchpad: {thought, action, input, observation} or {raw, error}")]
    pending_thought: Annotated[str, per_turn("", "the thought of the step whose tool call waits to run")]


# ---------------------------------------------------------------- the text protocol

_OBSERVATION = re.compile(r"\n\s*Observation\s*:", re.IGNORECASE)
_ACTION = re.compile(r"Action\s*:\s*(?P<name>[^\n]*)\n+\s*Action\s*Input\s*:\s*(?P<input>.*)", re.IGNORECASE | re.DOTALL)
_FINAL = re.compile(r"Final\s*Answer\s*:\s*(?P<answer>.*)", re.IGNORECASE | re.DOTALL)
_THOUGHT = re.compile(r"^\s*Thought\s*:\s*", re.IGNORECASE)


def _action_input(raw: str) -> str:
    lines = [line for line in raw.strip().splitlines() if line.strip()]
    text = lines[0].strip() if lines else ""
    if text.startswith("{"):
        try:
            return query_of(json.loads(text))
        except json.JSONDecodeError:
            pass
    return text.strip("`'\" ")


def parse_step(text: str) -> dict:
    """One reply -> {thought, action, input} | {thought, final} | {thought, error}."""
    text = str(text or "").strip()
    cut = _OBSERVATION.search(text)
    if cut:  # the model wrote an Observation itself: everything from there on is invented
        text = text[: cut.start()]
    action, final_ = _ACTION.search(text), _FINAL.search(text)
    first = min((m.start() for m in (action, final_) if m), default=len(text))
    thought = _THOUGHT.sub("", text[:first]).strip()
    if action and (not final_ or action.start() < final_.start()):
        name = action["name"].strip().strip("`'\"[]() ")
        query = _action_input(action["input"])
        if not name:
            return {"thought": thought, "error": "the Action line names no tool"}
        if not query:
            return {"thought": thought, "error": "the Action Input is empty"}
        return {"thought": thought, "action": name, "input": query}
    if final_:
        answer = final_["answer"].strip()
        return {"thought": thought, "final": answer} if answer else {"thought": thought, "error": "the Final Answer is empty"}
    if not text:
        return {"thought": "", "error": "the reply is empty"}
    if re.search(r"Action\s*:", text, re.IGNORECASE):
        return {"thought": thought, "error": "'Action:' is not followed by an 'Action Input:' line"}
    return {"thought": thought, "error": "neither 'Action:' with 'Action Input:' nor 'Final Answer:' was found"}


def resolve_tool_name(name: str, tools: list[AgentTool]) -> str:
    """The tool an Action line means: its exact name, the one tool name written inside it, or else the
    one tool whose collection's display name is written inside it.

    Small models wrap the name in words ("Use restaurant_menu", "the `usa_ict` tool"), copying the
    format's "Action: the tool to use", or write the collection's display name instead ("wine list",
    "Use the Japan ICT policy report"); a line naming two tools is left as written (an error observation).
    """
    names = [t.name for t in tools]
    if name in names:
        return name
    found = [n for n in names if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", name, re.IGNORECASE)]
    if found:
        return found[0] if len(found) == 1 else name
    by_alias = {t.name for t in tools for alias in t.aliases if alias.casefold() in name.casefold()}
    return by_alias.pop() if len(by_alias) == 1 else name


STOP = ["\nObservation:"]  # the model must not write the tool's result itself


def step_messages(question: str, tools: list[AgentTool], steps: list[dict]) -> list:
    """One step's whole prompt: the protocol listing the tools, the question, and the steps so far."""
    names = ", ".join(t.name for t in tools)
    language = language_name(question)
    messages = [SystemMessage(P.REACT_SYSTEM.format(tools="\n".join(t.line() for t in tools), tool_names=names,
                                                    language=language)),
                # with the answer note every other pattern's answer turn ends with (each figure with its item, every
                # item the question matches): told after an Observation only, Qwen answered the steak question with
                # one bare price; told here, it listed the three steaks (docs/BENCHMARKS.md, session 16)
                HumanMessage(f"Question: {answer_request(question)}")]
    after = P.REACT_NEXT.format(language=language)
    for i, step in enumerate(steps):
        if "error" in step:
            messages += [AIMessage(step.get("raw") or "(empty reply)"),
                         HumanMessage("Observation: " + P.REACT_FORMAT_ERROR.format(error=step["error"], tool_names=names))]
            continue
        observation = step["observation"] if i >= len(steps) - RECENT_OBSERVATIONS else short(step["observation"], 300)
        messages += [AIMessage(f"Thought: {step['thought'] or '-'}\nAction: {step['action']}\nAction Input: {step['input']}"),
                     HumanMessage(f"Observation: {observation}\n\n{after}")]
    return messages


# ---------------------------------------------------------------- the text-protocol graph


def agent(state: ReactState, runtime: Runtime[RunContext]) -> dict:
    """Node: one model reply in the text protocol, parsed into a tool call, a final answer or a format error.

    The step's choice (which tool, or the answer) is then read from the model's probabilities after the same
    prompt (core.patterns.next_step); a confident reading decides it, the written Action Input is kept.
    """
    ctx = runtime.context
    iteration = state.get("iterations", 0) + 1
    tools = tools_of(ctx, state)
    question = state["standalone_question"]
    messages = step_messages(question, tools, state.get("steps", []))
    reply = ctx.llm.invoke(messages, stop=STOP)
    listed = [tools_event("agent", tools, ctx.web_ready)] if iteration == 1 else []
    text = str(reply.content).strip()
    step = parse_step(text)
    if "error" in step:  # the whole reply goes to the trace with the error, not as a thought
        errors = state.get("parse_errors", 0) + 1
        events = listed + [event("agent", "error", grader="react_parser", step="parse_error", target="format",
                            verdict=f"parse error {errors}", reason=f"{step['error']}; reply: {short(text, 160)}",
                            counters={**counters(state, ctx.settings), "iterations": iteration, "parse_errors": errors})]
        return {"iterations": iteration, "parse_errors": errors, "pending": [], "trace": events,
                "steps": state.get("steps", []) + [{"raw": text[:600], "error": step["error"]}]}
    if "action" in step:
        step["action"] = resolve_tool_name(step["action"], tools)
    written = "answer" if "final" in step else step["action"]
    outcome = read_step(ctx, state, messages, tools, after_results=bool(state.get("steps")))
    step = settle_text_step(step, outcome, question)
    taken = "answer" if "final" in step else step["action"]
    events = listed + ([thought_event("agent", iteration, step["thought"])] if step.get("thought") else [])
    events.append(choice_event("agent", iteration, outcome, written, taken))
    if "final" in step:
        return {"iterations": iteration, "final_answer": step["final"], "answering": True, "pending": [],
                "trace": events + ([final_event("agent", step["final"])] if step["final"] else [])}
    call = new_call(step["action"], step["input"])
    return {"iterations": iteration, "pending": [call], "pending_thought": step["thought"],
            "trace": events + [action_event("agent", iteration, call)]}


def route_after_agent(state: ReactState, runtime: Runtime[RunContext]
                      ) -> Literal["review_tool_calls", "tools", "finish", "agent", "best_answer"]:
    """Router: the answer, the tool call (reviewed first when asked), or after a parse error another step."""
    if state.get("final_answer") or state.get("answering"):
        return "finish"
    if state.get("pending"):
        return "review_tool_calls" if state.get("review") else "tools"
    return after_step(state, runtime)  # a parse error: try again while the budget lasts


def record_step(state: ReactState, call: dict, run) -> dict:
    """The scratchpad with the step that ran: its thought, action, input and observation."""
    step = {"thought": state.get("pending_thought", ""), "action": call["name"],
            "input": run.query if run.written else query_of(call.get("args")), "observation": run.text}
    return {"steps": state.get("steps", []) + [step], "pending_thought": ""}


def reject(state: ReactState, calls: list[dict], message: str) -> dict:
    """The scratchpad with the rejected calls, each observed as the reviewer's refusal."""
    steps = state.get("steps", []) + [{"thought": state.get("pending_thought", ""), "action": c["name"],
                                        "input": query_of(c.get("args")),
                                        "observation": f"The reviewer rejected this action: {message}"} for c in calls]
    return {"steps": steps, "pending_thought": ""}


def build() -> StateGraph:
    """The shared ReAct loop around the text-protocol agent."""
    review = make_review_tool_calls("pending", "tools", reject, after_step)
    return react_graph(ReactState, agent, route_after_agent, review, record_step)


PATTERN = Pattern(
    id="react",
    title="ReAct agent (text protocol)",
    description="Thought / Action / Observation written as text, with one search tool per collection and the web.\n"
                "Format errors are fed back and counted; the step limit ends with the best answer so far.",
    order=60,
    description_ko="컬렉션마다 검색 도구 하나와 웹 검색을 두고 Thought / Action / Observation을 텍스트로 씁니다.\n"
                   "형식 오류는 되돌려 주고 세며, 단계 한도에 이르면 그때까지의 가장 나은 답으로 끝냅니다.",
    termination_reasons=REASONS,
    build=build,
    max_llm_calls=max_llm_calls,
    answer_nodes=frozenset({"best_answer", "finish"}),
    state=ReactState,
    supports_review=True,
    result_fields=RESULT_FIELDS,
)
