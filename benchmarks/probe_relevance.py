"""Probe the per-document graders on labelled documents, without running whole patterns: relevance as
Agentic asks it (one document a call) and as Self-RAG asks it (all documents, then "document [n]"), and
Corrective's correct / ambiguous / incorrect. (Self-RAG's grades read from probabilities take the one-document
layout since the numbered one measured AUC 0.58: with probabilities its column repeats the first; with
``--written`` it is the numbered layout.)

    python -m benchmarks.probe_relevance [--provider embedded] [--model NAME] [--data-dir DIR] [--every 2]
                                         [--offset 0] [--limit N] [--written] [--thresholds T] [--json]

For each answerable question of the built-in set whose expected sources are sample collections, the
documents are the top 2 of each expected collection and the top 1 of other collections, four in all, in an
order fixed by their text (core.studio.calibrate.labelled_documents). A document holding one of the
question's key facts should be judged relevant (and not incorrect); a document from a collection the
question is not about should be judged not relevant (and incorrect); the others are shown, not scored.

By default the graders read each verdict from the model's probabilities against the thresholds in use
(``--thresholds`` overrides them: "relevance=0.5,crag=0.3:0.7"); ``--written`` reads the verdicts the
model writes, as before probabilities. Both rates are printed, relevant kept AND irrelevant turned away,
with the AUC of p where it was read. A measurement (printed), never a test: run it before and after
changing a grader.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time

from core.config import load_settings
from core.knowledge.base import SAMPLE_COLLECTIONS, KnowledgeBase
from core.llm import graders
from core.llm.models import get_chat_model
from core.llm.thresholds import model_key, thresholds_for
from core.llm.verdicts import written_verdicts
from core.studio.calibrate import auc, labelled_documents
from core.studio.question_set import BUILTIN, load_question_set


def probe(settings, every: int = 1, limit: int | None = None, written: bool = False, offset: int = 0) -> dict:
    kb = KnowledgeBase(settings)
    kb.ensure_samples()
    model = get_chat_model(settings, role="grader")
    thresholds = thresholds_for(settings, model_key(model))
    items = [item for item in load_question_set(BUILTIN) if item["answerable"] and item.get("facts")
             and item["sources"] and set(item["sources"]) <= set(SAMPLE_COLLECTIONS)][offset::every][:limit]
    rows, start = [], time.perf_counter()
    with written_verdicts() if written else contextlib.nullcontext():
        for item in items:
            docs, labels = labelled_documents(kb, item, list(SAMPLE_COLLECTIONS))
            relevance = graders.grade_documents(model, item["question"], docs, 1, thresholds)
            numbered = graders.grade_documents_for_answer(model, item["question"], docs, 1, thresholds)
            crag = graders.crag_grade(model, item["question"], docs, 1, thresholds)
            for label, rel, num, grade in zip(labels, relevance, numbered, crag):
                rows.append({"id": item["id"], "label": label, "relevant": rel.value.relevant, "p": rel.p,
                             "relevant_numbered": num.value.relevant, "p_numbered": num.p, "crag": grade.value.grade,
                             "method": rel.method, "fallback": rel.fallback or num.fallback or grade.fallback})
    return summary(rows, items, model, thresholds, time.perf_counter() - start)


def summary(rows: list[dict], items: list, model, thresholds, seconds: float) -> dict:
    positive = [r for r in rows if r["label"] == "relevant"]
    negative = [r for r in rows if r["label"] == "irrelevant"]

    def share(rows_, test) -> str:
        return f"{sum(test(r) for r in rows_)} of {len(rows_)}"

    def area(key: str):
        scored = [(r[key], r["label"] == "relevant") for r in positive + negative if r[key] is not None]
        value = auc(scored)
        return None if value is None else round(value, 3)

    return {"model": model_key(model) or "?", "questions": len(items), "method": rows[0]["method"] if rows else "",
            "thresholds": {g: thresholds.shown(g) for g in ("relevance", "relevance_ratio", "crag")},
            "relevance: relevant judged yes": share(positive, lambda r: r["relevant"] == "yes"),
            "relevance: irrelevant judged no": share(negative, lambda r: r["relevant"] == "no"),
            "relevance: AUC of p": area("p"),
            "numbered relevance: relevant judged yes": share(positive, lambda r: r["relevant_numbered"] == "yes"),
            "numbered relevance: irrelevant judged no": share(negative, lambda r: r["relevant_numbered"] == "no"),
            "numbered relevance: AUC of p": area("p_numbered"),
            "crag: relevant judged correct": share(positive, lambda r: r["crag"] == "correct"),
            "crag: relevant not judged incorrect": share(positive, lambda r: r["crag"] != "incorrect"),
            "crag: irrelevant judged incorrect": share(negative, lambda r: r["crag"] == "incorrect"),
            "fallbacks": sum(r["fallback"] for r in rows), "seconds": round(seconds, 1), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="embedded")
    parser.add_argument("--model")
    parser.add_argument("--data-dir")
    parser.add_argument("--every", type=int, default=1, help="every n-th question (a quicker sample)")
    parser.add_argument("--offset", type=int, default=0, help="start at this question (--every 2 --offset 1: the other half)")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--written", action="store_true", help="read the verdicts the model writes (as before)")
    parser.add_argument("--thresholds", help='override the thresholds, e.g. "relevance=0.5,crag=0.3:0.7"')
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = load_settings(provider=args.provider, model=args.model, data_dir=args.data_dir)
    if args.thresholds:
        settings = settings.with_(grader_thresholds=args.thresholds)
    report = probe(settings, args.every, args.limit, args.written, args.offset)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    for row in report["rows"]:
        p = "" if row["p"] is None else f"p={row['p']:.3f} p_numbered={row['p_numbered']:.3f} "
        print(f"{row['id']:12} {row['label']:10} {p}relevant={row['relevant']:3} numbered={row['relevant_numbered']:3} "
              f"crag={row['crag']}")
    print({k: v for k, v in report.items() if k != "rows"})


if __name__ == "__main__":
    main()
