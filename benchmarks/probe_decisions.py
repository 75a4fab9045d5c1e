"""Probe the decisions a model makes, without running whole patterns: Adaptive's router and Self-RAG's
retrieval decision over the built-in question set.

    python -m benchmarks.probe_decisions [--provider embedded] [--model NAME] [--data-dir DIR] [--set FILE] [--json]

benchmarks/own_corpora.jsonl asks about the two non-sample test corpora (tests/corpora), once they are
ingested as collections ``hanbit_bikes`` and ``apiary_handbook`` with their descriptions.

Route accuracy counts the answerable questions with one expected route (a single collection, web, or
none = direct); the retrieval decision should be "yes" for every answerable question that has sources
and "no" for the rest. Unanswerable questions are shown but not scored.
A measurement (printed), never a test.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from core.config import load_settings
from core.graders import needs_retrieval, route_question
from core.knowledge import KnowledgeBase
from core.models import get_chat_model
from core.question_set import BUILTIN, load_question_set
from core.sources import active_sources


def expected_route(item: dict) -> str | None:
    sources = item["sources"]
    if not item["answerable"]:
        return None  # looking somewhere before declining is as right as not looking (as in core.evaluate)
    if not sources:
        return "direct"
    return sources[0] if len(sources) == 1 else None  # several collections: no single right route


def probe(settings, limit: int | None = None, question_set=BUILTIN) -> dict:
    kb = KnowledgeBase(settings)
    kb.ensure_samples()
    sources = active_sources(kb)
    model = get_chat_model(settings, role="grader")
    items = load_question_set(question_set)[:limit]
    rows, start = [], time.perf_counter()
    # one decision over every question, then the other: consecutive prompts share their system text, which
    # llama.cpp then reads once (alternating the two would make it re-read each system text every call)
    routes = [route_question(model, item["question"], sources) for item in items]
    needs = [needs_retrieval(model, item["question"], sources) for item in items]
    for item, route, need in zip(items, routes, needs):
        rows.append({"id": item["id"], "expected": expected_route(item), "route": route.value.route,
                     "route_fallback": route.fallback, "retrieve": need.value.retrieve,
                     "retrieve_expected": ("yes" if item["sources"] else "no") if item["answerable"] else None})
    routed = [r for r in rows if r["expected"]]
    judged = [r for r in rows if r["retrieve_expected"]]
    return {
        "model": getattr(model, "model_name", settings.model), "questions": len(rows),
        "route_accuracy": round(sum(r["route"] == r["expected"] for r in routed) / max(len(routed), 1), 3),
        "routed_questions": len(routed), "route_fallbacks": sum(r["route_fallback"] for r in rows),
        "retrieval_accuracy": round(sum(r["retrieve"] == r["retrieve_expected"] for r in judged) / max(len(judged), 1), 3),
        "seconds": round(time.perf_counter() - start, 1), "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="embedded")
    parser.add_argument("--model")
    parser.add_argument("--data-dir")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--set", help="a JSONL question set (default: the built-in one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = load_settings(provider=args.provider, model=args.model, data_dir=args.data_dir)
    report = probe(settings, args.limit, Path(args.set) if args.set else BUILTIN)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    for r in report["rows"]:
        mark = "" if r["expected"] is None else ("ok " if r["route"] == r["expected"] else "XX ")
        print(f"{mark:3} {r['id']:16} route={r['route']:16} expected={r['expected'] or '-':16} retrieve={r['retrieve']}"
              f" (expected {r['retrieve_expected']})")
    print({k: v for k, v in report.items() if k != "rows"})


if __name__ == "__main__":
    main()
