"""Every model call of some pattern runs on the embedded model, one line each: prompt tokens sent, restored
from the prompt-state cache, read, tokens written, and the start of its system text and end of its message.

    python -m benchmarks.prompt_calls [--data-dir DIR] [--question Q] basic,self_rag,...

The patterns run one after another in one process with the cache as configured (as on the Compare page),
then a summary line per pattern: sent, read, seconds reading the prompt, tokens written, wall seconds. This
is how to see which prompt family reads what before changing a prompt's layout. A measurement (printed),
never a test: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.compare_patterns import QUESTION
from core.config import load_settings
from core.knowledge.base import KnowledgeBase
from core.llm import embedded_llm
from core.run.runner import run

CALLS: list[dict] = []


def _record_calls() -> None:
    """Note each call's prompt ends and its llama.cpp counters (wraps the adapter, this process only)."""
    call, finish = embedded_llm.EmbeddedChatModel._call, embedded_llm._finish_call

    def logged_call(self, llama, turns, *args, **kwargs):
        system = turns[0]["content"] if turns[0]["role"] == "system" else "-"
        CALLS.append({"system": system[:40], "message": turns[-1]["content"][-50:].replace("\n", " ")})
        return call(self, llama, turns, *args, **kwargs)

    def logged_finish(llama, timing):
        CALLS[-1].update(timing)
        finish(llama, timing)

    embedded_llm.EmbeddedChatModel._call = logged_call
    embedded_llm._finish_call = logged_finish


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", help="comma-separated pattern ids, run in this order")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    settings = load_settings(provider="embedded", data_dir=args.data_dir)
    KnowledgeBase(settings).ensure_samples()
    _record_calls()
    for pattern in args.patterns.split(","):
        CALLS.clear()
        started = time.perf_counter()
        result = run(pattern, args.question, settings)
        wall = time.perf_counter() - started
        print(f"== {pattern}: {str(result.get('answer') or result.get('error'))[:80]!r}")
        for c in CALLS:
            print(f"{c.get('prompt_tokens', 0):6} restored {c.get('restored_prompt_tokens', 0):5} read "
                  f"{c.get('prompt_eval_tokens', 0):5} wrote {c.get('decode_tokens', 0):4} | {c['system']!r} | "
                  f"{c['message']!r}")
        sent = sum(c.get("prompt_tokens", 0) for c in CALLS)
        read = sum(c.get("prompt_eval_tokens", 0) for c in CALLS)
        reading = sum(c.get("prompt_eval_ms", 0) for c in CALLS) / 1000
        wrote = sum(c.get("decode_tokens", 0) for c in CALLS)
        print(f"   {pattern}: sent {sent}, read {read} ({read / max(sent, 1):.2f}), {reading:.1f} s reading, "
              f"wrote {wrote}, wall {wall:.1f} s")


if __name__ == "__main__":
    main()
