"""What a finished run can honestly claim: its outcome, whether its citations point at real sources,
whether its sentences are supported by its documents (the claim check), and whether the answer was cut
off at the token limit. Derived from the values the run result carries (grounding verdict, claim support,
termination reason, usage), never from its trace, so chat, compare, export and the CLI all say the same thing.
"""

from __future__ import annotations

import re

from core.patterns import reason_outcome

# status -> (tone, English label); tones: good | neutral | warning | error
OUTCOMES = {
    "supported": ("good", "answered — every claim supported"),
    "unsupported": ("warning", "answered — unsupported claims"),
    "grounded": ("good", "answered — grounded"),
    "unchecked": ("neutral", "answered — grounding not checked"),
    "ungrounded": ("warning", "answered — grounding failed"),
    "direct": ("neutral", "answered without documents — grounding not checked"),
    "partial": ("warning", "answered from partial evidence"),
    "budget": ("warning", "budget ran out"),
    "declined": ("warning", "no answer"),
    "rejected": ("neutral", "rejected by the reviewer"),
    "paused": ("neutral", "paused for review"),
    "error": ("error", "stopped by an error"),
}

_NUMBERED = re.compile(r"\[(\d{1,3}(?:\s*(?:[,;]|[-–])\s*\d{1,3})*)\](?!\()")
_LABELLED = re.compile(r"\[\s*(?:Source|Sources|출처)\s*:\s*([^\]]*)\]", re.IGNORECASE)


def grounding(result: dict) -> str:
    """``yes`` / ``no``: the pattern's grader on the answer the run returned; ``unchecked`` when none graded it.

    A pattern that grades its answer's grounding carries the verdict in its result (``grounding``, a
    ``Pattern.result_fields`` entry); a grader that failed leaves it empty.
    """
    verdict = str(result.get("grounding") or "").lower()
    return verdict if verdict in ("yes", "no") else "unchecked"


def outcome(result: dict) -> str:
    """The run's outcome status (a key of OUTCOMES): what was checked, not just why it stopped."""
    kind = reason_outcome(result.get("termination_reason") or "")  # as the pattern declared it
    if result.get("error") or kind == "error":
        return "error"
    if result.get("interrupted"):
        return "paused"
    if kind in ("rejected", "budget", "direct"):
        return kind
    if kind == "declined":
        return "partial" if result.get("sources") and result.get("answer") else "declined"
    support = result.get("claim_support") or {}
    if support.get("unsupported"):  # whatever the pattern's own grader said: never a success badge
        return "unsupported"
    graded = grounding(result)
    if graded == "no":
        return "ungrounded"
    if support.get("claims") and support.get("supported") == support["claims"]:
        return "supported"
    return "grounded" if graded == "yes" else "unchecked"


def claim_line(result: dict) -> str:
    """"3 of 4 claims supported · 1 unsupported · …" for the run's answer, '' when it was not checked."""
    support = result.get("claim_support") or {}
    if not support.get("claims"):
        return ""
    parts = [f"{support['supported']} of {support['claims']} claims supported"]
    parts += [f"{support[k]} {k}" for k in ("unsupported", "unchecked") if support.get(k)]
    return " · ".join(parts)


def disagreement(result: dict) -> bool:
    """The pattern's grader called the answer grounded, and the claim check found an unsupported sentence."""
    return grounding(result) == "yes" and bool((result.get("claim_support") or {}).get("unsupported"))


def outcome_tone(status: str) -> str:
    """The badge tone of an outcome (neutral for an unknown one)."""
    return OUTCOMES.get(status, ("neutral", status))[0]


def outcome_label(status: str) -> str:
    """The badge label of an outcome (the status itself for an unknown one)."""
    return OUTCOMES.get(status, ("neutral", status))[1]


def truncated_nodes(result: dict) -> dict[str, tuple[int, int]]:
    """Answer-writing nodes whose model output stopped at the token limit: node -> (cut off, calls).

    The finish reason of every call is counted per node in the run's usage (core.runtime.trace.UsageCallback).
    """
    from core.patterns import get_pattern

    try:
        answer_nodes = get_pattern(result.get("pattern") or "").answer_nodes
    except KeyError:  # a pattern that no longer exists: every node counts
        answer_nodes = None
    return {node: (int(stats["truncated"]), int(stats.get("llm_calls", 0)))
            for node, stats in (result.get("usage") or {}).items()
            if stats.get("truncated") and (answer_nodes is None or node in answer_nodes)}


def _numbers(inner: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", inner.strip()):
        ends = [int(x) for x in re.split(r"\s*[-–]\s*", part) if x]
        if len(ends) == 2 and ends[0] <= ends[1] and ends[1] - ends[0] < 50:
            out.extend(range(ends[0], ends[1] + 1))
        else:
            out.extend(ends)
    return out


def _norm(label: str) -> str:
    return "".join(str(label).casefold().split()).strip("'\"`")


def check_citations(answer: str, sources: list[dict]) -> dict:
    """The answer's citation markers against the listed sources.

    ``[n]`` (also ``[1, 2]``, ``[1-3]``) must name a listed source number; ``[Source: label]`` a
    listed source's label, file name or URL. Returns ``{"status": "ok" | "unknown" | "none",
    "cited": [...], "unknown": [...], "listed": n}``; markers are kept in order of appearance.
    """
    numbers = {src.get("n") for src in sources or []}
    labels = {_norm(v) for src in sources or [] for v in (src.get("label"), src.get("source"), src.get("url"))
              if v}
    cited: list[str] = []
    unknown: list[str] = []
    for match in _NUMBERED.finditer(answer or ""):
        for n in _numbers(match.group(1)):
            (cited if n in numbers else unknown).append(f"[{n}]")
    for match in _LABELLED.finditer(answer or ""):
        inner = match.group(1).strip()
        parts = [inner] if _norm(inner) in labels else [p.strip() for p in re.split(r"[;,]", inner) if p.strip()]
        for part in parts:
            (cited if _norm(part) in labels else unknown).append(f"[Source: {part}]")
    cited, unknown = list(dict.fromkeys(cited)), list(dict.fromkeys(unknown))
    status = "unknown" if unknown else "ok" if cited else "none"
    return {"status": status, "cited": cited, "unknown": unknown, "listed": len(sources or [])}


def summary(result: dict) -> dict:
    """Everything the views and exports say about a run's outcome, as plain data (English labels)."""
    status = outcome(result)
    out = {"status": status, "label": outcome_label(status), "grounding": grounding(result)}
    if result.get("claim_support"):
        out["claims"] = {**result["claim_support"], "line": claim_line(result), "disagreement": disagreement(result)}
    if status not in ("error", "paused") and result.get("answer"):
        out["citations"] = check_citations(result["answer"], result.get("sources") or [])
    cut = truncated_nodes(result)
    if cut:
        out["truncated"] = {node: {"cut_off": n, "calls": calls} for node, (n, calls) in cut.items()}
    return out
