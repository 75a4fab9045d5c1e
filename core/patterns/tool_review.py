"""Human approval of an agent's tool calls: the review node both ReAct flavours share."""

from __future__ import annotations

from collections.abc import Callable

from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from core.patterns.tools import new_call, query_of, short
from core.runtime.context import RunContext
from core.runtime.review import normalise_decision, tool_approval
from core.runtime.trace import event


def edited_calls(pending: list[dict], decision: dict) -> list[dict]:
    """The calls an ``edit`` decision asks for: explicit tool calls, or a new query for every call."""
    if decision.get("tool_calls"):
        out = []
        for call in decision["tool_calls"]:
            args = call.get("args") if isinstance(call.get("args"), dict) else {"query": query_of(call.get("args"))}
            out.append({"name": str(call.get("name", "")), "args": args,
                        "id": call.get("id") or new_call("", "", "edited")["id"], "type": "tool_call"})
        return out
    query = " ".join(str(decision.get("question", "")).split())
    return [dict(c, args={**(c.get("args") or {}), "query": query}) for c in pending]


def make_review_tool_calls(pending_key: str, act_node: str,
                           on_reject: Callable[[dict, list[dict], str], dict],
                           after_reject: Callable[[dict, Runtime[RunContext]], str],
                           on_edit: Callable[[dict, list[dict]], dict] | None = None):
    """Node: pause before tools run; approve runs them, edit runs the edited calls, reject tells the agent.

    ``on_reject(state, calls, message)`` returns the state update that feeds the refusal back to the
    agent; ``after_reject(state, runtime)`` names the node to continue at (the agent, or the end of its budget);
    ``on_edit(state, calls)`` may rewrite what the agent's history says it asked for.
    """

    def review_tool_calls(state: dict, runtime: Runtime[RunContext]) -> Command:
        calls = state.get(pending_key) or []
        decision = normalise_decision(interrupt(tool_approval("review_tool_calls", state["standalone_question"], calls)),
                                      "tool_approval")
        action = decision["action"]
        if action == "approve":
            note = event("review_tool_calls", "interrupt", verdict="approve", target="tool calls",
                         reason=f"approved {len(calls)} call(s)")
            return Command(goto=act_node, update={"trace": [note]})
        if action == "edit":
            edited = edited_calls(calls, decision)
            note = event("review_tool_calls", "interrupt", verdict="edit", target="tool calls",
                         reason="edited to: " + "; ".join(f"{c['name']}({short(query_of(c['args']), 80)})" for c in edited))
            extra = on_edit(state, edited) if on_edit else {}
            return Command(goto=act_node, update={**extra, pending_key: edited, "trace": [note]})
        message = decision.get("message") or "no reason given"
        note = event("review_tool_calls", "interrupt", verdict="reject", target="tool calls",
                     reason=f"rejected by the reviewer: {message}")
        update = on_reject(state, calls, message)
        update["trace"] = [note] + list(update.get("trace") or [])
        return Command(goto=after_reject({**state, **update}, runtime), update={**update, pending_key: []})

    return review_tool_calls


