"""The recommendation: the cheapest pattern within a stated margin of the best quality, and the kinds of
question where another pattern wins. The rule is returned with the result so a reader can check it."""

from __future__ import annotations

from core.patterns.policy import MARGIN, pick
from core.studio.evaluate import summarise

# the claim check's cost per question, reported beside the pattern's own (every pattern's answer gets the same check)
VERIFICATION_COLUMNS = ("mean_verification_calls", "mean_verification_tokens", "mean_verification_seconds")
# MARGIN (core.patterns.policy): quality points (0..1) a cheaper pattern may trail the best by and still be recommended
RULE = ("Each run's quality is the mean of the measures that apply to its question: key facts found, claims "
        "supported (faithfulness), declined when it should (unanswerable) or answered when it should, and route. "
        "A pattern's quality is the mean over its questions. Recommended: among the patterns whose quality is "
        "within {margin} of the best, the one with the fewest seconds per question (then the fewest LLM calls), "
        "verification not counted (every pattern's answer gets the same check). For a kind of question, another "
        "pattern is named when its quality there beats the recommended one's by more than {margin}.")


def run_quality(score: dict) -> float | None:
    """One run's quality: the mean of the measures that apply to it; None when none does."""
    values = [score.get("fact_rate"), score.get("faithfulness"), score.get("route_ok"),
              score.get("declined_ok") if score.get("declined_ok") is not None else score.get("answered")]
    values = [float(v) for v in values if v is not None]
    return round(sum(values) / len(values), 3) if values else None


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(sum(values) / len(values), 3) if values else None


def kind_of(item: dict) -> str:
    return item.get("kind") or item.get("category") or "?"


def pattern_row(scores: list[dict]) -> dict:
    """A pattern's scores over the set: evaluation summary, quality, cost split, and per kind."""
    summary = summarise(scores)
    kinds: dict[str, dict] = {}
    for score in scores:
        kinds.setdefault(score["kind"], []).append(score)
    return {**summary, "quality": _mean(run_quality(s) for s in scores),
            "mean_seconds": _mean(s["pattern_ms"] / 1000 for s in scores),
            "mean_verification_seconds": _mean(s["verification_ms"] / 1000 for s in scores),
            "mean_verification_calls": _mean(s.get("verification_calls", 0) for s in scores),
            "mean_verification_tokens": _mean(s.get("verification_tokens", 0) for s in scores),
            "kinds": {kind: _kind_row(group) for kind, group in sorted(kinds.items())}}


def _kind_row(scores: list[dict]) -> dict:
    declines = [s["declined_ok"] for s in scores if s.get("declined_ok") is not None]
    return {"questions": len(scores), "quality": _mean(run_quality(s) for s in scores),
            "declined": sum(bool(d) for d in declines), "judged": len(declines),
            "key_fact_rate": _mean(s.get("fact_rate") for s in scores),
            "mean_seconds": _mean(s["pattern_ms"] / 1000 for s in scores if s.get("pattern_ms") is not None)}


def _cost(row: dict) -> tuple:
    return (row.get("mean_seconds") or 0.0, row.get("mean_llm_calls") or 0.0)


def recommend(table: dict[str, dict], margin: float = MARGIN) -> dict:
    """{pattern, reasons, rule, margin, best, wins} from per-pattern rows (see pattern_row)."""
    rule = RULE.format(margin=margin)
    scored = {p: row for p, row in table.items() if row.get("quality") is not None}
    if not scored:
        return {"pattern": None, "reasons": ["no pattern has a scored run yet"], "rule": rule, "margin": margin,
                "best": None, "wins": []}
    rows = {p: {"quality": row["quality"], "seconds": _cost(row)[0], "calls": _cost(row)[1]} for p, row in scored.items()}
    chosen, best = pick(rows, margin)  # the rule Auto's policy applies per kind of question
    top = scored[best]["quality"]
    within = [p for p in scored if scored[p]["quality"] >= top - margin - 1e-9]
    row = scored[chosen]
    seconds, calls = _cost(row)
    reasons = [f"{chosen}: quality {row['quality']:.2f} (best: {best} {top:.2f}); the cheapest of the "
               f"{len(within)} pattern(s) within {margin} of the best, {seconds:.1f} s and {calls:.1f} LLM calls "
               f"per question"]
    if chosen != best:
        b_seconds, _ = _cost(scored[best])
        reasons.append(f"{best} scores {top - row['quality']:.2f} higher and takes {b_seconds:.1f} s per question")
    wins = kind_wins(scored, chosen, margin)
    auto = auto_against(scored, margin)
    return {"pattern": chosen, "reasons": reasons + [w["reason"] for w in wins] + ([auto["reason"]] if auto else []),
            "rule": rule, "margin": margin, "best": best, "wins": wins, "auto": auto}


AUTO = "auto"
AUTO_QUALITY_SLACK = 0.02  # Auto pays when its quality is within this of the best single pattern's...
AUTO_SECONDS_SHARE = 0.6  # ...at most this share of that pattern's seconds (or no more than the cheapest close one)


