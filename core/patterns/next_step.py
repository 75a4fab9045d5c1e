"""How an agent's next step is settled: the step read from the model's probabilities, and what it wrote.

The agents' choice of tool (ReAct's Action, the native loop's call, Agentic's retrieve-or-answer) is read
with ``core.llm.tool_choice``. Where the reading is confident its step is taken, with what the agent wrote
that still fits it (the search query of any Action it wrote, else the question); otherwise the written
step stands. The trace says which way it went, with p per step and the threshold.
"""

from __future__ import annotations

from core.knowledge.korean_tokens import tokens
from core.llm.tool_choice import ANSWER, read_first_step, read_next_step
from core.patterns.common import run_sources
from core.patterns.tools import AgentTool, short
from core.runtime.context import RunContext
from core.runtime.trace import event


def read_step(ctx: RunContext, state: dict, messages: list, tools: list[AgentTool], after_results: bool):
    """The next step read from the grader model's probabilities over ``tools`` and answering (None: not read).

    ``messages``: the agent's prompt, its tools listed in it; the first step is also asked of a router
    (core.llm.tool_choice).
    """
    if not tools:
        return None
    if after_results:
        return read_next_step(ctx.grader, messages, [t.name for t in tools], True, ctx.thresholds)
    return read_first_step(ctx.grader, messages, {t.name: t.line() for t in tools}, state["standalone_question"],
                           run_sources(ctx, state), ctx.thresholds)


def chosen(outcome) -> str | None:
    """The step the reading decides (a tool's name or ``answer``), or None where the written step stands."""
    return outcome.value.step if outcome is not None and outcome.value.confident else None


def settle_text_step(written: dict, outcome, question: str) -> dict:
    """The text-protocol step to take: the written one, or the read choice with the parts of it that fit.

    A read ``answer`` keeps a written Final Answer, or leaves it empty (the loop's end writes one from the
    documents found, or answers directly where there are none). A read tool takes the written Action Input where
    it was written for that tool or shares a word with the question (one written for another tool searches the
    question instead). A written Final Answer does not stand against a read tool: Qwen 1.5B writes "I now know the
    final answer" after nearly every observation, and where its first query missed (a Korean name searched in
    English), the reading that sent it back with the question found the answer (docs/BENCHMARKS.md, session 29).
    """
    step = chosen(outcome)
    if step is None or "error" in written:
        return written
    thought = written.get("thought", "")
    if step == ANSWER:
        return written if "final" in written else {"thought": thought, "final": ""}
    if written.get("action") == step:
        return written
    query = written.get("input") or ""
    if written.get("action") and not set(tokens(query)) & set(tokens(question)):
        query = ""  # the query of the tool the agent named (its topics, say), not of this one
    return {"thought": thought, "action": step, "input": query or " ".join(question.split())}


def choice_event(node: str, iteration: int, outcome, written: str | None, taken: str | None) -> dict:
    """The trace event of a step choice: what was read (p per step), what was written, what was taken."""
    if outcome is None:
        return event(node, "route", grader="tool_choice", step="choice", target=taken or "?", verdict=taken or "?",
                     method="text", iteration=iteration,
                     reason="the provider gives no probabilities: the step the agent wrote stands")
    read, was = outcome.value.step, short(written, 60) if written else "-"
    reading = outcome.reading() + (f" ({outcome.value.why})" if outcome.value.why else "")
    shown = ", ".join(f"{name} {p:.2f}" for name, p in sorted(outcome.choices.items(), key=lambda kv: -kv[1]))
    if not outcome.value.confident:
        why = f"{read} {reading}: not sure enough, the step the agent wrote stands ({was}); {shown}"
    elif written and written != read:
        why = f"read from probabilities: {read} {reading} (the agent wrote {was}); {shown}"
    else:
        why = f"read from probabilities: {read} {reading}; {shown}"
    return event(node, "route", grader="tool_choice", step="choice", target=taken or read, verdict=taken or read,
                 iteration=iteration, reason=why, **outcome.trace_fields())
