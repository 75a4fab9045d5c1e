"""Probe the decisions a model makes, without running whole patterns: Adaptive's router, Self-RAG's
retrieval decision, the ReAct (text) agent's first step as written and as read from its probabilities
(``tool``: core.llm.tool_choice's first step, as the agents read it), over the built-in question set, and
Self-RAG's usefulness grade (``useful``) over benchmarks/usefulness_labelled.jsonl.

    python -m benchmarks.probe_decisions [--provider embedded] [--model NAME] [--data-dir DIR] [--set FILE]
                                         [--decisions route,retrieve,react,tool,kind,useful] [--json]

``kind`` is Auto's kind classifier over the questions that carry a kind (question sets written by ``core
questions``, and the built-in set): read right per kind, what each kind was read as, and the unsure readings.

``tool`` is scored on both sides of its labels: lookups sent to an expected collection's tool, and messages that
need no search (greetings, general questions) answered at once; a reading below the ``tool`` threshold is
counted as what it read, and the number of such unsure readings is given.

benchmarks/own_corpora.jsonl asks about the two non-sample test corpora (tests/support/corpora), once they are
ingested as collections ``hanbit_bikes`` and ``apiary_handbook`` with their descriptions.

Route accuracy counts the answerable questions with one expected route (a single collection, web, or
none = direct); the retrieval decision should be "yes" for every answerable question that has sources
and "no" for the rest. ReAct's first step is asked as in a run without a web key (no web tool): it should
call a tool of one of the expected collections, or answer at once where nothing needs looking up; web
questions are shown but not scored (without the web tool no first step is plainly right). Unanswerable
questions are shown but not scored. ``useful`` grades written answers labelled useful or not (complete answers,
the main fact alone; against answers of another kind than asked, another question's answer, a decline), at the
model's ``useful`` threshold: both rates are given, and the AUC of p over the labels.
A measurement (printed), never a test.
"""

from __future__ import annotations

import argparse
import json
import operator
import time
from collections import Counter
from pathlib import Path

from core.config import load_settings
from core.knowledge.base import KnowledgeBase
from core.knowledge.sources import active_sources
from core.llm.graders import QUESTION_KINDS, classify_kind, grade_usefulness, needs_retrieval, route_question
from core.llm.models import get_chat_model
from core.llm.tool_choice import ANSWER, read_first_step
from core.patterns.react import STOP, parse_step, resolve_tool_name, step_messages
from core.patterns.tools import source_tools
from core.studio.question_set import BUILTIN, load_question_set


def expected_route(item: dict) -> str | None:
    sources = item["sources"]
    if not item["answerable"]:
        return None  # looking somewhere before declining is as right as not looking (as in core.studio.evaluate)
    if not sources:
        return "direct"
    return sources[0] if len(sources) == 1 else None  # several collections: no single right route


def expected_first_step(item: dict) -> list[str] | None:
    """The right first ReAct steps: a tool of an expected collection, or "final" where nothing needs looking up."""
    sources = item["sources"]
    if not item["answerable"] or "web" in sources:
        return None
    return sorted(sources) if sources else ["final"]


def react_first_step(model, question: str, tools) -> str:
    """The tool the agent's first reply calls ("final" for an answer at once, "error" for a malformed reply)."""
    step = parse_step(model.invoke(step_messages(question, tools, []), stop=STOP).content)
    if "final" in step or "error" in step:
        return "final" if "final" in step else "error"
    return resolve_tool_name(step["action"], tools)


def tool_first_step(model, question: str, tools, sources) -> tuple[str, bool]:
    """The first step read from the model's probabilities ("final" for answering) and whether it was confident,
    as the text-protocol agent reads it (core.patterns.next_step)."""
    outcome = read_first_step(model, step_messages(question, tools, []), {t.name: t.line() for t in tools}, question,
                              sources)
    if outcome is None:
        return "unread", False
    return ("final" if outcome.value.step == ANSWER else outcome.value.step), outcome.value.confident


