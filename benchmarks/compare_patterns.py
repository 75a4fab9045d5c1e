"""Compare every pattern on one question with the Compare page's engine (core.studio.compare), without a browser.

    python -m benchmarks.compare_patterns ["question"] [--model NAME] [--data-dir DIR] [--patterns a,b] [--json]
    python -m benchmarks.compare_patterns --cache-side-by-side [--patterns a,b] [--json]
    python -m benchmarks.compare_patterns --lookup-side-by-side [--patterns a,b] [--json]

The comparison is saved like one made on the page (it opens there under "saved comparisons"). Prints
one row per pattern: why it stopped, LLM calls, tokens, seconds, sources, and the trace events that
explain the stop (router choices, grader verdicts, agent actions). scripts/demo_compare.py does the
same through the page in Chromium. A measurement (printed), never a test.

``--cache-side-by-side`` (embedded model) runs the patterns one after another, first with the
prompt-state cache off, then on, in one process (``--isolated``: each from an empty cache): per
pattern the prompt tokens sent and read, seconds, and whether the
two answers are identical, then the totals and their ratios, the CPU line and the peak RSS.

``--lookup-side-by-side`` (embedded model) does the same with prompt-lookup decoding off, then on (the
prompt-state cache on for both, emptied before each side): per pattern seconds, decode tokens/s, drafts
accepted and whether the answers are identical; the wall-time ratio and each side's peak RSS (VmHWM, reset
between the sides where the kernel allows it). ``python -m benchmarks.lookup_speed`` measures answer calls alone.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

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


def _forget() -> None:
    """An empty prompt cache and live context: nothing read before is reused."""
    from core.llm import embedded_llm

    embedded_llm.PROMPT_CACHE.clear()
    for llama in embedded_llm._llama_cache.values():
        llama.stable_tokens = 0


def _one_run(pattern_id: str, question: str, settings, isolated: bool) -> dict:
    """One pattern's run: tokens sent and read, seconds, answer (from a clean cache when ``isolated``)."""
    from core.llm import embedded_llm
    from core.run.runner import run

    if isolated:
        _forget()
    before = dict(embedded_llm.USAGE)
    started = time.perf_counter()
    result = run(pattern_id, question, settings)
    usage = {k: embedded_llm.USAGE[k] - before[k] for k in before}
    return {"seconds": round(time.perf_counter() - started, 1), "sent": usage["prompt_tokens"],
            "read": usage["prompt_eval_tokens"], "calls": usage["calls"],
            "answer": result.get("answer") or result.get("error") or "",
            "reason": result.get("termination_reason", ""), "decoding": result.get("decoding") or {}}


def cache_side_by_side(question: str, patterns: list[str], settings, isolated: bool = False) -> dict:
    """Every pattern with the cache off, then on (same process, same question); rows and totals.

    By default the patterns run one after another on one cache, as on the Compare page (a document one
    pattern graded is restored for the next); ``isolated`` starts each pattern from an empty cache.
    """
    from core.knowledge.base import KnowledgeBase
    from core.llm.llama_runtime import cpu_features

    KnowledgeBase(settings).ensure_samples()  # a fresh data directory has no collections yet (the app makes them)
    runs = {}
    for mb in (0, settings.embedded_cache_mb or 1024):
        _forget()
        runs[mb] = {p: _one_run(p, question, settings.with_(embedded_cache_mb=mb), isolated) for p in patterns}
    off, on = runs.values()
    rows = [{"pattern": p, "sent": off[p]["sent"], "read_off": off[p]["read"], "read_on": on[p]["read"],
             "s_off": off[p]["seconds"], "s_on": on[p]["seconds"], "calls": on[p]["calls"],
             "identical": off[p]["answer"] == on[p]["answer"], "reason": on[p]["reason"]} for p in patterns]
    total = {key: round(sum(r[key] for r in rows), 1) for key in ("sent", "read_off", "read_on", "s_off", "s_on")}
    return {"question": question, "cpu": cpu_features(), "isolated": isolated, "rows": rows, "total": total,
            "read_ratio_on": round(total["read_on"] / max(total["sent"], 1), 3),
            "read_ratio_off": round(total["read_off"] / max(total["sent"], 1), 3),
            "time_ratio": round(total["s_on"] / max(total["s_off"], 0.1), 3),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "answers": {p: {"off": off[p]["answer"], "on": on[p]["answer"]} for p in patterns}}


