"""Decoding speed under a JSON-schema grammar against free decoding, on both built-in models, same prompt.

    python -m benchmarks.grammar_speed [--tokens 96] [--models gemma-3-270m,qwen2.5-coder-1.5b-instruct]

For each model the same prompt is completed seven ways, each writing the same number of tokens (the limit):
free text, under a grammar of one JSON string (no length bound), under a grammar bounding that string
(``maxLength``: a bounded repetition, as every budgeted schema now has), and under the grammar of RAG-Fusion's
query schema — each grammar twice: in llama.cpp's sampler chain (the whole vocabulary filtered at every
step) and checked on the best token first (core.llm.greedy_grammar, the adapter's way at temperature 0).
Tokens per second are the tokens written over the time after the prompt was read (llama.cpp's counters time
the model only; the grammar's cost is in sampling, so wall time is what counts). It also prints how many
tokens per character the tokenizer spends on Korean and English text (core.llm.budgets.TOKENS_PER_CHAR).
A measurement (printed), never a test: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import time

from core.llm.budgets import token_budget
from core.llm.embedded_llm import _grammar, _json_gbnf, embedded_model_path, get_llama
from core.llm.greedy_grammar import GreedyUnderGrammar
from core.patterns.rag_fusion import SearchQueries

PROMPT = ("Write a long, detailed description of a Korean restaurant's steak menu: the dishes, their prices in won, "
          "how they are cooked, the wines that go with them.\n\nDescription: ")
SAMPLES = ["스테이크 메뉴의 가격은 얼마인가요? 시그니처 스테이크는 ₩35,000이며 굽기는 선택할 수 있습니다.",
           "주차는 건물 지하 2층에서 2시간 무료이며, 이후 30분마다 1,000원이 부과됩니다.",
           "What does the signature steak cost, and which red wine goes with it?"]


def _string_schema(max_length: int | None) -> dict:
    text = {"type": "string", **({"maxLength": max_length} if max_length else {})}
    return {"type": "object", "properties": {"text": text}, "required": ["text"]}


def _speed(llama, schema: dict | None, tokens: int, best_first: bool = False) -> tuple[int, float]:
    """(tokens written, tokens/s after the prompt) for one completion of PROMPT; ``best_first``: the grammar
    checked on the best token first (core.llm.greedy_grammar, what the adapter does at temperature 0)."""
    import llama_cpp

    ctx = llama._ctx.ctx
    grammar = _grammar(llama, _json_gbnf(json.dumps(schema, sort_keys=True))) if schema else None
    options = {"grammar": grammar}
    if best_first:
        options = {"logits_processor": [GreedyUnderGrammar(llama, grammar)]}
    llama.reset()  # nothing of the prompt cached: every run reads it alike
    llama_cpp.llama_perf_context_reset(ctx)
    start = time.perf_counter()
    out = llama.create_completion(PROMPT, max_tokens=tokens, temperature=0.0, repeat_penalty=1.0, **options)
    wall = time.perf_counter() - start
    if best_first:
        options["logits_processor"][0].close()
    prompt_s = llama_cpp.llama_perf_context(ctx).t_p_eval_ms / 1000
    written = int(out["usage"]["completion_tokens"])
    return written, written / max(wall - prompt_s, 1e-9)


def _tokens_per_char(llama) -> float:
    return max(len(llama.tokenize(s.encode(), add_bos=False)) / len(s) for s in SAMPLES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--models", default="gemma-3-270m,qwen2.5-coder-1.5b-instruct")
    args = parser.parse_args()
    import llama_cpp

    print(llama_cpp.llama_print_system_info().decode())
    shapes = [("free", None), ("json string", _string_schema(None)),
              ("json string maxLength 400", _string_schema(400)),
              (f"SearchQueries (budget {token_budget(SearchQueries)})", SearchQueries.model_json_schema())]
    for name in args.models.split(","):
        llama = get_llama(embedded_model_path(name))
        print(f"\n{name}: at most {_tokens_per_char(llama):.2f} tokens per character over the samples")
        for label, schema in shapes:
            for best_first in (False, True) if schema else (False,):
                _speed(llama, schema, 8, best_first)  # warm: the grammar compiled, the weights paged in
                written, rate = _speed(llama, schema, args.tokens, best_first)
                how = ", best token first" if best_first else ""
                print(f"  {label + how:<58} {written:>4} tokens  {rate:6.1f} tokens/s")


if __name__ == "__main__":
    main()
