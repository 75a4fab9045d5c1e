"""Auto's policy: for each kind of question, the pattern that wins that kind in the user's latest saved advice.

An advice (core.studio.advise) runs a question set through patterns and scores each pattern per kind of question.
Auto reads the latest advice whose questions are about collections the run has (measured with the run's provider
and model) and takes, per kind, the winner by advise's own rule (``pick``: quality first; within the margin, the
fewest seconds). A kind with no such advice, too few questions in it, or whose winner is no longer a pattern here
takes ``DEFAULT_POLICY``; every choice carries the sentence the trace shows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.llm.graders import QUESTION_KINDS

KINDS = QUESTION_KINDS
KIND_NAMES = {"single": "single fact", "two_chunks": "two facts", "cross_collection": "across collections",
              "unanswerable": "not in the documents", "small_talk": "small talk"}
KIND_NAMES_KO = {"single": "단일 사실", "two_chunks": "두 사실", "cross_collection": "여러 컬렉션에 걸친 질문",
                 "unanswerable": "문서에 없는 질문", "small_talk": "잡담"}
MARGIN = 0.05  # quality points (0..1) a cheaper pattern may trail the best by and still be chosen (advise's rule)
MIN_KIND_QUESTIONS = 2  # below this an advice's figure for a kind is one question's luck: the default stands
CLOSE = 0.15  # an unsure reading: the kinds whose p is within this of the top one's are the close ones

# Without advice. From docs/BENCHMARKS.md (Qwen2.5 1.5B, advise over basic, adaptive, corrective, self_rag):
# - single, two_chunks -> basic: hr_handbook basic 0.94 = self_rag 0.94 overall and on two-chunk questions, at
#   19 s against 59 s a question; the English set basic 0.88, self_rag 0.45. One retrieval is enough for them.
# - cross_collection -> self_rag: its router searches several sources at once and grades each document; on the
#   bikes set it scored best (0.95, route 1.0), while basic's one top-k over every collection can miss one of the two.
# - unanswerable -> self_rag: it grades relevance and groundedness and ends "not enough evidence" when nothing
#   holds; basic never declines (it answers from whatever it found: the invented date), corrective declines only
#   by way of the web and took 68 s a question on the bikes set against self_rag's 40.
# - small_talk -> self_rag: its first step reads whether the message needs looking up and answers a greeting
#   directly (two calls); it scored 1.00 on small talk against basic's 0.33 in both advices, while adaptive's
#   router sent the bikes set's greeting to the web.
DEFAULT_POLICY = {"single": "basic", "two_chunks": "basic", "cross_collection": "self_rag",
                  "unanswerable": "self_rag", "small_talk": "self_rag"}
# when the close kinds' qualities are not all measured: the patterns that check their evidence before answering first
SAFER = ("self_rag", "corrective", "agentic", "adaptive", "rag_fusion", "graph_rag", "react_native", "react", "basic")


@dataclass(frozen=True)
class Choice:
    """The pattern for one kind of question, why (the trace's sentence), and the figure behind it."""

    kind: str
    pattern: str
    reason: str
    quality: float | None = None  # the winner's quality on this kind in the advice (None: default policy)
    questions: int = 0
    advice: str = ""  # the advice record's id ("" for the default policy)
    seconds: float | None = None  # the winner's mean seconds per question of this kind in the advice
    date: str = ""  # the advice's date
    # a default choice's pattern measured over all of the advice's questions (None: not in the advice)
    pattern_quality: float | None = None

    def measured(self) -> float | None:
        """The quality an unsure reading compares: on this kind, else the pattern's over the whole advice."""
        return self.quality if self.quality is not None else self.pattern_quality


def pick(rows: dict[str, dict], margin: float = MARGIN) -> tuple[str, str] | None:
    """(chosen, best) by advise's rule over ``{pattern: {quality, seconds, calls}}``: the best quality, then among
    those within ``margin`` of it the fewest seconds (then calls, then the better quality, then the name)."""
    scored = {p: r for p, r in rows.items() if r.get("quality") is not None}
    if not scored:
        return None

    def cost(p: str) -> tuple:
        return scored[p].get("seconds") or 0.0, scored[p].get("calls") or 0.0

    best = max(scored, key=lambda p: (scored[p]["quality"], [-c for c in cost(p)]))
    top = scored[best]["quality"]
    within = [p for p in scored if scored[p]["quality"] >= top - margin - 1e-9]
    return min(within, key=lambda p: (*cost(p), -scored[p]["quality"], p)), best


def default_choice(kind: str, why: str) -> Choice:
    """The default policy's pattern for ``kind``, with why the default applies."""
    pattern = DEFAULT_POLICY[kind]
    return Choice(kind, pattern, f"{KIND_NAMES[kind]} → {pattern}: default policy ({why})")


def advice_collections(record: dict) -> set[str]:
    """The collections an advice's questions are about (web search is not a collection)."""
    return {name for item in record.get("items") or [] for name in item.get("sources") or [] if name != "web"}


def policy(records: list[dict], problems: list[str], collections: list[str], provider: str, model: str,
           runnable: set[str]) -> dict[str, Choice]:
    """Every kind's Choice from saved advice ``records`` (newest first) for a run over ``collections``.

    ``problems``: records that could not be read; ``runnable``: the patterns Auto can run.
    """
    usable, notes = [], list(problems)
    for record in records:
        try:
            found = _usable(record, set(collections), provider, model)
        except (TypeError, KeyError, AttributeError, ValueError) as exc:
            notes.append(f"advice {_name(record)} is corrupt ({exc.__class__.__name__})")
            continue
        if found:
            usable.append(record)
    overall = _overall(usable[0]) if usable else {}
    choices = {}
    for kind in KINDS:
        choice = _from_advice(kind, usable, runnable) or default_choice(
            kind, "no advice for these collections" + (f"; {'; '.join(notes[:2])}" if notes else ""))
        if choice.quality is None:
            choice = replace(choice, pattern_quality=overall.get(choice.pattern))
        choices[kind] = choice
    return choices


def _overall(record: dict) -> dict[str, float]:
    """Each pattern's quality over all of an advice's questions (Auto measured beside them left out)."""
    return {p: float(row["quality"]) for p, row in record["report"]["patterns"].items()
            if p != "auto" and row.get("quality") is not None}


def _name(record) -> str:
    return str(record.get("id") or "?") if isinstance(record, dict) else "?"


def _usable(record: dict, collections: set[str], provider: str, model: str) -> bool:
    """Whether an advice applies to this run; raises on a record whose fields have the wrong shape."""
    report = record.get("report")
    if not report:
        return False  # still running, or failed before any report
    asked = advice_collections(record)
    for row in report["patterns"].values():  # the shape policy reads, checked before it is trusted
        for kind_row in (row.get("kinds") or {}).values():
            int(kind_row["questions"]), kind_row.get("quality") is None or float(kind_row["quality"])
    same_model = report.get("provider", provider) == provider and report.get("model", model) == model
    return bool(asked) and asked <= collections and same_model


def _from_advice(kind: str, usable: list[dict], runnable: set[str]) -> Choice | None:
    """The kind's winner in the newest usable advice that asked questions of this kind (None: no such advice)."""
    name = KIND_NAMES[kind]
    for record in usable:
        report = record["report"]
        rows = {}
        for pattern, row in report["patterns"].items():
            kind_row = (row.get("kinds") or {}).get(kind)
            if pattern == "auto" or not kind_row or kind_row.get("quality") is None:
                continue  # Auto measured beside the patterns is no pattern to route to
            rows[pattern] = {"quality": float(kind_row["quality"]), "questions": int(kind_row["questions"]),
                             "seconds": kind_row.get("mean_seconds", row.get("mean_seconds")),
                             "calls": row.get("mean_llm_calls")}
        if not rows:
            continue
        date = str(report.get("date") or record.get("date") or "")[:10]
        margin = float((report.get("recommendation") or {}).get("margin") or MARGIN)
        questions = max(r["questions"] for r in rows.values())
        if questions < MIN_KIND_QUESTIONS:
            return default_choice(kind, f"{questions} question(s) of this kind in your advice of {date}, "
                                        f"too few to go by (fewer than {MIN_KIND_QUESTIONS})")
        chosen, best = pick(rows, margin)
        if chosen not in runnable:
            return default_choice(kind, f"your advice of {date} names {chosen}, which is not a pattern here any more")
        mine = rows[chosen]
        others = sorted((p for p in rows if p != chosen), key=lambda p: (-rows[p]["quality"], p))
        versus = f" vs {others[0]} {rows[others[0]]['quality']:.2f}" if others else ""
        reason = (f"{name} → {chosen}: {mine['quality']:.2f}{versus} over {questions} questions of your set ({date})"
                  + (f"; the fewest seconds within {margin} of {best}'s {rows[best]['quality']:.2f}"
                     if chosen != best else ""))
        seconds = None if mine["seconds"] is None else float(mine["seconds"])
        return Choice(kind, chosen, reason, mine["quality"], questions, str(record.get("id") or ""), seconds, date)
    return None


def close_kinds(choices: dict[str, float]) -> list[str]:
    """The kinds an unsure reading hesitates between: within CLOSE of the top p, the top two at least."""
    ranked = sorted(choices, key=lambda k: (-choices[k], k))
    top = choices[ranked[0]]
    return [k for i, k in enumerate(ranked) if i < 2 or choices[k] >= top - CLOSE]


def safest(candidates: list[Choice]) -> Choice:
    """Of the close kinds' choices, the one with the higher measured quality (on its kind, else its pattern's over
    the advice: a default choice is measured too when the advice ran its pattern); when not all are measured, the
    pattern that checks its evidence most (SAFER). Going by SAFER alone, two single questions read unsure ran
    self_rag for 134 s and 77 s where basic, the advice's winner for single facts, took 13 s (docs/BENCHMARKS.md)."""
    def rank(pattern: str) -> int:
        return SAFER.index(pattern) if pattern in SAFER else len(SAFER)

    if all(c.measured() is not None for c in candidates):
        return max(candidates, key=lambda c: (c.measured(), -rank(c.pattern)))
    return min(candidates, key=lambda c: rank(c.pattern))
