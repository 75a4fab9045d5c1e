"""An agent's next step read from the model's probabilities: one of the tools offered, or answering.

The same mechanism as the graders' verdicts (core.llm.verdicts): a step's name is asked for in one word and
the probability of each name is read where the names part (core.llm.choice_reading), renormalised over them.

- The first step asks two things, as Self-RAG and Adaptive do: whether the message needs looking up at all
  (``needs_retrieval``, against its calibrated ``retrieve`` threshold), and which tool, read after the agent's own
  prompt and after a router's prompt (the tools and the question alone), the two readings multiplied.
- A later step is read after the agent's prompt with its results, over the tools and answering.

The top step decides when its share reaches the ``tool`` threshold; below it, or where the provider gives no
probabilities, the step the agent wrote stands. Only the choice is read: the search query is still written.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from core.llm.graders import PARSE_ERRORS, Outcome, default_thresholds, needs_retrieval
from core.llm.thresholds import Thresholds
from core.llm.verdicts import Reading, read_verdict, supports_probabilities
from core.prompts import agents as P

ANSWER = "answer"


class NextStep(BaseModel):
    """The step read: a tool's name or ``answer``; ``confident`` when its share reached its threshold."""

    step: str
    confident: bool
    why: str = ""  # how it was read, for the trace


def _read(model, messages: list[BaseMessage], words: list[str]) -> Reading | None:
    try:
        return read_verdict(model, messages, words)
    except PARSE_ERRORS:
        return None


def _pooled(readings: list[Reading], words: list[str]) -> dict[str, float] | None:
    """Independent readings of one choice combined: their probabilities multiplied, renormalised."""
    product = {w: 1.0 for w in words}
    for reading in readings:
        for w in words:
            product[w] *= reading.p(w)
    total = sum(product.values())
    return {w: v / total for w, v in product.items()} if total > 0 else None


def _task(tools: list[str], after_results: bool) -> HumanMessage:
    return HumanMessage(P.TOOL_CHOICE_TASK.format(
        names=", ".join(tools), answer_when=P.ANSWER_FROM_RESULTS if after_results else P.ANSWER_AT_ONCE))


def read_next_step(model, messages: list[BaseMessage], tools: list[str], after_results: bool,
                   thresholds: Thresholds | None = None) -> Outcome[NextStep] | None:
    """The next step's probabilities over ``tools`` and answering, after the agent's ``messages``."""
    words = list(dict.fromkeys(tools)) + [ANSWER]
    reading = _read(model, [*messages, _task(tools, after_results)], words)
    if reading is None:
        return None
    cut = (thresholds or default_thresholds(model)).cut("tool")
    top = max(words, key=reading.p)
    return Outcome(NextStep(step=top, confident=reading.p(top) >= cut), p=reading.p(top), threshold=round(cut, 3),
                   method="probability", choices=dict(reading.probabilities))


def read_first_step(model, messages: list[BaseMessage], tool_lines: dict[str, str], question: str, sources: list,
                    thresholds: Thresholds | None = None) -> Outcome[NextStep] | None:
    """The first step: answer at once where the message needs no looking up, else the tool both readings favour.

    ``tool_lines``: each tool's name and how the agent's prompt lists it. ``choices`` gives p of every step read:
    answering 1 - p(lookup), and each tool p(lookup) times its pooled share (or, answering, p(lookup) alone).
    """
    if not supports_probabilities(model):  # needs_retrieval would ask for a written verdict instead
        return None
    thresholds = thresholds or default_thresholds(model)
    need = needs_retrieval(model, question, sources, thresholds)
    if need.method != "probability":
        return None
    names = list(tool_lines)
    p_lookup = float(need.p)
    if need.value.retrieve == "no" or not names:
        cut = need.threshold
        return Outcome(NextStep(step=ANSWER, confident=True, why=f"lookup {p_lookup:.2f} < {cut:.2f}"), p=1 - p_lookup,
                       threshold=round(1 - cut, 3), method="probability",
                       choices={ANSWER: 1 - p_lookup, "lookup": p_lookup})
    cut = thresholds.cut("tool")
    why = f"lookup {p_lookup:.2f} ≥ {need.threshold:.2f}"
    if len(names) == 1:  # one tool: looking up is calling it
        return Outcome(NextStep(step=names[0], confident=True, why=why), p=p_lookup, threshold=need.threshold,
                       method="probability", choices={ANSWER: 1 - p_lookup, names[0]: p_lookup})
    router = SystemMessage(P.TOOL_ROUTER_SYSTEM.format(tools="\n".join(f"- {line}" for line in tool_lines.values())))
    readings = [_read(model, [*messages, _task(names, False)], [*names, ANSWER]),
                _read(model, [router, HumanMessage(f"Question: {question}")], names)]
    pooled = _pooled([r for r in readings if r is not None], names) if any(readings) else None
    if pooled is None:
        return None
    top = max(names, key=pooled.get)
    return Outcome(NextStep(step=top, confident=pooled[top] >= cut, why=why),
                   p=pooled[top], threshold=round(cut, 3), method="probability",
                   choices={ANSWER: 1 - p_lookup} | {n: p_lookup * pooled[n] for n in names})