def auto_against(table: dict[str, dict], margin: float) -> dict | None:
    """Whether Auto pays on this set: its quality and seconds against the best single pattern's, and against the
    cheapest pattern within the margin of it. None when Auto or no other pattern was scored."""
    singles = {p: row for p, row in table.items() if p != AUTO}
    if AUTO not in table or not singles:
        return None
    mine = table[AUTO]
    best = max(singles, key=lambda p: (singles[p]["quality"], [-c for c in _cost(singles[p])]))
    top = singles[best]["quality"]
    cheapest = min((p for p in singles if singles[p]["quality"] >= top - margin - 1e-9),
                   key=lambda p: (_cost(singles[p]), p))
    seconds, best_seconds, cheap_seconds = _cost(mine)[0], _cost(singles[best])[0], _cost(singles[cheapest])[0]
    allowed = max(AUTO_SECONDS_SHARE * best_seconds, cheap_seconds)
    quality_ok = mine["quality"] >= top - AUTO_QUALITY_SLACK - 1e-9
    seconds_ok = seconds <= allowed + 1e-9
    ratio = round(seconds / best_seconds, 2) if best_seconds else None
    verdict = "pays" if quality_ok and seconds_ok else "does not pay" + (
        " (lower quality)" if not quality_ok else "") + (" (slower)" if not seconds_ok else "")
    reason = (f"auto {verdict}: quality {mine['quality']:.2f} against the best single pattern, {best}, "
              f"{top:.2f}; {seconds:.1f} s a question against {best_seconds:.1f} s"
              + (f" ({ratio}x)" if ratio is not None else "")
              + (f", and {cheapest}'s {cheap_seconds:.1f} s, the cheapest within {margin}" if cheapest != best else ""))
    return {"quality": mine["quality"], "seconds": seconds, "best": best, "best_quality": top,
            "best_seconds": best_seconds, "cheapest": cheapest, "cheapest_seconds": cheap_seconds,
            "seconds_ratio": ratio, "quality_ok": quality_ok, "seconds_ok": seconds_ok,
            "pays": quality_ok and seconds_ok, "reason": reason}


def kind_wins(table: dict[str, dict], chosen: str, margin: float) -> list[dict]:
    """Kinds of question where another pattern beats ``chosen`` by more than the margin."""
    wins = []
    for kind, mine in sorted((table[chosen].get("kinds") or {}).items()):
        rivals = {p: row["kinds"][kind] for p, row in table.items()
                  if p != chosen and (row.get("kinds") or {}).get(kind, {}).get("quality") is not None}
        if mine.get("quality") is None or not rivals:
            continue
        other = max(rivals, key=lambda p: (rivals[p]["quality"], p))
        theirs = rivals[other]
        if theirs["quality"] - mine["quality"] <= margin:
            continue
        if theirs.get("judged") and mine.get("judged"):
            reason = (f"{other} for {kind} questions: it declined {theirs['declined']} of {theirs['judged']}, "
                      f"{chosen} declined {mine['declined']} of {mine['judged']}")
        else:
            reason = (f"{other} for {kind} questions: quality {theirs['quality']:.2f} against {chosen}'s "
                      f"{mine['quality']:.2f} ({theirs['questions']} question(s))")
        wins.append({"kind": kind, "pattern": other, "quality": theirs["quality"], "against": mine["quality"],
                     "reason": reason})
    return wins


def markdown_report(report: dict) -> str:
    """The advice as a Markdown document: recommendation, rule, per-pattern table, per-kind quality."""
    rec = report["recommendation"]
    cols = ("quality", "key_fact_rate", "faithfulness", "correct_decline_rate", "route_accuracy", "mean_seconds",
            "mean_llm_calls", "mean_tokens", *VERIFICATION_COLUMNS)
    lines = [f"# Which pattern for {report.get('set') or 'this set'}?", "",
             f"{report['provider']} ({report['model']}), {report['date']}, {report['finished_runs']} of "
             f"{report['total_runs']} runs.", "", f"**Recommended: {rec['pattern'] or '-'}**", ""]
    lines += [f"- {reason}" for reason in rec["reasons"]]
    lines += ["", f"Rule: {rec['rule']}", "", "| pattern | n | " + " | ".join(cols) + " |",
              "|---" * (len(cols) + 2) + "|"]
    lines += [f"| {p} | {row['questions']} | " + " | ".join(str(row.get(c)) for c in cols) + " |"
              for p, row in report["patterns"].items()]
    auto = report["patterns"].get(AUTO) or {}
    if auto.get("routed"):
        ran = ", ".join(f"{p} {n}" for p, n in sorted(auto["routed"].items(), key=lambda x: (-x[1], x[0])))
        lines += ["", f"Auto read the kind as the set labels it for {auto.get('kind_accuracy')} of its questions "
                      f"and ran: {ran}."]
    lines += ["", "Quality per kind of question:", ""]
    lines += [f"- {p}: " + ", ".join(f"{k} {v['quality']} ({v['questions']})" for k, v in row["kinds"].items())
              for p, row in report["patterns"].items()]
    return "\n".join(lines) + "\n"
