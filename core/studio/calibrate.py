"""Calibration: fit each grader's threshold for a model from labelled pairs of the user's own documents.

The pairs come from a question set (the built-in one by default, or one written from the user's
collections): for each answerable question with key facts, the top chunks of the collections it is about
and of the others. A chunk holding one of its key facts is a positive; a chunk from a collection the
question is not about is a negative, unless it names the question's item (the menu's entry for the dish a wine
question names is about the question, though it does not answer it); the rest are left out (they may or may
not help). From those:

- relevance, crag: the question against each chunk (crag shares relevance's reading and takes a band: below
  its lower bound "incorrect", at or above its upper bound "correct"; relevance takes a floor and a ratio to
  the best-graded chunk of the same question, ``fit_relevance``);
- strip: the question against the chunk's sentence that holds the fact (positive) or a sentence of a
  negative chunk;
- grounded: an answer made of the fact's sentence, against its own chunk (positive) or a negative chunk;
- useful: that answer to its own question (positive) or to another question (negative);
- retrieve: the set's questions that name sources (lookup) against its small talk and general questions;
- kind and tool, the choosers (Auto's kind of question, an agent's first tool): the share of the choice read
  on top, a positive where that choice is the right one (the kind the set gives; a tool over a collection the
  question is about), a negative where it is not. Their threshold is where a reading stops being trusted.

Each grader's scores are split in two halves by question: the threshold fitted on one half is scored on the
other (held out), then refitted on all of them (what is saved). AUC says how well ``p`` ranks the pairs at all.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from core.knowledge.korean_tokens import token_spans
from core.knowledge.sources import all_sources
from core.llm import graders
from core.llm.claims.numbers import squeeze
from core.llm.thresholds import BAND_GRADERS, Thresholds, model_key
from core.llm.verdicts import supports_probabilities

DOCS_PER_QUESTION = 4
NO_LOOKUP = ("general", "small_talk")  # the categories (kinds) of a question set that need no retrieval
OPENING = 100  # the characters of a chunk whose heading or title says what it is about (a dish, a wine, a section)
# the share of positives the lower band bound may call incorrect (and of negatives above upper): issue #32's
# allowance, 2 relevant documents of 28 called incorrect (at 0.05 the fitted lower bound let a US policy chunk
# graded 0.547 for a wine question count as 'ambiguous', and Corrective answered from its strips)
BAND_MISS = 2 / 28


OVER_ALL_ITEMS = ("retrieve", "kind", "tool")  # graders read on every item of the set, not only the scorable ones
TEXT_ONLY = "the model gives no token probabilities, so its verdicts are read as text"


class CalibrationError(ValueError):
    """The labelled pairs cannot fit a threshold; the message says why in one line."""


@dataclass
class Pairs:
    """Scores of labelled pairs per grader: (question index, p, label) with label True for a positive."""

    scores: dict[str, list[tuple[int, float, bool]]] = field(default_factory=dict)
    text_only: set[str] = field(default_factory=set)  # graders the provider answered without probabilities

    def add(self, grader: str, question: int, outcome, label: bool) -> None:
        if outcome.method != "probability" or outcome.p is None:
            self.text_only.add(grader)
            return
        self.scores.setdefault(grader, []).append((question, float(outcome.p), label))


# ---------------------------------------------------------------- fitting


def auc(scores: list[tuple[float, bool]]) -> float | None:
    """The probability that a random positive scores above a random negative (ties count half)."""
    pos = [p for p, label in scores if label]
    neg = [p for p, label in scores if not label]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def _candidates(values: list[float]) -> list[float]:
    ordered = sorted(set(values))
    mids = [(a + b) / 2 for a, b in zip(ordered, ordered[1:])]
    return [0.0, *mids, min(1.0, ordered[-1] + 1e-6)] if ordered else [0.5]


def _need_both(pos: list, neg: list) -> None:
    if not pos or not neg:
        missing = "no positives" if not pos else "no negatives"
        raise CalibrationError(f"{missing} among {len(pos) + len(neg)} labelled pairs: a threshold needs both")


def fit_threshold(scores: list[tuple[float, bool]]) -> float:
    """The threshold with the best balanced accuracy (the mean of the rates on positives and on negatives);
    among equally good ones, the middle of their range (the widest margin either side)."""
    pos = [p for p, label in scores if label]
    neg = [p for p, label in scores if not label]
    _need_both(pos, neg)

    def balanced(t: float) -> float:
        return (sum(p >= t for p in pos) / len(pos) + sum(n < t for n in neg) / len(neg)) / 2

    candidates = _candidates(pos + neg)
    best = max(balanced(t) for t in candidates)
    tied = [t for t in candidates if balanced(t) >= best - 1e-12]
    return round((tied[0] + tied[-1]) / 2, 4)


def fit_band(scores: list[tuple[float, bool]]) -> tuple[float, float]:
    """CRAG's two bounds around the balanced threshold: the lower one calls at most ``BAND_MISS`` of the
    positives incorrect, the upper one calls at most that share of the negatives correct."""
    middle = fit_threshold(scores)
    pos = sorted(p for p, label in scores if label)
    neg = sorted(p for p, label in scores if not label)
    lower_room = pos[int(len(pos) * BAND_MISS + 1e-9)]  # at most BAND_MISS of the positives lie below it
    upper_room = neg[min(len(neg) - 1, int(len(neg) * (1 - BAND_MISS) + 1e-9))] + 1e-4
    # rounded down: rounded up, the lower bound could pass over the very positive it was placed at
    return math.floor(min(middle, lower_room) * 1e4) / 1e4, round(max(middle, upper_room), 4)


def _log_odds(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def below_best(rows: list[tuple[int, float, bool]]) -> list[tuple[float, float, bool]]:
    """(p, how far below its question's best p in log-odds, label) per pair."""
    best: dict[int, float] = {}
    for q, p, _ in rows:
        best[q] = max(best.get(q, -math.inf), _log_odds(p))
    return [(p, best[q] - _log_odds(p), label) for q, p, label in rows]


def fit_relevance(rows: list[tuple[int, float, bool]]) -> tuple[float, float]:
    """The relevance floor and ratio (``Thresholds.relevance_cut``) that turn away the most negatives while
    keeping all but ``BAND_MISS`` of the positives (as Corrective's lower bound: a relevant document lost is
    evidence lost), and of those the most positives. The floor sits as low as turning them away allows; ratio 0
    (no relative rule) where it turns away no more than the floor alone; ties take the gentler rule."""
    graded = below_best(rows)
    pos = [x for x in graded if x[2]]
    neg = [x for x in graded if not x[2]]
    _need_both(pos, neg)
    need = len(pos) - int(len(pos) * BAND_MISS + 1e-9)
    values = sorted({p for p, _, _ in graded})
    gaps = sorted({g for _, g, _ in graded})
    best = None
    for gap in [math.inf, *reversed([(a + b) / 2 for a, b in zip(gaps, gaps[1:])])]:  # gentler first
        passing = sorted((p for p, g, _ in pos if g <= gap), reverse=True)
        if len(passing) < need:
            continue
        lowest = passing[need - 1]  # the floor may sit just under this positive, and no higher
        caught = [p for p, g, _ in neg if g <= gap and p < lowest]  # the negatives only the floor turns away
        if caught:  # just above the highest of them: as low as turning them all away allows
            floor = (max(caught) + min(v for v in values if v > max(caught))) / 2
        else:
            floor = 0.0
        turned = sum(p < floor or g > gap for p, g, _ in neg)
        kept = sum(p >= floor and g <= gap for p, g, _ in pos)
        if best is None or (turned, kept) > best[:2]:
            best = (turned, kept, floor, gap)
    _, _, floor, gap = best
    # rounded down: rounded up, the floor could pass over the positive it was placed under
    return math.floor(floor * 1e4) / 1e4, 0.0 if gap == math.inf else round(math.exp(-gap), 4)


def relevance_rates(rows: list[tuple[int, float, bool]], floor: float, ratio: float) -> dict:
    """``rates`` of the relevance rule: each document against its question's cut (floor and ratio)."""
    from core.llm.thresholds import GENERIC

    th = Thresholds(values={**GENERIC, "relevance": floor, "relevance_ratio": ratio})
    best: dict[int, float] = {}
    for q, p, _ in rows:
        best[q] = max(best.get(q, 0.0), p)
    pos = [p >= th.relevance_cut(best[q]) for q, p, label in rows if label]
    neg = [p < th.relevance_cut(best[q]) for q, p, label in rows if not label]
    return {"positives": _share(sum(pos), len(pos)), "negatives": _share(sum(neg), len(neg))}


def rates(scores: list[tuple[float, bool]], threshold: float | tuple[float, float]) -> dict:
    """Accuracy on positives and on negatives; for a band, positives not called incorrect and negatives
    called incorrect (what decides Corrective's course), and how many fell between."""
    pos = [p for p, label in scores if label]
    neg = [p for p, label in scores if not label]
    if isinstance(threshold, tuple):
        lower, upper = threshold
        return {"positives_kept": _share(sum(p >= lower for p in pos), len(pos)),
                "negatives_incorrect": _share(sum(n < lower for n in neg), len(neg)),
                "positives_correct": _share(sum(p >= upper for p in pos), len(pos)),
                "negatives_correct": _share(sum(n >= upper for n in neg), len(neg))}
    return {"positives": _share(sum(p >= threshold for p in pos), len(pos)),
            "negatives": _share(sum(n < threshold for n in neg), len(neg))}


def _share(hits: int, total: int) -> dict:
    return {"hits": hits, "of": total, "rate": round(hits / total, 3) if total else None}


def _fit(grader: str, scores: list[tuple[float, bool]]):
    return fit_band(scores) if grader in BAND_GRADERS else fit_threshold(scores)


def report_grader(grader: str, rows: list[tuple[int, float, bool]]) -> dict:
    """AUC, the threshold fitted on all pairs and its rates, and the held-out rates of each half's fit on
    the other half (split by question, so no question is on both sides)."""
    scores = [(p, label) for _, p, label in rows]
    if grader == "relevance":
        return _report_relevance(rows, scores)
    threshold = _fit(grader, scores)
    out = {"pairs": len(rows), "positives": sum(label for _, _, label in rows), "auc": _round(auc(scores)),
           "threshold": list(threshold) if isinstance(threshold, tuple) else threshold,
           "fitted": rates(scores, threshold)}
    halves = [[(p, label) for q, p, label in rows if q % 2 == side] for side in (0, 1)]
    held: list[dict] = []
    for fit_on, score_on in ((halves[0], halves[1]), (halves[1], halves[0])):
        try:
            held.append(rates(score_on, _fit(grader, fit_on)))
        except CalibrationError:
            continue
    if held:
        out["held_out"] = _merge_rates(held)
    return out


def _report_relevance(rows: list[tuple[int, float, bool]], scores: list[tuple[float, bool]]) -> dict:
    """``report_grader`` for relevance: a floor and a ratio to the question's best document (``fit_relevance``)."""
    floor, ratio = fit_relevance(rows)
    out = {"pairs": len(rows), "positives": sum(label for _, _, label in rows), "auc": _round(auc(scores)),
           "auc_below_best": _round(auc([(-gap, label) for _, gap, label in below_best(rows)])),
           "threshold": floor, "ratio": ratio, "fitted": relevance_rates(rows, floor, ratio)}
    halves = [[r for r in rows if r[0] % 2 == side] for side in (0, 1)]
    held: list[dict] = []
    for fit_on, score_on in ((halves[0], halves[1]), (halves[1], halves[0])):
        try:
            held.append(relevance_rates(score_on, *fit_relevance(fit_on)))
        except CalibrationError:
            continue
    if held:
        out["held_out"] = _merge_rates(held)
    return out


def _merge_rates(parts: list[dict]) -> dict:
    merged: dict = {}
    for part in parts:
        for key, share in part.items():
            total = merged.setdefault(key, {"hits": 0, "of": 0})
            total["hits"] += share["hits"]
            total["of"] += share["of"]
    return {k: {**v, "rate": round(v["hits"] / v["of"], 3) if v["of"] else None} for k, v in merged.items()}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# ---------------------------------------------------------------- labelled pairs


def labelled_documents(kb, item: dict, collections: list[str]) -> tuple[list, list[str]]:
    """The documents judged for one question and their labels: relevant, irrelevant or "?" (not scored).

    The top 2 of each collection the question is about and the top 1 of the others, four in all, in an order
    fixed by their text (so the one that answers is not always first).
    """
    expected = item["sources"]
    docs = [doc for name in expected for doc in kb.search(name, item["question"], 2)]
    others = [name for name in collections if name not in expected]
    docs += [doc for name in others[:max(0, DOCS_PER_QUESTION - len(docs))] for doc in kb.search(name, item["question"], 1)]
    docs = sorted(docs[:DOCS_PER_QUESTION],
                  key=lambda d: hashlib.md5(d.page_content.encode(), usedforsecurity=False).hexdigest())
    labels = []
    for doc in docs:
        if any(squeeze(fact) in squeeze(doc.page_content) for fact in item["facts"]):
            labels.append("relevant")
        elif doc.metadata["collection"] in expected or names_an_item_of(item["question"], doc.page_content[:OPENING]):
            labels.append("?")
        else:
            labels.append("irrelevant")
    return docs, labels


def names_an_item_of(question: str, text: str) -> bool:
    """Whether ``text`` (a chunk's opening) names something the question names: two content words standing
    together in the question (트러플 크림, Pinot Noir) found together in it. One shared word is not enough:
    "steak" or "와인" is in many chunks that say nothing of the question's item; and a name deep in a chunk's
    body (a wine "for the signature steak") does not make the chunk about it."""
    spans, body = token_spans(question), squeeze(text)
    for (start, end, _), (next_start, next_end, _) in zip(spans, spans[1:]):
        if not question[end:next_start].strip():  # one phrase: nothing but spaces between the words
            name = squeeze(question[start:next_end])
            if len(name) >= 4 and name in body:
                return True
    return False


def fact_sentence(doc, facts: list[str]) -> str:
    """The first sentence strip of a document that holds one of the facts ("" when none does)."""
    for strip in graders.split_strips(doc.page_content):
        if any(squeeze(f) in squeeze(strip) for f in facts):
            return strip
    return ""


def scorable(items: list[dict], collections: list[str]) -> list[dict]:
    """The questions that give labelled pairs: answerable, with key facts, about collections that exist here."""
    return [item for item in items if item.get("answerable") and item.get("facts") and item.get("sources")
            and set(item["sources"]) <= set(collections) and len(collections) > len(item["sources"])]


def collect_pairs(model, kb, items: list[dict], collections: list[str],
                  progress: Callable[[int, int], None] | None = None) -> Pairs:
    """Read every grader's p on the labelled pairs of ``items`` (lookup / small-talk items for retrieve)."""
    pairs, open_ = Pairs(), Thresholds()  # thresholds do not matter here: only p is kept
    usable = scorable(items, collections)
    answers = [""] * len(usable)
    total = len(usable) + len(items)
    for n, item in enumerate(usable):
        _pairs_of_question(model, kb, item, n, collections, pairs, open_, answers)
        if not pairs.scores and pairs.text_only:  # the server answered without probabilities: stop asking
            return pairs
        if progress:
            progress(n + 1, total)
    for n, item in enumerate(usable):  # useful: its own answer against another question's
        if answers[n] and answers[(n + 1) % len(usable)]:
            for answer, label in ((answers[n], True), (answers[(n + 1) % len(usable)], False)):
                pairs.add("useful", n, graders.grade_usefulness(model, item["question"], answer, open_), label)
    sources = [s for s in all_sources(kb) if s.id in collections]
    for n, item in enumerate(items):  # retrieve: a lookup, or small talk / general knowledge
        label = retrieval_label(item)
        if label is not None:
            pairs.add("retrieve", n, graders.needs_retrieval(model, item["question"], sources, open_), label)
        _choice_pairs(model, item, n, sources, pairs, open_)
        if progress:
            progress(len(usable) + n + 1, total)
    return pairs


def _choice_pairs(model, item: dict, n: int, sources: list, pairs: Pairs, open_: Thresholds) -> None:
    """kind: what Auto reads the question as, against the set's kind; tool: an agent's first tool for a lookup
    (read as a run without a web key reads it), against the collections the question is about."""
    from core.llm.tool_choice import ANSWER, read_first_step
    from core.patterns.react import step_messages
    from core.patterns.tools import source_tools

    if item.get("kind") in graders.QUESTION_KINDS:
        read = graders.classify_kind(model, item["question"], sources, open_)
        pairs.add("kind", n, read, read.value.kind == item["kind"])
    if not (item.get("answerable") and item.get("sources")) or "web" in item["sources"] or len(sources) < 2:
        return
    tools = source_tools(sources, web_ready=False)
    step = read_first_step(model, step_messages(item["question"], tools, []), {t.name: t.line() for t in tools},
                           item["question"], sources, open_)
    if step is not None and step.value.step != ANSWER:  # answering at once was retrieve's call, not the tool's
        chosen = next(t for t in tools if t.name == step.value.step)
        pairs.add("tool", n, step, bool(set(chosen.collections) & set(item["sources"])))


def retrieval_label(item: dict) -> bool | None:
    """True for a question that needs looking up, False for small talk or general knowledge, None otherwise."""
    if item.get("category") in NO_LOOKUP or item.get("kind") in NO_LOOKUP:
        return False
    return True if item.get("sources") and item.get("answerable") else None


def _pairs_of_question(model, kb, item, n, collections, pairs: Pairs, open_: Thresholds, answers: list) -> None:
    docs, labels = labelled_documents(kb, item, collections)
    scored = [(d, label == "relevant") for d, label in zip(docs, labels) if label != "?"]
    if not scored:
        return
    chosen = [d for d, _ in scored]
    for (_, label), outcome in zip(scored, graders.grade_documents(model, item["question"], chosen, 1, open_)):
        pairs.add("relevance", n, outcome, label)
        pairs.add("crag", n, outcome, label)  # the same reading, judged against a band
    positive = next((d for d, label in scored if label), None)
    negative = next((d for d, label in scored if not label), None)
    sentence = fact_sentence(positive, item["facts"]) if positive else ""
    if not sentence or negative is None:
        return
    answers[n] = sentence
    other = (graders.split_strips(negative.page_content) or [negative.page_content[:200]])[0]
    for strip, label in ((sentence, True), (other, False)):
        outcome = graders.grade_strips(model, item["question"], [[strip]], 1, open_)[0]
        if outcome.method == "probability":
            outcome.p = outcome.p[0]
        pairs.add("strip", n, outcome, label)
    for doc, label in ((positive, True), (negative, False)):
        pairs.add("grounded", n, graders.grade_grounded(model, [doc], sentence, item["question"], open_), label)


def calibrate(settings, model, kb, items: list[dict], collections: list[str],
              progress: Callable[[int, int], None] | None = None, pairs_out: list | None = None) -> dict:
    """Fit every grader it has pairs for; the report (per grader) and the thresholds to save.
    ``pairs_out``, when given, receives every labelled pair read (to study or refit them elsewhere)."""
    start = time.perf_counter()
    if not supports_probabilities(model):
        raise CalibrationError(f"nothing to calibrate: {TEXT_ONLY}")
    pairs = collect_pairs(model, kb, items, collections, progress)
    if pairs_out is not None:
        pairs_out.extend(pair_rows(pairs, items, collections))
    if not pairs.scores:
        why = (TEXT_ONLY if pairs.text_only else "no question of the set has labelled pairs in these collections")
        raise CalibrationError(f"nothing to calibrate: {why}")
    report, thresholds = {}, {}
    for grader, rows in pairs.scores.items():
        try:
            report[grader] = report_grader(grader, rows)
            thresholds[grader] = report[grader]["threshold"]
            if "ratio" in report[grader]:
                thresholds["relevance_ratio"] = report[grader]["ratio"]
        except CalibrationError as exc:
            report[grader] = {"pairs": len(rows), "error": str(exc)}
    if not thresholds:
        raise CalibrationError("no grader could be fitted: " + "; ".join(
            f"{g}: {r['error']}" for g, r in report.items()))
    return {"model": model_key(model), "thresholds": thresholds, "graders": report,
            "questions": len(scorable(items, collections)), "seconds": round(time.perf_counter() - start, 1),
            "at": time.strftime("%Y-%m-%d %H:%M", time.localtime())}


def pair_rows(pairs: Pairs, items: list[dict], collections: list[str]) -> list[dict]:
    """Each labelled pair as {grader, question, p, positive}: retrieve, kind and tool count over all the items, the other
    graders over the scorable ones (as collect_pairs numbers them). p is not rounded: a band refitted from
    rounded pairs can put its lower bound just above the positive it was placed at."""
    usable = scorable(items, collections)
    return [{"grader": grader, "question": (items if grader in OVER_ALL_ITEMS else usable)[n]["question"],
             "p": p, "positive": label}
            for grader, rows in pairs.scores.items() for n, p, label in rows]


def save(settings, result: dict) -> None:
    """Keep a calibration for its model (the data directory, or Postgres for teams): runs read it.
    Refused in read-only mode: it would change the thresholds of everybody's runs."""
    from core.config import refuse_if_read_only
    from core.store import calibrations

    refuse_if_read_only(settings, "saving a calibration")

    calibrations.save(settings, result["model"], result)
