"""The claim check of a finished run: its answer against the documents it was written from, as a trace entry."""

from __future__ import annotations

from core.runtime.trace import event


def trace_event(result: dict) -> dict:
    """The "verification" trace entry: what was found and what it cost, apart from the pattern's nodes."""
    support = result["claim_support"]
    cost = result["cost"]
    summary = (f"{support['supported']} of {support['claims']} claims supported, {support['unsupported']} unsupported, "
               f"{support['unchecked']} unchecked")
    return event("verification", "verdict", grader="claims", target="answer", verdict=summary,
                 reason=result.get("note") or result.get("error") or None, ms=cost["ms"], llm_calls=cost["llm_calls"],
                 tokens=cost["tokens"], counters={"model_checks_budget_left_out": support["not_checked_budget"]})
