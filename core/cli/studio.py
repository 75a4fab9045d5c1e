"""Studio features: evaluate patterns on a question set, list their bounds, verify an answer's claims."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core.cli import common
from core.config import Settings


def cmd_eval(settings: Settings, args) -> int:
    from core.patterns import pattern_ids
    from core.studio import evaluate
    from core.studio.question_set import BUILTIN, QuestionSetError, load_question_set, runs_problem, spread, unknown_sources

    patterns = args.patterns.split(",") if args.patterns else pattern_ids()
    unknown = [p for p in patterns if p not in pattern_ids()]
    if unknown:
        sys.stderr.write(f"error: unknown pattern(s) {', '.join(unknown)}; choose from {', '.join(pattern_ids())}\n")
        return 2
    path = Path(args.set) if args.set else BUILTIN
    try:
        items = load_question_set(path)
    except QuestionSetError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if args.category:
        items = [i for i in items if i["category"] == args.category]
    items = spread(items, args.limit)
    if not items:
        sys.stderr.write(f"error: no question of category {args.category!r} in {path.name}\n")
        return 2
    problem = runs_problem(len(items), len(patterns), settings)
    if problem:  # before the collections are opened, a model is loaded or a run starts
        sys.stderr.write(f"error: {problem}\n")
        return 2
    kb = common.knowledge(settings)
    common.prepare_model(settings)
    missing = unknown_sources(items, kb.names())
    if missing:
        sys.stderr.write(f"warning: {path.name} expects collections that do not exist here: {', '.join(missing)}\n")
    report = evaluate.evaluate(settings, patterns, items, progress=common.progress, set_name=path.name)
    saved = evaluate.save(report, settings)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else evaluate.render(report))
    sys.stderr.write(f"saved to {saved}\n")
    return 0


def cmd_patterns(settings: Settings, args) -> int:
    from core.knowledge.base import KnowledgeBase
    from core.knowledge.sources import active_sources
    from core.patterns import all_patterns

    try:
        sources = len(active_sources(KnowledgeBase(settings)))
    except Exception as exc:  # an unreadable store: print the worst-case bounds instead
        sys.stderr.write(f"note: cannot count the sources ({exc}); showing the worst case\n")
        sources = None
    counted = "worst case" if sources is None else f"{sources} enabled source(s)"
    for p in all_patterns():
        here, worst = p.max_llm_calls(settings, sources), p.max_llm_calls(settings)
        print(f"{p.id:<13} {p.title:<32} at most {here:>3} LLM calls with {counted}"
              + (f" (up to {worst} with more sources)" if worst != here else "")
              + f"; recursion limit {p.recursion_limit(settings)}")
    print(f"(k={settings.k}, rewrites={settings.max_rewrites}, regenerations={settings.max_generations}, "
          f"iterations={settings.max_iterations})")
    return 0


def cmd_verify(settings: Settings, args) -> int:
    from core.cli.verify import run

    return run(settings, args, common.prepare_model)


def register(sub) -> dict:
    """Add this group's sub-commands to ``sub``; return command -> handler."""
    p = sub.add_parser("eval", help="score patterns on a question set (JSONL; default: the built-in set)")
    p.add_argument("--set", help="a JSONL question set: question, sources, facts, answerable per line")
    p.add_argument("--patterns", help="comma-separated pattern ids (default: all)")
    p.add_argument("--limit", type=common.positive, help="only N questions, taken in turn from each category")
    p.add_argument("--category", help="only one category (menu, wine, pairing, policy_both, ...)")
    p.add_argument("--json", action="store_true")
    sub.add_parser("patterns", help="list the patterns and the most LLM calls each run can make")
    p = sub.add_parser("verify", help="check every sentence of an answer against documents (JSON on stdin or --file)",
                       description='Reads {"question", "answer", "documents": [{"text", "source"}]} and prints each '
                       "claim's verdict (supported, unsupported, no_claim, unchecked) with its evidence.")
    p.add_argument("--file", help="read the request from this file instead of stdin")
    p.add_argument("--mode", choices=("off", "rules", "model"), help="default: RAG_VERIFY_CLAIMS (model)")
    p.add_argument("--batch", type=common.positive, default=1, help="claims per model call (default 1)")
    p.add_argument("--embeddings", action="store_true", help="also rank evidence with the configured embedder")
    p.add_argument("--json", action="store_true")
    return {"eval": cmd_eval, "patterns": cmd_patterns, "verify": cmd_verify}
