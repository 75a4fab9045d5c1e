"""Answer calls with prompt-lookup decoding on and off, side by side in one process (core/llm/lookup_decoding.py).

    python -m benchmarks.lookup_speed [--model NAME] [--questions N] [--data-dir DIR] [--max-tokens N]
                                      [--max-draft N] [--max-ngram N] [--json]

For each question of the built-in set (core/evalsets/builtin.jsonl; ``--questions N``: N of them, spread over
the categories) the documents are retrieved from the sample collections once, then the answer call the patterns
make (core.patterns.common.answer_from_documents: the same system text and request) runs with lookup off and
on, the order alternating per question, at temperature 0. Printed per question and in total: decode tokens/s
per side (tokens written / (call wall time - prompt reading time), the same measure for both sides), the
ratio, whether the answers are identical, the drafts accepted, and the CPU line and peak RSS (VmHWM;
the highest RSS seen after a call, per side). A measurement (printed), never a test: run it on idle cores.
"""

from __future__ import annotations

import argparse
import json
import time

from langchain_core.messages import HumanMessage, SystemMessage

from core import prompts
from core.config import load_settings
from core.knowledge.base import KnowledgeBase
from core.llm import lookup_decoding
from core.llm.embedded_llm import EmbeddedChatModel, get_llama
from core.llm.llama_runtime import cpu_features
from core.runtime.context import _capped
from core.studio.question_set import load_question_set, spread


def rss_mb(field: str = "VmRSS") -> int:
    """This process's resident memory (VmRSS) or its peak (VmHWM), in MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    return 0


def answer_messages(kb: KnowledgeBase, settings, item: dict) -> list:
    """The answer call's messages for one question, over the documents the embedded model would read."""
    docs = []
    for name in item.get("sources") or kb.names():
        if kb.exists(name):
            docs += kb.search(name, item["question"], k=settings.embedded_k)
    docs = sorted(docs, key=lambda d: -d.metadata.get("score", 0))[:settings.embedded_k]
    docs = [_capped(d, settings.embedded_doc_chars) for d in docs]
    return [SystemMessage(prompts.documents_system(docs)), HumanMessage(prompts.answer_request(item["question"]))]


def one_side(model: EmbeddedChatModel, messages: list) -> dict:
    started = time.perf_counter()
    reply = model.invoke(messages)
    wall_ms = (time.perf_counter() - started) * 1000
    meta = reply.response_metadata
    tokens = int(reply.usage_metadata["output_tokens"])
    decode_ms = max(wall_ms - float(meta.get("prompt_eval_ms", 0)), 1.0)
    return {"answer": reply.content, "tokens": tokens, "decode_ms": round(decode_ms, 1),
            "prompt_tokens": meta.get("prompt_tokens", 0), "drafted": meta.get("lookup_drafted", 0),
            "accepted": meta.get("lookup_accepted", 0), "rss_mb": rss_mb()}


def measure(model_name: str, count: int | None, data_dir: str | None, max_tokens: int) -> dict:
    settings = load_settings(**({"data_dir": data_dir} if data_dir else {}), provider="embedded")
    kb = KnowledgeBase(settings)
    kb.ensure_samples()
    items = spread(load_question_set(), count) if count else load_question_set()
    sides = {flag: EmbeddedChatModel(model_name=model_name or settings.embedded_model or "", max_tokens=max_tokens,
                                     cache_mb=settings.embedded_cache_mb, lookup=flag) for flag in (False, True)}
    get_llama(sides[False].model_file())  # loaded before the first measured call: its load time counts for neither
    rows = []
    for i, item in enumerate(items):
        messages = answer_messages(kb, settings, item)
        order = (False, True) if i % 2 == 0 else (True, False)  # neither side always reads a warm context
        got = {flag: one_side(sides[flag], messages) for flag in order}
        rows.append({"id": item.get("id", str(i)), "off": got[False], "on": got[True],
                     "identical": got[False]["answer"] == got[True]["answer"]})
        print(_row_line(rows[-1]), flush=True)
    return _report(rows, sides[True].model_name)


def _rate(rows: list[dict], side: str) -> float:
    tokens = sum(r[side]["tokens"] for r in rows)
    return round(tokens / max(sum(r[side]["decode_ms"] for r in rows), 1.0) * 1000, 2)


def _report(rows: list[dict], model_name: str) -> dict:
    drafted = sum(r["on"]["drafted"] for r in rows)
    accepted = sum(r["on"]["accepted"] for r in rows)
    off, on = _rate(rows, "off"), _rate(rows, "on")
    return {"model": model_name, "cpu": cpu_features(), "questions": len(rows), "rows": rows,
            "off_tokens_per_s": off, "on_tokens_per_s": on, "ratio": round(on / off, 2) if off else None,
            "identical": sum(r["identical"] for r in rows), "drafted": drafted, "accepted": accepted,
            "acceptance": round(accepted / drafted, 3) if drafted else None,
            "peak_rss_mb": rss_mb("VmHWM"), "rss_after_off_mb": max(r["off"]["rss_mb"] for r in rows),
            "rss_after_on_mb": max(r["on"]["rss_mb"] for r in rows)}


def _row_line(row: dict) -> str:
    off, on = row["off"], row["on"]
    rate = {side: round(row[side]["tokens"] / row[side]["decode_ms"] * 1000, 1) for side in ("off", "on")}
    return (f"{row['id']:10} off {off['tokens']:4} tok {rate['off']:6} tok/s | on {on['tokens']:4} tok "
            f"{rate['on']:6} tok/s, {on['accepted']}/{on['drafted']} drafts | "
            f"{'identical' if row['identical'] else 'DIFFERENT'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="", help="embedded model name (default: the configured one)")
    parser.add_argument("--questions", type=int, default=0, help="how many questions of the built-in set (0: all)")
    parser.add_argument("--data-dir", default=None, help="where the sample collections are (default: RAG_DATA_DIR)")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--max-draft", type=int, default=lookup_decoding.MAX_DRAFT, help="most tokens drafted at once")
    parser.add_argument("--max-ngram", type=int, default=lookup_decoding.MAX_NGRAM, help="longest tail looked up")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    lookup_decoding.MAX_DRAFT, lookup_decoding.MAX_NGRAM = args.max_draft, args.max_ngram
    report = measure(args.model, args.questions or None, args.data_dir, args.max_tokens)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    print(f"model {report['model']}; CPU: {report['cpu']}")
    print(f"decode tokens/s: off {report['off_tokens_per_s']}, on {report['on_tokens_per_s']} "
          f"(on/off {report['ratio']}); identical answers {report['identical']} of {report['questions']}; "
          f"drafts accepted {report['accepted']} of {report['drafted']} ({report['acceptance']}); "
          f"peak RSS {report['peak_rss_mb']} MB (after off calls <= {report['rss_after_off_mb']} MB, "
          f"after on calls <= {report['rss_after_on_mb']} MB)")


if __name__ == "__main__":
    main()
