"""How much of its token budget each structured call uses, over the built-in question set, on a real model.

    python -m benchmarks.budget_use [--model gemma-3-270m] [--patterns basic,self_rag] [--per-category 1]
                                    [--graph-chunks 8]

Every structured call (router, grader, rewriter, query writer, strip grader, claim check...) is allowed the
tokens its schema needs (core/llm/budgets.py). This runs patterns over questions of the built-in set and lists,
per pattern and node, the calls made, the most output tokens one of them wrote, its budget, and how many were
cut off at it. A schema whose budget is too small shows up as cut-offs; a budget far above the most used is slack
a stuck model could still fill. Free-text calls (answers) have no budget and are counted apart.

Graph RAG's extraction calls run in a background build, outside any run's callbacks: ``--graph-chunks N`` also
extracts the first N chunks of each sample collection, as a build would (its batches), and lists those calls as
pattern "graph build", node "extract".
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import defaultdict

from core.runtime.trace import TRUNCATED, UsageCallback


class BudgetRecorder:
    """Each finished chat-model call: the node, its budget (None for free text), output tokens, cut off or not."""

    def __init__(self, out: str | None = None) -> None:
        self.lock = threading.Lock()
        self.calls: list[dict] = []
        self.pattern = ""
        self.out = out

    def usage_callback(self) -> type[UsageCallback]:
        """A UsageCallback that also hands every finished call to this recorder."""
        recorder = self

        class Recording(UsageCallback):
            def on_llm_end(self, response, *, run_id, **kwargs) -> None:
                node, _, budget = self.started.get(run_id, ("?", 0.0, None))
                recorder.add(node, budget, response)
                super().on_llm_end(response, run_id=run_id, **kwargs)

        return Recording

    def add(self, node: str, budget: int | None, response) -> None:
        for gens in response.generations:
            for gen in gens:
                message = getattr(gen, "message", None)
                usage = getattr(message, "usage_metadata", None) or {}
                meta = getattr(message, "response_metadata", None) or {}
                info = getattr(gen, "generation_info", None) or {}
                reason = meta.get("finish_reason") or meta.get("done_reason") or info.get("finish_reason")
                call = {"pattern": self.pattern, "node": node, "budget": budget,
                        "output": int(usage.get("output_tokens", 0)),  # a verdict read from p stops at 1 by design
                        "cut_off": reason in TRUNCATED and not meta.get("verdict_probabilities")}
                with self.lock:
                    self.calls.append(call)
                    if self.out:
                        with open(self.out, "a", encoding="utf-8") as f:
                            f.write(json.dumps(call, ensure_ascii=False) + "\n")


def summarise(calls: list[dict]) -> list[dict]:
    """Per (pattern, node, budget): calls, most output tokens, cut-offs; free-text calls as budget None."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for call in calls:
        groups[(call["pattern"], call["node"], call["budget"])].append(call)
    return [{"pattern": p, "node": n, "budget": b, "calls": len(cs), "most_output": max(c["output"] for c in cs),
             "cut_off": sum(c["cut_off"] for c in cs),
             "over_budget": sum(b is not None and c["output"] > b for c in cs)}
            for (p, n, b), cs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0))]


def pick_questions(items: list[dict], per_category: int) -> list[dict]:
    """The first ``per_category`` questions of each category, in file order (0: all of them)."""
    if per_category <= 0:
        return items
    seen: dict[str, int] = defaultdict(int)
    out = []
    for item in items:
        if seen[item.get("category", "")] < per_category:
            seen[item.get("category", "")] += 1
            out.append(item)
    return out


def extract_samples(recorder: BudgetRecorder, settings, kb, chunks: int) -> None:
    """Graph extraction over the first ``chunks`` chunks of each sample collection, every call recorded."""
    from langchain_core.runnables import RunnableLambda

    from core.knowledge import entity_graph
    from core.knowledge.base import SAMPLE_COLLECTIONS
    from core.knowledge.graph_extraction import CHUNKS_PER_CALL, extract_batch
    from core.llm.models import get_chat_model

    model = get_chat_model(settings, role="grader")
    handler = recorder.usage_callback()()
    recorder.pattern = "graph build"
    for name in SAMPLE_COLLECTIONS:
        docs, _ = entity_graph.collection_chunks(kb, name, chunks)
        for start in range(0, len(docs), CHUNKS_PER_CALL):
            batch = docs[start:start + CHUNKS_PER_CALL]
            # run as a step named "extract", so the recorder files the call under it
            RunnableLambda(lambda b: extract_batch(model, b)).invoke(
                batch, {"callbacks": [handler], "metadata": {"langgraph_node": "extract"}})
            print(f"graph build {name}: {start + len(batch)} chunks, {len(recorder.calls)} calls so far",
                  file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    from core.cli import common
    from core.config import load_settings
    from core.llm.models import model_name
    from core.patterns import all_patterns
    from core.run import runner
    from core.studio.question_set import load_question_set

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model")
    ap.add_argument("--patterns", default=",".join(p.id for p in all_patterns()))
    ap.add_argument("--per-category", type=int, default=1, help="questions per category of the built-in set (0: all)")
    ap.add_argument("--calls", help="also append every call to this JSON-lines file as it ends (a long run cut short keeps them)")
    ap.add_argument("--graph-chunks", type=int, default=0,
                    help="also extract this many chunks of each sample collection into a graph, as a build does")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    settings = load_settings(model=args.model) if args.model else load_settings()
    kb = common.knowledge(settings)
    common.prepare_model(settings)
    recorder = BudgetRecorder(args.calls)
    if args.graph_chunks:
        extract_samples(recorder, settings, kb, args.graph_chunks)
    runner.UsageCallback = recorder.usage_callback()  # the runner makes one per run
    questions = pick_questions(load_question_set(), args.per_category)
    patterns = [p for p in args.patterns.split(",") if p]
    started = time.perf_counter()
    for pattern in patterns:
        recorder.pattern = pattern
        for item in questions:
            options = {"graph_wait": True} if pattern == "graph_rag" else {}
            runner.run(pattern, item["question"], settings, **options)
            print(f"{pattern} {item['id']}: {len(recorder.calls)} calls so far, {time.perf_counter() - started:.0f} s, "
                  f"{sum(c['cut_off'] for c in recorder.calls if c['budget'])} cut off at a budget", file=sys.stderr)
    rows = summarise(recorder.calls)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    print(f"{len(questions)} questions x {len(patterns)} patterns, model {model_name(settings)}, "
          f"{time.perf_counter() - started:.0f} s")
    print("| pattern | node | budget | calls | most output tokens | cut off | over budget |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pattern']} | {r['node']} | {r['budget'] or 'free text'} | {r['calls']} | {r['most_output']} "
              f"| {r['cut_off']} | {r['over_budget']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
