"""Prompt-lookup decoding for the embedded model: drafts copied from the prompt, verified in one batch.

A RAG answer mostly copies its documents, so the next tokens are often already in the prompt. After
each token this loop looks for the longest recent n-gram of the text elsewhere in the prompt (or in
what was written), proposes the tokens that followed it there, and has the model read the last token
and the drafts in ONE ``llama_decode`` with logits for those positions only. The model's own greedy
choice at each position (after the logits processors and the repeat penalty, as llama.cpp's sampler
chain applies them) decides: the drafts it agrees with are kept, the first disagreement is replaced
by the model's choice, the rejected drafts' KV cells are removed. Every drafted position costs a row of the
batch and of the output layer, so the draft length adapts (``next_limit``).

Why not llama-cpp-python's ``draft_model=LlamaPromptLookupDecoding``: it turns on ``logits_all``, a
scores array of n_ctx x vocabulary floats (5 GB for Qwen) and logits for every prompt token.

What it guarantees: each token written is the greedy choice over the logits the model gave at its
position, under the same processors (a grammar's ``GreedyUnderGrammar`` included: a draft the grammar
forbids is never its choice) and the same penalty; with no drafts (batches of one token) it writes what
llama.cpp's sampler chain writes, bit for bit (tests/core/llm/test_lookup_decoding.py). What it cannot:
llama.cpp's CPU kernels do not give bit-identical logits for a token read alone and read in a batch
(quantised activations round differently; measured on Gemma 3 270M: up to ~1.5 in a logit, and the KV
cells of a batch carry the difference on), so where two tokens are nearly tied (gaps of 0.01-0.02 where
it happened) the reply can part from decoding one token at a time. Only greedy decoding is served (temperature 0):
with sampling, the accept rule would have to compare distributions, not choices.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from core.llm.prompt_cache import common_prefix

MAX_DRAFT = 8  # the most tokens proposed at once (benchmarks/lookup_speed.py --max-draft tries others)
MAX_NGRAM = 3  # the longest tail of the text looked up in the prompt
SHORT_DRAFT = 3  # a match on the last token alone is weak evidence: propose fewer tokens after it


@dataclass
class LookupStats:
    """What one call's lookup did; the adapter turns it into the reply's metadata."""

    ran: bool = False
    drafted: int = 0
    accepted: int = 0
    written: int = 0
    prompt_eval_tokens: int = 0
    prompt_eval_ms: float = 0.0
    decode_ms: float = 0.0


def propose(history: np.ndarray, max_draft: int | None = None) -> list[int]:
    """The tokens that followed the latest earlier occurrence of the text's longest matching tail."""
    max_draft = MAX_DRAFT if max_draft is None else max_draft
    length = len(history)
    for n in range(min(MAX_NGRAM, length - 1), 0, -1):
        tail = history[-n:]
        windows = np.lib.stride_tricks.sliding_window_view(history[:-1], n)
        starts = np.flatnonzero(np.all(windows == tail, axis=1))
        if len(starts):
            after = int(starts[-1]) + n  # the latest match: the nearest context, often the phrase being copied
            limit = max_draft if n > 1 else min(max_draft, SHORT_DRAFT)
            return [int(t) for t in history[after:after + limit]]
    return []


def eligible(llama, kwargs: dict) -> bool:
    """Greedy decoding of a plain model with nothing but processors and a repeat penalty to reproduce."""
    if getattr(llama, "_is_recurrent", False) or getattr(llama, "_is_hybrid", False):
        return False  # their memory cannot drop the cells of rejected drafts
    return (kwargs.get("temp", 0.8) == 0.0 and kwargs.get("grammar") is None
            and not kwargs.get("frequency_penalty")
            and not kwargs.get("presence_penalty") and not kwargs.get("mirostat_mode"))


def attach_lookup(llama) -> None:
    """Wrap ``generate`` (once per model): the next call after ``llama.lookup`` is given a ``LookupStats`` drafts.

    The call takes the stats (``llama.lookup`` is None again): a stream calls ``generate`` only when it is read.

    Attach it before the prompt-state cache, so the cache's wrapper restores a state first and this loop
    then reads the rest of the prompt the way ``Llama.generate`` would.
    """
    if getattr(llama, "_lookup_attached", False):
        return
    original = llama.generate
    llama.lookup = None

    def generate(tokens, *args, **kwargs):
        stats, llama.lookup = llama.lookup, None
        if stats is None or args or not eligible(llama, kwargs):
            yield from original(tokens, *args, **kwargs)
            return
        yield from _decode(llama, list(tokens), kwargs, stats)

    llama.generate = generate
    llama._lookup_attached = True


class _Chooser:
    """The token llama.cpp's greedy chain would pick: processors, then the repeat penalty, then the best."""

    def __init__(self, processors, penalty: float, last_n: int, prompt_len: int):
        self._processors, self._penalty, self._last_n, self._prompt_len = list(processors or []), penalty, last_n, prompt_len

    def __call__(self, row: np.ndarray, history: np.ndarray) -> int:
        scores = row
        for processor in self._processors:
            scores = processor(history, scores)
        written = history[self._prompt_len:]
        if self._penalty != 1.0 and self._last_n and len(written):
            scores = np.array(scores, copy=True)
            recent = np.unique(written[-self._last_n:])  # llama.cpp penalises each recent token once
            values = scores[recent]
            scores[recent] = np.where(values <= 0, values * self._penalty, values / self._penalty)
        return int(np.argmax(scores))


