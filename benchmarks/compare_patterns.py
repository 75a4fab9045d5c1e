"""Compare every pattern on one question with the Compare page's engine (core.studio.compare), without a browser.

    python -m benchmarks.compare_patterns ["question"] [--model NAME] [--data-dir DIR] [--patterns a,b] [--json]

The comparison is saved like one made on the page (it opens there under "saved comparisons"). Prints
one row per pattern: why it stopped, LLM calls, tokens, seconds, sources, and the trace events that
explain the stop (router choices, grader verdicts, agent actions). scripts/demo_compare.py does the
same through the page in Chromium. A measurement (printed), never a test.
"""

from __future__ import annotations

import argparse
import json

from core.config import load_settings
from core.patterns import pattern_ids
from core.studio.compare import compare, metrics_rows

QUESTION = "스테이크와 어울리는 와인을 추천해주세요"
WHY_KINDS = ("route", "verdict", "rewrite", "stop", "error")


def why(result: dict, most: int = 8) -> list[str]:
    """The trace events that explain how the run went, shortest form: node, grader, verdict."""
    lines = []
    for ev in result.get("trace") or []:
        if ev.get("kind") in WHY_KINDS or ev.get("step") in ("action", "final"):
            lines.append(" ".join(str(x) for x in (ev.get("node"), ev.get("grader") or "", ev.get("verdict") or "",
                                                    ev.get("target") if ev.get("step") == "action" else "") if x))
    return lines[:most] + ([f"... {len(lines) - most} more"] if len(lines) > most else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--provider", default="embedded")
    parser.add_argument("--model")
    parser.add_argument("--data-dir")
    parser.add_argument("--patterns", help="comma-separated pattern ids (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    patterns = args.patterns.split(",") if args.patterns else pattern_ids()
    unknown = sorted(set(patterns) - set(pattern_ids()))
    if unknown:
        parser.error(f"unknown pattern(s): {', '.join(unknown)}; known: {', '.join(pattern_ids())}")
    settings = load_settings(provider=args.provider, model=args.model, data_dir=args.data_dir)
    record = compare(args.question, patterns, settings)
    rows = metrics_rows(record)
    for row in rows:
        result = record["results"][row["pattern"]]
        row["answer"] = (result.get("answer") or result.get("error") or "")[:200]
        row["why"] = why(result)
    if args.json:
        print(json.dumps({"question": args.question, "model": settings.model, "rows": rows}, ensure_ascii=False,
                         indent=2))
        return
    for row in rows:
        print(f"{row['pattern']:13} {row['termination_reason']:24} calls={row['llm_calls']:<3} tokens={row['tokens']:<6}"
              f" s={row['seconds']:<7} sources={row['sources']}")
        for line in row["why"]:
            print(f"    {line}")
        print(f"    answer: {row['answer'][:160]!r}")


if __name__ == "__main__":
    main()
