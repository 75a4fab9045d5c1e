"""ReAct, prompt protocol: Thought / Action / Action Input / Observation as plain text.

The tools are listed in the system prompt and the model's free text is parsed; a reply that does
not follow the format is fed back as the Observation and counted. Every model reply counts as one
step; at ``max_iterations`` steps the run ends with the best answer the gathered documents allow.
The native tool-calling flavour (``react_native``) shares the tools, the nodes around the loop and
the trace shape, so the two can be compared question by question.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph

from core.knowledge.citations import label_sources
from core.patterns import Pattern
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
from core.patterns.tool_review import make_review_tool_calls
from core.patterns.tools import (
    AgentTool,
    ToolRun,
    action_event,
    final_event,
    merge_documents,
    new_call,
    observation_event,
    query_of,
    run_tool,
    short,
    source_tools,
    thought_event,
    tools_event,
)
from core.prompts import agents as P
from core.prompts import language_name
from core.runtime.context import RunContext
from core.runtime.trace import ERROR, Reason, event, stop

MAX_ITERATIONS = Reason("max_iterations", "iteration limit reached", "반복 한도 도달", "budget")
REPEATED_ACTION = Reason("repeated_action", "the agent repeated a tool call again after being told it had already made it",
                         "에이전트가 이미 한 도구 호출이라는 알림을 받고도 또 반복함", "budget")

RECENT_OBSERVATIONS = 2  # shown whole; older ones are shortened to keep a small model's context small


class ReactState(BaseState, total=False):
    steps: list[dict]  # scratchpad: {thought, action, input, observation} or {raw, error}
    pending: list[dict]  # the tool call waiting to run
    pending_thought: str
    iterations: int  # model replies so far
    parse_errors: int
    final_answer: str
    made: list[str]  # every tool call run this turn, as "name(query)": a repeat is not run again
    repeat_noted: bool  # the agent has been told once that it repeated a call
    repeated: str  # the call(s) of a step that only repeated earlier calls after that note: the loop stops there


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
                HumanMessage(f"Question: {question}")]
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


# ---------------------------------------------------------------- nodes both flavours share


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


def after_step(settings, next_node: str):
    """Router after a tool step or a rejection: another model step while the budget lasts and the agent
    is not repeating itself."""

    def route(state: dict) -> str:
        if state.get("repeated"):
            return "best_answer"
        return next_node if state.get("iterations", 0) < settings.max_iterations else "best_answer"

    return route


# ---------------------------------------------------------------- the text-protocol graph


def build(ctx: RunContext) -> StateGraph:
    s = ctx.settings
    tools_of = make_tools_of(ctx)

    def agent(state: ReactState) -> dict:
        iteration = state.get("iterations", 0) + 1
        tools = tools_of(state)
        reply = ctx.llm.invoke(step_messages(state["standalone_question"], tools, state.get("steps", [])),
                               stop=STOP)
        listed = [tools_event("agent", tools, ctx.web_ready)] if iteration == 1 else []
        text = str(reply.content).strip()
        step = parse_step(text)
        if "error" in step:  # the whole reply goes to the trace with the error, not as a thought
            errors = state.get("parse_errors", 0) + 1
            events = listed + [event("agent", "error", grader="react_parser", step="parse_error", target="format",
                                verdict=f"parse error {errors}", reason=f"{step['error']}; reply: {short(text, 160)}",
                                counters={**counters(state, s), "iterations": iteration, "parse_errors": errors})]
            return {"iterations": iteration, "parse_errors": errors, "pending": [], "trace": events,
                    "steps": state.get("steps", []) + [{"raw": text[:600], "error": step["error"]}]}
        events = listed + ([thought_event("agent", iteration, step["thought"])] if step.get("thought") else [])
        if "final" in step:
            return {"iterations": iteration, "final_answer": step["final"], "pending": [],
                    "trace": events + [final_event("agent", step["final"])]}
        call = new_call(resolve_tool_name(step["action"], tools), step["input"])
        return {"iterations": iteration, "pending": [call], "pending_thought": step["thought"],
                "trace": events + [action_event("agent", iteration, call)]}

    def route_after_agent(state: ReactState) -> Literal["review_tool_calls", "tools", "finish", "agent", "best_answer"]:
        if state.get("final_answer"):
            return "finish"
        if state.get("pending"):
            return "review_tool_calls" if state.get("review") else "tools"
        return after_step(s, "agent")(state)  # a parse error: try again while the budget lasts

    def record_step(state: ReactState, call: dict, run) -> dict:
        step = {"thought": state.get("pending_thought", ""), "action": call["name"],
                "input": query_of(call.get("args")), "observation": run.text}
        return {"steps": state.get("steps", []) + [step], "pending_thought": ""}

    def reject(state: ReactState, calls: list[dict], message: str) -> dict:
        steps = state.get("steps", []) + [{"thought": state.get("pending_thought", ""), "action": c["name"],
                                            "input": query_of(c.get("args")),
                                            "observation": f"The reviewer rejected this action: {message}"} for c in calls]
        return {"steps": steps, "pending_thought": ""}

    review = make_review_tool_calls("pending", "tools", reject, after_step(s, "agent"))
    return wire_react_loop(StateGraph(ReactState), ctx, agent, route_after_agent, review, tools_of, record_step)


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
    builder.add_conditional_edges("tools", after_step(ctx.settings, "agent"), ["agent", "best_answer"])
    builder.add_edge("finish", END)
    builder.add_edge("best_answer", END)
    return builder


def max_llm_calls(settings, sources: int | None = None) -> int:
    """contextualize 1 + one model reply per step (max_iterations) + the answer at the limit 1."""
    return 1 + settings.max_iterations + 1


PATTERN = Pattern(
    id="react",
    title="ReAct agent (text protocol)",
    description="Thought / Action / Observation written as text, with one search tool per collection and the web.\n"
                "Format errors are fed back and counted; the step limit ends with the best answer so far.",
    order=60,
    description_ko="컬렉션마다 검색 도구 하나와 웹 검색을 두고 Thought / Action / Observation을 텍스트로 씁니다.\n"
                   "형식 오류는 되돌려 주고 세며, 단계 한도에 이르면 그때까지의 가장 나은 답으로 끝냅니다.",
    termination_reasons=(ANSWERED, DIRECT_ANSWER, MAX_ITERATIONS, REPEATED_ACTION, ERROR),
    build=build,
    max_llm_calls=max_llm_calls,
    answer_nodes=frozenset({"best_answer", "finish"}),
    reset={"steps": [], "pending": [], "pending_thought": "", "iterations": 0, "parse_errors": 0, "final_answer": "",
           "made": [], "repeat_noted": False, "repeated": ""},
    supports_review=True,
    result_fields=("iterations", "parse_errors"),  # the evaluation's step parse rate
)
