"""A prompt-state cache for the embedded model: a prompt's KV state is read once, then restored.

llama.cpp keeps only the *live* context, so it reuses the prefix of the previous call alone. The patterns
alternate prompt families (router, grader, answer, groundedness, ...) over the same documents, so
without this cache most calls re-read text the model read a moment ago. After each call the KV state of
sequence 0 is copied out (``llama_state_seq_get_data``: the KV cells only, ~28 KB a token for Qwen 1.5B);
before a call whose prompt shares a longer prefix with a stored state than with the live context, that
state is put back (``llama_state_seq_set_data``) and llama.cpp's own prefix match evaluates the rest.

Why not ``llama_cpp.LlamaRAMCache``: each of its states also copies the logits array (n_batch x vocabulary
floats: 311 MB for Qwen) which its byte cap does not count. Only the KV is needed here, because llama.cpp
always re-evaluates at least the prompt's last token, so the logits are fresh.

Correctness does not depend on the cache: a restored state carries its exact tokens, and llama.cpp
compares them with the new prompt token by token. Every method runs under the adapter's model lock.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

BLOCK = 64  # prompts are read in blocks of this many tokens from position 0 (see ``reusable``)
MIN_GAIN = BLOCK  # restoring costs a copy of the state; gaining less than a block is not worth it


@dataclass
class _Entry:
    tokens: tuple[int, ...]
    state: bytes

    @property
    def size(self) -> int:
        return len(self.state) + 4 * len(self.tokens)


@dataclass
class CacheStats:
    """What the cache holds and what it saved, for the sidebar and the benchmarks."""

    entries: int = 0
    bytes_held: int = 0
    cap_bytes: int = 0
    restores: int = 0
    tokens_restored: int = 0
    evictions: int = 0
    model: str = ""
    extra: dict = field(default_factory=dict)


def common_prefix(a, b) -> int:
    """How many leading tokens two sequences share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def reusable(shared: int, prompt_len: int) -> int:
    """How much of a shared prefix may be reused: whole blocks, and never the prompt's last block.

    llama.cpp's arithmetic depends on how tokens are grouped into a batch, so a reused state must hold
    exactly what a fresh read would: the prompt is read in blocks of ``BLOCK`` counted from position 0,
    and only whole blocks before the one holding the prompt's last token are kept or restored.
    """
    return min(shared, prompt_len - 1) // BLOCK * BLOCK if prompt_len > 0 else 0