USEFULNESS_LABELLED = Path(__file__).with_name("usefulness_labelled.jsonl")


def usefulness(model) -> dict:
    """The usefulness grade on both sides of its labels: useful answers passed, not useful ones failed, and AUC."""
    items = [json.loads(line) for line in USEFULNESS_LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = []
    for item in items:
        outcome = grade_usefulness(model, item["question"], item["answer"])
        rows.append({"question": item["question"], "why": item["why"], "label": item["useful"], "p": outcome.p,
                     "useful": outcome.value.useful == "yes", "threshold": outcome.threshold})
    pos = [r for r in rows if r["label"]]
    neg = [r for r in rows if not r["label"]]
    scored = [(a["p"], b["p"]) for a in pos for b in neg if a["p"] is not None and b["p"] is not None]
    auc = round(sum((x > y) + 0.5 * (x == y) for x, y in scored) / len(scored), 3) if scored else None
    return {"useful_passed": f"{sum(r['useful'] for r in pos)}/{len(pos)}",
            "not_useful_failed": f"{sum(not r['useful'] for r in neg)}/{len(neg)}", "auc": auc,
            "threshold": rows[0]["threshold"] if rows else None, "rows": rows}


def kind_rates(rows: list[dict]) -> dict:
    """Auto's kind classifier on every side of its labels: per labelled kind, how many were read as it, what the
    others were read as, and how many readings were unsure (top p below the ``kind`` threshold)."""
    judged = [r for r in rows if r.get("kind_expected") and "kind" in r]
    per_kind = {}
    for kind in QUESTION_KINDS:
        mine = [r for r in judged if r["kind_expected"] == kind]
        if mine:
            per_kind[kind] = {"read_right": f"{sum(r['kind'] == kind for r in mine)}/{len(mine)}",
                              "read_as": dict(sorted(Counter(r["kind"] for r in mine).items()))}
    unsure = [r for r in judged if r["kind_p"] is not None and r["kind_p"] < r["kind_threshold"]]
    return {**_rate(rows, "kind", "kind_expected", operator.eq), "per_kind": per_kind, "unsure": len(unsure),
            "unsure_right": sum(r["kind"] == r["kind_expected"] for r in unsure)}


def _rate(rows: list[dict], got: str, expected: str, ok) -> dict:
    judged = [r for r in rows if r.get(expected) is not None and got in r]
    accuracy = round(sum(ok(r[got], r[expected]) for r in judged) / len(judged), 3) if judged else None
    return {"accuracy": accuracy, "judged": len(judged)}  # None: not probed, or nothing to judge


def probe(settings, limit: int | None = None, question_set=BUILTIN,
          decisions: tuple[str, ...] = ("route", "retrieve", "react")) -> dict:
    kb = KnowledgeBase(settings)
    kb.ensure_samples()
    sources = active_sources(kb)
    tools = source_tools(sources, web_ready=False)  # as in a run without a web key
    model = get_chat_model(settings, role="grader")
    items = load_question_set(question_set)[:limit]
    rows = [{"id": item["id"], "kind_expected": item.get("kind") if item.get("kind") in QUESTION_KINDS else None,
             "route_expected": expected_route(item),
             "retrieve_expected": ("yes" if item["sources"] else "no") if item["answerable"] else None,
             "react_expected": expected_first_step(item)} for item in items]
    start = time.perf_counter()
    # one decision over every question, then the next: consecutive prompts share their system text, which
    # llama.cpp then reads once (alternating them would make it re-read each system text every call)
    for item, row in zip(items, rows) if "route" in decisions else ():
        route = route_question(model, item["question"], sources)
        row.update(route=route.value.route, route_fallback=route.fallback)
    for item, row in zip(items, rows) if "retrieve" in decisions else ():
        row["retrieve"] = needs_retrieval(model, item["question"], sources).value.retrieve
    for item, row in zip(items, rows) if "react" in decisions else ():
        row["react"] = react_first_step(model, item["question"], tools)
    for item, row in zip(items, rows) if "tool" in decisions else ():
        row["tool"], row["tool_confident"] = tool_first_step(model, item["question"], tools, sources)
    for item, row in zip(items, rows) if "kind" in decisions else ():
        outcome = classify_kind(model, item["question"], sources)
        row.update(kind=outcome.value.kind, kind_p=outcome.p, kind_threshold=outcome.threshold,
                   kind_choices={k: round(v, 3) for k, v in (outcome.choices or {}).items()})
    useful = usefulness(model) if "useful" in decisions else None
    searches = [r for r in rows if r["react_expected"] and r["react_expected"] != ["final"]]
    answers = [r for r in rows if r["react_expected"] == ["final"]]
    return {
        "model": getattr(model, "model_name", settings.model), "questions": len(rows),
        "route": {**_rate(rows, "route", "route_expected", operator.eq),
                  "fallbacks": sum(r.get("route_fallback", False) for r in rows)},
        "retrieve": _rate(rows, "retrieve", "retrieve_expected", operator.eq),
        "react_first_step": {**_rate(rows, "react", "react_expected", lambda got, expected: got in expected),
                             "parse_errors": sum(r.get("react") == "error" for r in rows)},
        "tool_first_step": {**_rate(rows, "tool", "react_expected", lambda got, expected: got in expected),
                            "lookups_right_tool": _rate(searches, "tool", "react_expected", lambda g, e: g in e),
                            "no_search_answered": _rate(answers, "tool", "react_expected", lambda g, e: g in e),
                            "unsure": sum(r.get("tool_confident") is False for r in rows)},
        "kind": kind_rates(rows) if "kind" in decisions else None,
        "useful": useful,
        "seconds": round(time.perf_counter() - start, 1), "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="embedded")
    parser.add_argument("--model")
    parser.add_argument("--data-dir")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--set", help="a JSONL question set (default: the built-in one)")
    parser.add_argument("--decisions", default="route,retrieve,react",
                        help="comma-separated: route, retrieve, react, tool, kind, useful")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = load_settings(provider=args.provider, model=args.model, data_dir=args.data_dir)
    report = probe(settings, args.limit, Path(args.set) if args.set else BUILTIN, tuple(args.decisions.split(",")))
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    for r in (report["useful"] or {}).get("rows", []):
        mark = "ok" if r["useful"] == r["label"] else "XX"
        print(f"{mark} useful p={r['p'] if r['p'] is None else round(r['p'], 3)} ({'+' if r['label'] else '-'}) "
              f"{r['why']} | {r['question']}")
    for r in report["rows"]:
        cells = []
        for got, expected, ok in (("route", "route_expected", r.get("route") == r["route_expected"]),
                                  ("retrieve", "retrieve_expected", r.get("retrieve") == r["retrieve_expected"]),
                                  ("react", "react_expected", r.get("react") in (r["react_expected"] or ())),
                                  ("tool", "react_expected", r.get("tool") in (r["react_expected"] or ())),
                                  ("kind", "kind_expected", r.get("kind") == r["kind_expected"])):
            if got in r:
                mark = "  " if r[expected] is None else ("ok" if ok else "XX")
                want = ",".join(r[expected]) if isinstance(r[expected], list) else r[expected]
                p = f" p={r['kind_p']:.2f}" if got == "kind" and r.get("kind_p") is not None else ""
                cells.append(f"{mark} {got}={r[got]}{p} (expected {want or '-'})")
        if cells:
            print(f"{r['id']:16} " + " | ".join(cells))
    print({k: ({n: c for n, c in v.items() if n != "rows"} if k == "useful" and v else v)
           for k, v in report.items() if k != "rows"})


if __name__ == "__main__":
    main()
