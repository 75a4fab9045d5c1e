"""The thresholds that turn a verdict's probability into a decision, per grader and per model.

Where a threshold comes from, later ones winning: a generic default (0.5; Corrective's band 0.3-0.7), the
shipped default of a built-in model (fitted on the built-in set with ``python -m core calibrate``), the
calibration saved for that model in the data directory (Postgres for teams), and ``RAG_GRADER_THRESHOLDS``
(``relevance=0.6,crag=0.2:0.7``: the sidebar, the CLI and a what-if fork set it for one run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# grader -> what its probability is of; "crag" has a band (lower, upper): below incorrect, above correct
GRADERS = {
    "relevance": "the document is relevant (Agentic and Self-RAG, one document a call)",
    "relevance_ratio": "not a p: a document's odds of relevance as a share of the best-graded document's for the same "
                       "question, below which it is not relevant either (0: no such rule)",
    "crag": "the document is relevant (Corrective: below the lower bound incorrect, above the upper correct)",
    "strip": "the sentence helps answer the question (Corrective's knowledge strips)",
    "grounded": "every fact of the answer is in the documents",
    "useful": "the answer answers what the question asks (Self-RAG's usefulness)",
    "retrieve": "the message needs looking up (Self-RAG's retrieve-or-not)",
    "claim": "the evidence states the sentence (the claim check)",
    "tool": "an agent's next step read from its probabilities: the chosen tool's (or answering's) share over the steps "
            "offered, below which the step the agent wrote stands",
    "kind": "the question is of the kind read (Auto): the top kind's share over the kinds of question, below which Auto "
            "takes the safest pattern of the kinds that came close",
}
BAND_GRADERS = {"crag"}
GENERIC: dict[str, float | tuple[float, float]] = ({name: 0.5 for name in GRADERS}
                                                   | {"crag": (0.3, 0.7), "relevance_ratio": 0.0})

# fitted on the built-in set's labelled pairs (python -m core calibrate --no-save; docs/BENCHMARKS.md, session
# 19; Corrective's band refitted in sessions 20-21 with issue #32's allowance, 2 of 28; relevance's floor and
# ratio in session 22, with that allowance, from session 19's pairs), keyed by model name;
# graders not listed keep the generic value until calibrated. useful is fitted on written answers instead
# (benchmarks/usefulness_labelled.jsonl, 16 useful and 16 not; probe_decisions --decisions useful; session 27):
# calibration's own pairs give it a chunk's sentence as the answer, easier than a written one. Not shipped:
# grounded (the same reason), and anything for Gemma 3 270M (its p ranks no grader's pairs: AUC 0.25-0.65)
SHIPPED: dict[str, dict[str, float | tuple[float, float]]] = {
    "qwen2.5-coder-1.5b-instruct": {"relevance": 0.5208, "relevance_ratio": 0.521, "crag": (0.5775, 0.6672),
                                    "strip": 0.2, "retrieve": 0.41, "useful": 0.55},
}


@dataclass(frozen=True)
class Thresholds:
    """The thresholds one run uses, and where each came from (shown in the sidebar and the trace)."""

    model: str = ""
    values: dict = field(default_factory=lambda: dict(GENERIC))
    sources: dict = field(default_factory=lambda: dict.fromkeys(GENERIC, "default"))

    def cut(self, grader: str) -> float:
        value = self.values.get(grader, GENERIC[grader])
        return float(value[0] if isinstance(value, (tuple, list)) else value)

    def band(self, grader: str = "crag") -> tuple[float, float]:
        value = self.values.get(grader, GENERIC[grader])
        if isinstance(value, (tuple, list)):
            return float(value[0]), float(value[1])
        return float(value), float(value)

    def shown(self, grader: str) -> float | list[float]:
        """The threshold as the trace and ``grade --json`` give it: a number, or [lower, upper]."""
        return list(self.band(grader)) if grader in BAND_GRADERS else round(self.cut(grader), 3)

    def relevance_cut(self, best: float) -> float:
        """The relevance threshold for one question's documents, the best of which was graded ``best``: the
        ``relevance`` floor, or where a document's odds fall to ``relevance_ratio`` of the best one's, if higher.

        Why relative: a small model's p shifts with the collection and the language (Qwen2.5 1.5B's relevant
        FAQ answers sat below the cut fitted on the Korean samples), while how far a document falls below the
        question's best one ranks documents the same way on both (docs/BENCHMARKS.md, session 22).
        """
        floor, ratio = self.cut("relevance"), self.cut("relevance_ratio")
        if ratio <= 0:
            return floor
        best = min(max(best, 1e-6), 1 - 1e-6)
        odds = ratio * best / (1 - best)
        return max(floor, odds / (1 + odds))


def parse_overrides(text: str) -> dict[str, float | tuple[float, float]]:
    """``relevance=0.6, crag=0.2:0.7`` → values; raises ValueError with one clear line on anything else."""
    values: dict[str, float | tuple[float, float]] = {}
    for part in filter(None, (p.strip() for p in re.split(r"[,;\s]+", text or ""))):
        name, sep, raw = part.partition("=")
        if not sep or name not in GRADERS:
            raise ValueError(f"unknown grader threshold {part!r}: use NAME=P with NAME one of {', '.join(GRADERS)}")
        values[name] = _parse_value(name, raw)
    return values


def _parse_value(name: str, raw: str) -> float | tuple[float, float]:
    try:
        numbers = [float(x) for x in raw.split(":")]
    except ValueError:
        raise ValueError(f"threshold {name}={raw!r} is not a number between 0 and 1") from None
    if any(not 0.0 <= x <= 1.0 for x in numbers) or len(numbers) > (2 if name in BAND_GRADERS else 1):
        raise ValueError(f"threshold {name}={raw!r}: give "
                         + ("LOWER:UPPER (0 to 1)" if name in BAND_GRADERS else "one number between 0 and 1"))
    if name in BAND_GRADERS:
        lower, upper = (numbers * 2)[:2]
        if lower > upper:
            raise ValueError(f"threshold {name}={raw!r}: the lower bound is above the upper one")
        return lower, upper
    return numbers[0]


def thresholds_for(settings, model: str) -> Thresholds:
    """Generic defaults, then the shipped ones for the model, its saved calibration, then the settings."""
    values, sources = dict(GENERIC), dict.fromkeys(GENERIC, "default")
    layers = [("shipped", SHIPPED.get(model, {})), ("calibrated", saved_calibration(settings, model).get("thresholds", {})),
              ("settings", parse_overrides(getattr(settings, "grader_thresholds", "") or ""))]
    for source, layer in layers:
        for name, value in layer.items():
            if name in GRADERS:
                values[name] = tuple(value) if isinstance(value, list) else value
                sources[name] = source
    return Thresholds(model, values, sources)


def saved_calibration(settings, model: str) -> dict:
    """The calibration record saved for a model ({} when none, or when the store cannot be read)."""
    if settings is None or not model:
        return {}
    from core.store import calibrations

    try:
        return calibrations.load(settings, model) or {}
    except Exception:  # a database that is down must not stop a run here: the shipped thresholds hold
        return {}


def model_key(model) -> str:
    """The name a chat model's thresholds are saved under."""
    return str(getattr(model, "model_name", "") or getattr(model, "model", "") or "")
