"""Grading four documents two ways, side by side: the verdict the model writes (JSON under a grammar) and
the verdict read from its probabilities (one forward pass, one token).

    python -m benchmarks.verdict_speed [--model NAME] [--rounds 3] [--data-dir DIR] [--json]

Each round grades the same four documents of the sample menu for the Compare question, first one way and
then the other, each starting from an empty context (the prompt-state cache cleared, llama.cpp's live
context reset), so neither reuses what the other read. Printed per way: seconds, tokens decoded, and the
ratio probability ÷ written per round. A measurement (printed), never a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time

from langchain_core.callbacks import BaseCallbackHandler

from core.config import load_settings
from core.knowledge.base import KnowledgeBase
from core.llm import embedded_llm, graders
from core.llm.models import model_name, prepare_model
from core.llm.verdicts import written_verdicts

QUESTION = "스테이크와 어울리는 와인을 추천해 주세요."


class _Decoded(BaseCallbackHandler):
    def __init__(self):
        self.tokens = 0

    def on_llm_end(self, response, **kwargs):
        for generations in response.generations:
            for g in generations:
                usage = getattr(g.message, "usage_metadata", None) or {}
                self.tokens += int(usage.get("output_tokens", 0))


def _fresh() -> None:
    embedded_llm.PROMPT_CACHE.clear()
    for llama in embedded_llm._llama_cache.values():
        llama.reset()


def _timed(name: str, settings, docs, written: bool) -> dict:
    counter = _Decoded()
    model = embedded_llm.EmbeddedChatModel(model_name=name, model_cache_dir=str(settings.model_cache_path),
                                           callbacks=[counter])
    _fresh()
    start = time.perf_counter()
    with written_verdicts() if written else contextlib.nullcontext():
        outcomes = graders.grade_documents(model, QUESTION, docs, 1)
    return {"seconds": round(time.perf_counter() - start, 2), "decoded": counter.tokens,
            "verdicts": [o.value.relevant for o in outcomes]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model")
    parser.add_argument("--data-dir")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = load_settings(provider="embedded", model=args.model, data_dir=args.data_dir)
    prepare_model(settings)
    kb = KnowledgeBase(settings)
    kb.ensure_samples()
    docs = kb.search("restaurant_menu", QUESTION, 2) + kb.search("restaurant_wine", QUESTION, 2)
    docs = [d.model_copy(update={"page_content": d.page_content[:settings.embedded_doc_chars]}) for d in docs]
    name = model_name(settings, "embedded")
    _timed(name, settings, docs[:1], written=False)  # load the model before anything is timed
    rounds = []
    for _ in range(args.rounds):
        written = _timed(name, settings, docs, written=True)
        read = _timed(name, settings, docs, written=False)
        rounds.append({"written": written, "probability": read, "ratio": round(read["seconds"] / written["seconds"], 3)})
    report = {"model": name, "documents": len(docs), "rounds": rounds,
              "median_ratio": statistics.median(r["ratio"] for r in rounds)}
    print(json.dumps(report, ensure_ascii=False, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