def _peak_rss_mb(reset: bool = False) -> int:
    """This process's peak RSS in MB (VmHWM); ``reset`` starts a new peak from now (Linux clear_refs 5)."""
    if reset:
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
        except OSError:
            pass  # the peak then covers both sides: the report says the process's peak
    with open("/proc/self/status") as fh:
        return next((int(line.split()[1]) // 1024 for line in fh if line.startswith("VmHWM:")), 0)


def lookup_side_by_side(question: str, patterns: list[str], settings) -> dict:
    """Every pattern with prompt lookup off, then on (cache on for both, emptied before each side)."""
    from core.knowledge.base import KnowledgeBase
    from core.llm.llama_runtime import cpu_features

    KnowledgeBase(settings).ensure_samples()
    runs, peaks = {}, {}
    for flag in (False, True):
        _forget()
        _peak_rss_mb(reset=True)
        runs[flag] = {p: _one_run(p, question, settings.with_(embedded_lookup=flag), False) for p in patterns}
        peaks[flag] = _peak_rss_mb()
    off, on = runs[False], runs[True]
    rows = [{"pattern": p, "s_off": off[p]["seconds"], "s_on": on[p]["seconds"],
             "tps_off": off[p]["decoding"].get("decode_tokens_per_s"), "tps_on": on[p]["decoding"].get("decode_tokens_per_s"),
             "drafted": on[p]["decoding"].get("drafted", 0), "accepted": on[p]["decoding"].get("accepted", 0),
             "identical": off[p]["answer"] == on[p]["answer"], "reason": on[p]["reason"]} for p in patterns]
    total = {key: round(sum(r[key] for r in rows), 1) for key in ("s_off", "s_on", "drafted", "accepted")}
    return {"question": question, "cpu": cpu_features(), "rows": rows, "total": total,
            "time_ratio": round(total["s_on"] / max(total["s_off"], 0.1), 3),
            "identical": sum(r["identical"] for r in rows),
            "acceptance": round(total["accepted"] / total["drafted"], 3) if total["drafted"] else None,
            "peak_rss_mb": {"off": peaks[False], "on": peaks[True]},
            "answers": {p: {"off": off[p]["answer"], "on": on[p]["answer"]} for p in patterns}}


def print_lookup_side_by_side(report: dict) -> None:
    print(f"CPU: {report['cpu']}")
    print(f"{'pattern':13} {'s off':>7} {'s on':>7} {'tok/s off':>9} {'tok/s on':>9} {'accepted':>13} identical")
    for r in report["rows"]:
        print(f"{r['pattern']:13} {r['s_off']:>7} {r['s_on']:>7} {r['tps_off'] or '-':>9} {r['tps_on'] or '-':>9} "
              f"{str(r['accepted']) + '/' + str(r['drafted']):>13} {'yes' if r['identical'] else 'NO'}")
    t = report["total"]
    print(f"{'total':13} {t['s_off']:>7} {t['s_on']:>7}")
    print(f"time on/off {report['time_ratio']}; identical answers {report['identical']} of {len(report['rows'])}; "
          f"drafts accepted {report['acceptance']}; peak RSS off {report['peak_rss_mb']['off']} MB, "
          f"on {report['peak_rss_mb']['on']} MB")


def print_side_by_side(report: dict) -> None:
    print(f"CPU: {report['cpu']}")
    print(f"{'pattern':13} {'sent':>6} {'read off':>8} {'read on':>8} {'s off':>7} {'s on':>7} identical")
    for r in report["rows"]:
        print(f"{r['pattern']:13} {r['sent']:>6} {r['read_off']:>8} {r['read_on']:>8} {r['s_off']:>7} {r['s_on']:>7}"
              f" {'yes' if r['identical'] else 'NO'}")
    t = report["total"]
    print(f"{'total':13} {t['sent']:>6} {t['read_off']:>8} {t['read_on']:>8} {t['s_off']:>7} {t['s_on']:>7}")
    print(f"read/sent: off {report['read_ratio_off']}, on {report['read_ratio_on']}; "
          f"time on/off {report['time_ratio']}; peak RSS {report['peak_rss_mb']} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question", nargs="?", default=QUESTION)
    parser.add_argument("--provider", default="embedded")
    parser.add_argument("--model")
    parser.add_argument("--data-dir")
    parser.add_argument("--patterns", help="comma-separated pattern ids (default: all)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cache-side-by-side", action="store_true",
                        help="every pattern with the prompt-state cache off, then on (embedded model)")
    parser.add_argument("--isolated", action="store_true", help="with --cache-side-by-side: each pattern from an "
                        "empty cache (default: one cache across the patterns, as on the Compare page)")
    parser.add_argument("--lookup-side-by-side", action="store_true",
                        help="every pattern with prompt-lookup decoding off, then on (embedded model, cache on)")
    args = parser.parse_args()
    patterns = args.patterns.split(",") if args.patterns else pattern_ids()
    unknown = sorted(set(patterns) - set(pattern_ids()))
    if unknown:
        parser.error(f"unknown pattern(s): {', '.join(unknown)}; known: {', '.join(pattern_ids())}")
    settings = load_settings(provider=args.provider, model=args.model, data_dir=args.data_dir)
    if args.lookup_side_by_side:
        report = lookup_side_by_side(args.question, patterns, settings)
        print(json.dumps(report, ensure_ascii=False, indent=2)) if args.json else print_lookup_side_by_side(report)
        return
    if args.cache_side_by_side:
        report = cache_side_by_side(args.question, patterns, settings, args.isolated)
        print(json.dumps(report, ensure_ascii=False, indent=2)) if args.json else print_side_by_side(report)
        return
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