def _decode(llama, tokens: list[int], kwargs: dict, stats: LookupStats):
    """The generator ``Llama.generate`` would be, with drafts verified in batches."""
    stats.ran = True
    start = time.perf_counter()
    rest = _unread(llama, tokens)
    if rest:
        llama.eval(rest)
    stats.prompt_eval_tokens += len(rest)
    stats.prompt_eval_ms += (time.perf_counter() - start) * 1000
    choose = _Chooser(kwargs.get("logits_processor"), kwargs.get("repeat_penalty", 1.0), llama.last_n_tokens_size,
                      len(tokens))
    # A chat template's stop criterion (Qwen's: "the last token is a stop token"): Llama.generate asks it before
    # yielding each token, over the tokens read before that one; so does this loop. It reads the tokens only, so
    # the logits it is given are the last batch's last row.
    stop = kwargs.get("stopping_criteria")
    written = list(tokens)
    try:
        clock = time.perf_counter()
        token, limit = choose(_row(llama, -1), llama.input_ids[:llama.n_tokens]), MAX_DRAFT
        while True:
            stats.decode_ms += (time.perf_counter() - clock) * 1000
            if stop is not None and stop(np.asarray(written, dtype=np.intc), _row(llama, -1)):
                return
            yield token
            written.append(token)
            stats.written += 1
            clock = time.perf_counter()
            accepted, token, drafted = _step(llama, token, choose, stats, limit)
            limit = next_limit(limit, drafted, len(accepted))
            for draft in accepted:
                stats.decode_ms += (time.perf_counter() - clock) * 1000
                if stop is not None and stop(np.asarray(written, dtype=np.intc), _row(llama, -1)):
                    return
                yield draft
                written.append(draft)
                stats.written += 1
                clock = time.perf_counter()
    finally:
        llama._requires_eval = True  # the last logits may be a rejected draft's: the next call reads a token again


def next_limit(limit: int, drafted: int, accepted: int) -> int:
    """How many tokens to propose next: more after a fully accepted draft, what was accepted plus one after a miss.

    Every drafted token costs a position of the batch (and a row of the output layer) whether it is kept or
    not, so a stretch the prompt does not predict is drafted short; a stretch being copied earns longer drafts.
    """
    if not drafted:
        return limit
    return min(limit + 2, MAX_DRAFT) if accepted == drafted else max(accepted + 1, 1)


def _unread(llama, tokens: list[int]) -> list[int]:
    """The prompt tokens still to read after reusing the live context's prefix, exactly as ``Llama.generate``."""
    if llama.n_tokens > 0:
        longest = common_prefix(llama._input_ids, tokens)
        consumed = longest == len(tokens)
        if consumed and llama.n_tokens == len(tokens) and not llama._requires_eval:
            return []
        reuse = longest - 1 if consumed else longest  # at least one token is read, to refresh the logits
        if reuse > 0 and llama._ctx.kv_cache_seq_rm(-1, reuse, -1):
            llama.n_tokens = reuse
            llama._requires_eval = True
            return tokens[reuse:]
    llama.reset()
    return tokens


def _step(llama, token: int, choose: _Chooser, stats: LookupStats, limit: int) -> tuple[list[int], int, int]:
    """Read ``token`` and up to ``limit`` drafts in one batch: the drafts the model agrees with, the token after
    them, and how many were drafted."""
    pos = llama.n_tokens
    llama.input_ids[pos] = token
    room = llama._n_ctx - pos - 1
    drafts = propose(llama.input_ids[:pos + 1], min(limit, MAX_DRAFT))[:max(room, 0)]
    batch = [token, *drafts]
    llama._ctx.kv_cache_seq_rm(-1, pos, -1)
    llama._batch.set_batch(batch=batch, n_past=pos, logits_all=True)  # logits for these positions only
    llama._ctx.decode(llama._batch)
    llama.input_ids[pos:pos + len(batch)] = batch
    llama.n_tokens = pos + len(batch)
    llama._requires_eval = False
    accepted: list[int] = []
    for j in range(len(batch)):  # row j predicts the token after batch[j]; the history is all accepted
        choice = choose(_row(llama, j), llama.input_ids[:pos + j + 1])
        if j < len(drafts) and choice == drafts[j]:
            accepted.append(choice)
            continue
        break
    keep = pos + 1 + len(accepted)
    if keep < llama.n_tokens and not llama._ctx.kv_cache_seq_rm(-1, keep, -1):
        raise RuntimeError("llama.cpp could not remove the rejected drafts from its memory")
    llama.n_tokens = keep
    stats.drafted += len(drafts)
    stats.accepted += len(accepted)
    return accepted, choice, len(drafts)


def _row(llama, index: int) -> np.ndarray:
    """A copy of the logits of one output of the last batch (-1: the last), as llama.cpp's sampler reads them."""
    pointer = llama._ctx.get_logits_ith(index)
    return np.ctypeslib.as_array(pointer, shape=(llama.n_vocab(),)).copy()
