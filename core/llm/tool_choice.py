"""An agent's next step read from the model's probabilities: one of the tools offered, or answering.

The same mechanism as the graders' verdicts (core.llm.verdicts): the step's name is asked for in one word
after the agent's own prompt, and the probability of each name is read where the names part
(core.llm.choice_reading), renormalised over them. The top step decides when its share reaches the ``tool``
threshold; below it, or where the provider gives no probabilities, the step the agent wrote stands. Only the
choice is read: the search query is still written by the model.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import BaseModel

from core.llm.graders import PARSE_ERRORS, Outcome, default_thresholds
from core.llm.thresholds import Thresholds
from core.llm.verdicts import read_verdict
from core.prompts import agents as P

ANSWER = "answer"


class NextStep(BaseModel):
    """The step read: a tool's name or ``answer``; ``confident`` when its share reached the threshold."""

    step: str
    confident: bool


def read_next_step(model, messages: list[BaseMessage], tools: list[str], after_results: bool,
                   thresholds: Thresholds | None = None) -> Outcome[NextStep] | None:
    """The next step's probabilities over ``tools`` and answering; None where the model gives none."""
    words = list(dict.fromkeys(tools)) + [ANSWER]
    task = P.TOOL_CHOICE_TASK.format(names=", ".join(tools),
                                     answer_when=P.ANSWER_FROM_RESULTS if after_results else P.ANSWER_AT_ONCE)
    try:
        reading = read_verdict(model, [*messages, HumanMessage(task)], words)
    except PARSE_ERRORS:
        reading = None
    if reading is None:
        return None
    cut = (thresholds or default_thresholds(model)).cut("tool")
    top = max(words, key=reading.p)
    return Outcome(NextStep(step=top, confident=reading.p(top) >= cut), p=reading.p(top), threshold=round(cut, 3),
                   method="probability", choices=dict(reading.probabilities))

