"""Probe the per-document graders on labelled documents, without running whole patterns: relevance as
Agentic asks it (one document a call) and as Self-RAG asks it (all documents, then "document [n]"), and
Corrective's correct / ambiguous / incorrect.

    python -m benchmarks.probe_relevance [--provider embedded] [--model NAME] [--data-dir DIR] [--every 2]
                                         [--limit N] [--json]

For each answerable question of the built-in set whose expected sources are sample collections, the
documents are the top 2 of each expected collection and the top 1 of other collections, four in all,
in an order fixed by their text (so the one that answers is not always first). A document holding
one of the question's key facts should be judged relevant (and not incorrect); a document from a
collection the question is not about should be judged not relevant (and incorrect); the others are
shown, not scored. A measurement (printed), never a test: run it before and after changing a grader's
prompt.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

from core.config import load_settings
from core.knowledge.base import SAMPLE_COLLECTIONS, KnowledgeBase
from core.llm import graders
from core.llm.claims.numbers import squeeze
from core.llm.models import get_chat_model
from core.studio.question_set import BUILTIN, load_question_set

DOCS_PER_QUESTION = 4


def labelled_documents(kb, item: dict) -> tuple[list, list[str]]:
    """The documents graded for one question and their labels: relevant, irrelevant or "?" (not scored)."""
    expected = item["sources"]
    docs = [doc for name in expected for doc in kb.search(name, item["question"], 2)]
    others = [name for name in SAMPLE_COLLECTIONS if name not in expected]
    docs += [doc for name in others[:max(0, DOCS_PER_QUESTION - len(docs))] for doc in kb.search(name, item["question"], 1)]
    docs = sorted(docs[:DOCS_PER_QUESTION], key=lambda d: hashlib.md5(d.page_content.encode(), usedforsecurity=False).hexdigest())
    labels = []
    for doc in docs:
        holds_fact = any(squeeze(fact) in squeeze(doc.page_content) for fact in item["facts"])
        labels.append("relevant" if holds_fact else "irrelevant" if doc.metadata["collection"] not in expected else "?")
    return docs, labels


def probe(settings, every: int = 1, limit: int | None = None) -> dict:
    kb = KnowledgeBase(settings)
    kb.ensure_samples()
    model = get_chat_model(settings, role="grader")
    items = [item for item in load_question_set(BUILTIN) if item["answerable"] and item.get("facts")
             and item["sources"] and set(item["sources"]) <= set(SAMPLE_COLLECTIONS)][::every][:limit]
    rows, start = [], time.perf_counter()
    for item in items:
        docs, labels = labelled_documents(kb, item)
        relevance = graders.grade_documents(model, item["question"], docs, 1)
        numbered = graders.grade_documents_for_answer(model, item["question"], docs, 1)
        crag = graders.crag_grade(model, item["question"], docs, 1)
        for label, rel, num, grade in zip(labels, relevance, numbered, crag):
            rows.append({"id": item["id"], "label": label, "relevant": rel.value.relevant,
                         "relevant_numbered": num.value.relevant, "crag": grade.value.grade,
                         "fallback": rel.fallback or num.fallback or grade.fallback})
    positive = [r for r in rows if r["label"] == "relevant"]
    negative = [r for r in rows if r["label"] == "irrelevant"]

    def share(rows_, test) -> str:
        return f"{sum(test(r) for r in rows_)} of {len(rows_)}"

    return {"model": getattr(model, "model_name", settings.model), "questions": len(items),
            "relevance: relevant judged yes": share(positive, lambda r: r["relevant"] == "yes"),
            "relevance: irrelevant judged no": share(negative, lambda r: r["relevant"] == "no"),
            "numbered relevance: relevant judged yes": share(positive, lambda r: r["relevant_numbered"] == "yes"),
            "numbered relevance: irrelevant judged no": share(negative, lambda r: r["relevant_numbered"] == "no"),
            "crag: relevant judged correct": share(positive, lambda r: r["crag"] == "correct"),
            "crag: relevant not judged incorrect": share(positive, lambda r: r["crag"] != "incorrect"),
            "crag: irrelevant judged incorrect": share(negative, lambda r: r["crag"] == "incorrect"),
            "fallbacks": sum(r["fallback"] for r in rows), "seconds": round(time.perf_counter() - start, 1),
            "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="embedded")
    parser.add_argument("--model")
    parser.add_argument("--data-dir")
    parser.add_argument("--every", type=int, default=1, help="every n-th question (a quicker sample)")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = load_settings(provider=args.provider, model=args.model, data_dir=args.data_dir)
    report = probe(settings, args.every, args.limit)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    for row in report["rows"]:
        print(f"{row['id']:12} {row['label']:10} relevant={row['relevant']:3} numbered={row['relevant_numbered']:3} "
              f"crag={row['crag']}")
    print({k: v for k, v in report.items() if k != "rows"})


if __name__ == "__main__":
    main()
