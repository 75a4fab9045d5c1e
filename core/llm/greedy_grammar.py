"""Greedy decoding under a grammar that checks the best token first.

llama-cpp-python puts the grammar in its sampler chain, where it filters the whole vocabulary (150k
entries for Qwen) at every step: that made a structured reply 2× (Gemma 270M) to 7× (Qwen 1.5B) slower
to decode than free text (benchmarks/grammar_speed.py). At temperature 0 only one token can win, so
this logits processor does what llama.cpp's own sampler does: apply the repeat penalty, take the best
token, ask the grammar about that one token; when it is rejected, ask about the next best 64 at once,
and filter the whole vocabulary only when none of them is allowed. The token chosen is the one the
chain would have chosen (the best allowed token); the reply is the same.
"""

from __future__ import annotations

import ctypes

import numpy as np

NEG_INF = -np.inf
TOP = 64  # tokens asked about at once after the best one is rejected


class GreedyUnderGrammar:
    """A logits processor that leaves one token standing: the best one the grammar allows.

    Use with the chain's own penalty off (``repeat_penalty=1.0``, no grammar): this applies both, like
    llama.cpp's penalty sampler (over the tokens written in this call, the last ``last_n``). Call
    ``close()`` after the completion to free the grammar.
    """

    def __init__(self, llama, grammar, repeat_penalty: float = 1.0, last_n: int = 64):
        import llama_cpp

        self._lib = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self._sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        self._penalty, self._last_n = repeat_penalty, last_n
        self._prompt_tokens: int | None = None
        self._accepted = 0
        self._one = (llama_cpp.llama_token_data * 1)()
        self._all = None  # the whole vocabulary's array, made on the first rejection
        self._top = (llama_cpp.llama_token_data * TOP)()
        self.steps = self.rejections = self.full_filters = 0  # best token rejected; the whole vocabulary filtered

    def __call__(self, input_ids, logits: np.ndarray) -> np.ndarray:
        written = self._written(input_ids)
        scores = self._penalized(logits, written)
        best = int(np.argmax(scores))
        self.steps += 1
        if not self._allows(best, float(scores[best])):
            self.rejections += 1
            best = self._best_of_top(scores)
            if best is None:
                self.full_filters += 1
                scores = self._filter(scores)
                best = int(np.argmax(scores))
        kept = np.full_like(logits, NEG_INF)
        kept[best] = scores[best] if np.isfinite(scores[best]) else 0.0
        return kept

    def close(self) -> None:
        """Free the grammar (idempotent)."""
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None

    # -- one step

    def _written(self, input_ids) -> np.ndarray:
        """The tokens written so far in this call; the grammar has accepted each of them once."""
        if self._prompt_tokens is None:  # the first step sees the prompt only
            self._prompt_tokens = len(input_ids)
        written = np.asarray(input_ids[self._prompt_tokens:])
        for token in written[self._accepted:]:
            self._lib.llama_sampler_accept(self._sampler, int(token))
        self._accepted = len(written)
        return written

    def _penalized(self, logits: np.ndarray, written: np.ndarray) -> np.ndarray:
        """llama.cpp's repeat penalty: a recent token's logit divided (positive) or multiplied (negative)."""
        if self._penalty == 1.0 or not len(written):
            return logits
        scores = logits.copy()
        recent = np.unique(written[-self._last_n:])
        values = scores[recent]
        scores[recent] = np.where(values <= 0, values * self._penalty, values / self._penalty)
        return scores

    def _allows(self, token: int, logit: float) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, logit, 0.0
        array = self._lib.llama_token_data_array(data=self._one, size=1, selected=-1, sorted=False)
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))
        return bool(np.isfinite(self._one[0].logit))

    def _best_of_top(self, scores: np.ndarray) -> int | None:
        """The best token the grammar allows among the TOP best, if any is."""
        top = np.argpartition(scores, -TOP)[-TOP:]
        for i, token in enumerate(top):
            self._top[i].id, self._top[i].logit, self._top[i].p = int(token), float(scores[token]), 0.0
        array = self._lib.llama_token_data_array(data=self._top, size=TOP, selected=-1, sorted=False)
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))
        allowed = [(self._top[i].logit, self._top[i].id) for i in range(TOP) if np.isfinite(self._top[i].logit)]
        return max(allowed)[1] if allowed else None

    def _filter(self, scores: np.ndarray) -> np.ndarray:
        """Every token through the grammar: rejected ones become -inf."""
        n = len(scores)
        if self._all is None or len(self._all) != n:
            self._all = (self._lib.llama_token_data * n)()
        view = np.ctypeslib.as_array(self._all).view(np.dtype([("id", np.intc), ("logit", np.single),
                                                               ("p", np.single)], align=True))
        view["id"], view["logit"], view["p"] = np.arange(n), scores, 0.0
        array = self._lib.llama_token_data_array(data=self._all, size=n, selected=-1, sorted=False)
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))
        return view["logit"][np.argsort(view["id"])] if not np.all(np.diff(view["id"]) > 0) else view["logit"].copy()