class PromptStateCache:
    """KV states of recent prompts for one model, LRU, capped by the bytes held (0: keep none)."""

    def __init__(self, cap_bytes: int):
        self._entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()
        self._lock = threading.RLock()  # the model lock covers calls; this one covers stats and resizing
        self.stats = CacheStats(cap_bytes=max(cap_bytes, 0))

    # -- bookkeeping

    def set_cap(self, cap_bytes: int) -> None:
        """A new byte cap; entries beyond it are evicted now, 0 empties and disables the cache."""
        with self._lock:
            self.stats.cap_bytes = max(cap_bytes, 0)
            self._evict()

    def bind(self, model: str) -> None:
        """Use the cache for this model; states of another model are dropped (they are meaningless to it)."""
        with self._lock:
            if self.stats.model != model:
                self.clear()
                self.stats.model = model

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.stats.entries = self.stats.bytes_held = 0

    def _evict(self) -> None:
        while self._entries and self.stats.bytes_held > self.stats.cap_bytes:
            _key, entry = self._entries.popitem(last=False)
            self.stats.bytes_held -= entry.size
            self.stats.evictions += 1
        self.stats.entries = len(self._entries)

    def best(self, tokens) -> tuple[_Entry | None, int]:
        """The stored state sharing the longest prefix with these tokens, and that length."""
        found, length = None, 0
        for entry in self._entries.values():
            n = common_prefix(entry.tokens, tokens)
            if n > length:
                found, length = entry, n
        return found, length

    # -- the two operations around a llama.cpp call

    def prepare(self, llama, tokens: list[int]) -> int:
        """Before a call: keep the live context's reusable blocks, or restore a stored state that has more.

        Returns the prompt tokens restored from the cache (beyond what the live context already held).
        """
        with self._lock:
            held = min(llama.n_tokens, getattr(llama, "stable_tokens", 0))  # read in whole blocks by ``keep``
            llama.stable_tokens = 0  # the context changes now; ``keep`` says again what is stable
            live = reusable(common_prefix(llama.input_ids[:held], tokens), len(tokens))
            entry, shared = self.best(tokens) if self.stats.cap_bytes else (None, 0)
            stored = reusable(shared, len(tokens))
            if entry is not None and stored >= live + MIN_GAIN and _load_sequence(llama, entry):
                llama.n_tokens = stored  # llama.cpp removes the cells past this before it reads on
                self._entries.move_to_end(entry.tokens)
                self.stats.restores += 1
                self.stats.tokens_restored += stored - live
                return stored - live
            llama.n_tokens = min(llama.n_tokens, live)
            return 0

    def keep(self, llama, prompt_len: int) -> None:
        """After a call: cut the live context to the prompt's whole blocks and store their state."""
        with self._lock:
            stable = min(prompt_len // BLOCK * BLOCK, llama.n_tokens)
            llama._ctx.kv_cache_seq_rm(-1, stable, -1)
            llama.n_tokens = llama.stable_tokens = stable
            if not self.stats.cap_bytes or stable <= 0:
                return
            tokens = tuple(int(t) for t in llama.input_ids[:stable])
            if tokens in self._entries:
                self._entries.move_to_end(tokens)
                return
            entry = _Entry(tokens, _read_sequence(llama))
            if not entry.state or entry.size > self.stats.cap_bytes:
                return
            for key in [k for k in self._entries if len(k) < stable and tokens[: len(k)] == k]:
                self.stats.bytes_held -= self._entries.pop(key).size  # the new state covers it
            self._entries[tokens] = entry
            self.stats.bytes_held += entry.size
            self._evict()


def _read_sequence(llama) -> bytes:
    """The KV cells of sequence 0 (all the adapter uses), as bytes."""
    import llama_cpp

    ctx = llama._ctx.ctx
    size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
    if size <= 0:
        return b""
    buffer = (ctypes.c_uint8 * size)()
    written = int(llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0))
    return bytes(buffer[:written]) if 0 < written <= size else b""


def _load_sequence(llama, entry: _Entry) -> bool:
    """Replace the live context with a stored state; on failure the context is left empty (safe: re-read)."""
    import llama_cpp

    llama._ctx.kv_cache_clear()
    llama.n_tokens = 0
    buffer = (ctypes.c_uint8 * len(entry.state)).from_buffer_copy(entry.state)
    if int(llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(entry.state), 0)) != len(entry.state):
        llama._ctx.kv_cache_clear()
        return False
    n = len(entry.tokens)
    llama.input_ids[:n] = entry.tokens
    llama.n_tokens = n
    llama._requires_eval = True  # the logits are not restored: llama.cpp must read at least one token
    return True


def attach(llama, cache: PromptStateCache) -> None:
    """Wrap this model's ``generate`` so every call first restores what it can (once per model).

    Storing happens after the whole llama.cpp call returns (``EmbeddedChatModel`` calls ``cache.keep``
    inside its lock): the completion code still reads the context after the token generator ends.
    """
    if getattr(llama, "_prompt_cache_attached", False):
        return
    original = llama.generate
    llama.n_batch = BLOCK  # read every prompt in the same blocks, whether or not part of it was restored

    def generate(tokens, *args, **kwargs):
        tokens = list(tokens)
        llama.last_call = {"prompt_tokens": len(tokens), "restored_tokens": cache.prepare(llama, tokens)}
        yield from original(tokens, *args, **kwargs)

    llama.generate = generate
    llama._prompt_cache_attached = True
