"""The claim check of a finished run: its answer against the documents it was written from.

Every pattern's answer goes through the same checker (core.llm.claims) after its graph ends, with
the run's sources as evidence (web results included). The check's cost is its own ("verification"),
kept apart from the pattern's calls, tokens and milliseconds, and recorded as one trace entry.
"""

from __future__ import annotations

from core.config import Settings
from core.llm.claims.check import claim_mode, verify_answer
from core.patterns import reason_outcome
from core.runtime.trace import event

# runs that stopped without an answer written from documents: nothing to check a sentence against
UNCHECKED_OUTCOMES = frozenset({"direct", "rejected", "error", "stopped", ""})


def should_verify(result: dict, settings: Settings) -> bool:
    """A finished run with an answer and documents, and checking not switched off."""
    return (claim_mode(settings) != "off" and bool(result.get("answer")) and bool(result.get("sources"))
            and not result.get("error") and not result.get("interrupted")
            and reason_outcome(result.get("termination_reason", "")) not in UNCHECKED_OUTCOMES)


def verify_run(result: dict, settings: Settings, model=None) -> dict:
    """``claims``, ``claim_support`` and ``verification`` (its cost) for the run's answer, and its trace entry.

    A provider that fails here leaves every claim unchecked (the checker says why); the run stands.
    """
    checked = verify_answer(settings, result["answer"], result.get("sources") or [],
                            question=result.get("standalone_question") or result.get("question") or "", model=model)
    cost = {**checked["cost"], "mode": checked["mode"]}
    return {"claims": checked["claims"], "claim_support": checked["claim_support"],
            "verification": {**cost, "note": checked["note"], "error": checked["error"]},
            "trace": list(result.get("trace") or []) + [trace_event(checked)]}


def trace_event(result: dict) -> dict:
    """The "verification" trace entry: what was found and what it cost, apart from the pattern's nodes."""
    support = result["claim_support"]
    cost = result["cost"]
    summary = (f"{support['supported']} of {support['claims']} claims supported, {support['unsupported']} unsupported, "
               f"{support['unchecked']} unchecked")
    return event("verification", "verdict", grader="claims", target="answer", verdict=summary,
                 reason=result.get("note") or result.get("error") or None, ms=cost["ms"], llm_calls=cost["llm_calls"],
                 tokens=cost["tokens"], counters={"model_checks_budget_left_out": support["not_checked_budget"]})
