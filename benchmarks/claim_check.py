"""Measure the claim checker (core.llm.claims.check) on labelled sentences over the sample corpora.

    python -m benchmarks.claim_check [--mode rules|model] [--provider embedded] [--model NAME]
                                     [--data-dir DIR] [--set FILE] [--batch N] [--embeddings] [--json]

benchmarks/claims_labelled.jsonl holds one sentence per line with the chunks a run would have retrieved
(the chunk that answers and one or two others), a label: supported or unsupported, and a kind
(invented_number, invented_date, negation, contradiction, absent, number_of_other_item, number_same_span,
paraphrase, cross_language, number_elsewhere, time_form; figure_untied: a figure of one of several items the
line's ``question`` matches, not saying which, and figure_named: the same figures tied to their items). Each
sentence is one answer. The model's verdicts are
read from its probabilities against the ``claim`` threshold (``--thresholds claim=P`` to try another), or as
it writes them with ``--written``. The lines marked
``held_out`` were written after the rules were tuned on the others (--held-out / --tuned: only those); the twelve
whose ``written`` is "session 23" after the rules for negating prefixes, enumerations, figures listed in step and
sentences pricing two items, on chunks the app indexes.

Printed: caught = unsupported sentences the checker did not call supported (unsupported, or unchecked:
never accepted) ÷ unsupported; false alarms = supported sentences it did not call supported ÷ supported;
both per kind; milliseconds per answer (the embedder's first pass over the spans, and again cached, with
--embeddings). Targets on the embedded Qwen default in model mode: ≥ 85 % caught, ≤ 10 % false alarms.
A measurement (printed), never a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

from core.config import load_settings
from core.llm.claims.check import check_claims
from core.llm.verdicts import written_verdicts

DATA = Path(__file__).resolve().parent / "claims_labelled.jsonl"


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged_supported(result: dict) -> bool:
    """The answer passes when every claim is supported (no claims at all: nothing to pass)."""
    claims = [c for c in result["claims"] if c["verdict"] != "no_claim"]
    return bool(claims) and all(c["verdict"] == "supported" for c in claims)


def run(items: list[dict], mode: str, model, embeddings, batch: int,
        thresholds=None) -> tuple[list[dict], list[float]]:
    rows, times = [], []
    for item in items:
        start = time.perf_counter()
        result = check_claims(item["answer"], item["documents"], question=item.get("question", ""), mode=mode,
                              model=model, embeddings=embeddings, batch=batch, max_checks=8, thresholds=thresholds)
        times.append((time.perf_counter() - start) * 1000)
        claim = next((c for c in result["claims"] if c["verdict"] != "no_claim"), None)
        rows.append({"answer": item["answer"], "label": item["label"], "kind": item["kind"],
                     "passed": judged_supported(result), "verdict": claim["verdict"] if claim else "no_claim",
                     "by": claim["checked_by"] if claim else "", "reason": claim["reason"] if claim else "",
                     "p": claim.get("p") if claim else None,
                     "llm_calls": result["cost"]["llm_calls"], "tokens": result["cost"]["tokens"]})
    return rows, times


def summary(rows: list[dict], times: list[float]) -> dict:
    unsupported = [r for r in rows if r["label"] == "unsupported"]
    supported = [r for r in rows if r["label"] == "supported"]
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        wrong = r["passed"] if r["label"] == "unsupported" else not r["passed"]
        kinds[f"{r['label']}/{r['kind']}"][0] += 0 if wrong else 1
        kinds[f"{r['label']}/{r['kind']}"][1] += 1
    return {
        "caught": sum(not r["passed"] for r in unsupported), "unsupported": len(unsupported),
        "false_alarms": sum(not r["passed"] for r in supported), "supported": len(supported),
        "by_kind": {k: {"right": v[0], "of": v[1]} for k, v in sorted(kinds.items())},
        "ms_per_answer": round(statistics.mean(times), 1) if times else 0.0,
        "ms_max": round(max(times), 1) if times else 0.0,
        "llm_calls": sum(r["llm_calls"] for r in rows), "tokens": sum(r["tokens"] for r in rows),
    }


def render(s: dict, rows: list[dict], label: str) -> str:
    pct = lambda a, b: f"{100 * a / b:.0f} %" if b else "-"  # noqa: E731
    lines = [f"== {label}",
             f"caught       {s['caught']}/{s['unsupported']} unsupported ({pct(s['caught'], s['unsupported'])})",
             f"false alarms {s['false_alarms']}/{s['supported']} supported ({pct(s['false_alarms'], s['supported'])})",
             f"time         {s['ms_per_answer']} ms per answer (max {s['ms_max']} ms); {s['llm_calls']} LLM calls, "
             f"{s['tokens']} tokens", "per kind (right / of):"]
    lines += [f"  {k:<38} {v['right']}/{v['of']}" for k, v in s["by_kind"].items()]
    misses = [r for r in rows if r["passed"] == (r["label"] == "unsupported")]
    if misses:
        lines.append("wrong:")
        lines += [f"  [{r['label'][:5]} {r['kind']}] {r['verdict']} ({r['by']}): {r['answer']}  -- {r['reason'][:90]}"
                  for r in misses]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("rules", "model"), default="rules")
    parser.add_argument("--provider")
    parser.add_argument("--model")
    parser.add_argument("--data-dir")
    parser.add_argument("--set", default=str(DATA))
    parser.add_argument("--batch", type=int, default=1, help="claims per model call")
    parser.add_argument("--embeddings", action="store_true", help="rank spans with the configured embedder too")
    parser.add_argument("--held-out", action="store_true", help="only the sentences written after tuning")
    parser.add_argument("--tuned", action="store_true", help="only the sentences the rules were tuned on")
    parser.add_argument("--written", action="store_true", help="the model's written verdicts, not its probabilities")
    parser.add_argument("--thresholds", help='override the thresholds, e.g. "claim=0.4"')
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    settings = load_settings(provider=args.provider, model=args.model, data_dir=args.data_dir)
    items = load(Path(args.set))
    if args.held_out or args.tuned:
        items = [i for i in items if bool(i.get("held_out")) == bool(args.held_out)]
    model = embeddings = None
    if args.mode == "model":
        from core.llm.models import get_chat_model

        model = get_chat_model(settings, role="grader")
    if args.embeddings:
        from core.llm.embeddings import get_embeddings

        embeddings = get_embeddings(settings)
    thresholds = None
    if model is not None:
        from core.llm.thresholds import model_key, thresholds_for

        thresholds = thresholds_for(settings.with_(grader_thresholds=args.thresholds or ""), model_key(model))
    with written_verdicts() if args.written else contextlib.nullcontext():
        rows, times = run(items, args.mode, model, embeddings, args.batch, thresholds)
    out = {"mode": args.mode, "embeddings": bool(embeddings), "method": "text" if args.written else "probability",
           "claim_threshold": thresholds.cut("claim") if thresholds else None, "first": summary(rows, times),
           "rows": rows}
    label = f"mode {args.mode}" + (f", model {settings.model or 'default'}" if model else "") + \
        (", embeddings (first pass)" if embeddings else ", term overlap only")
    text = [render(out["first"], rows, label)]
    if embeddings:  # spans and claims now cached: what a run over chunks seen before pays
        rows2, times2 = run(items, args.mode, model, embeddings, args.batch, thresholds)
        out["cached"] = summary(rows2, times2)
        text.append(f"== cached embeddings: {out['cached']['ms_per_answer']} ms per answer "
                    f"(max {out['cached']['ms_max']} ms)")
    print(json.dumps(out, ensure_ascii=False, indent=2) if args.json else "\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
