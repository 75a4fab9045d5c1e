"""A choice's probabilities read where its alternatives part, for words that share their first tokens.

A verdict's probability is that of its first distinguishing token, renormalised over the alternatives
(DESIGN.md §5). Yes/no part at the first token; tool names often do not: ``restaurant_menu`` and
``restaurant_wine`` start with the same token. So the alternatives are laid out as a tree of their tokens:
at the root each word takes the mass of the tokens only it can start with (as for yes/no), and words that
start alike share their first token's mass, which is split where they part, by the model's probabilities
at that point renormalised over the tokens that continue one of them (a decoder held to the alternatives
would have no other choice in between). Reading a point past the root costs one forced decode of the shared
tokens after the prompt, whose prefix the model has cached.

Pure: the model is reached through ``tokenize(word)`` and ``rows(path)``, the logits after the prompt and
each forced token of ``path`` (``rows(())[0]`` is the prompt's last row).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.llm.verdicts import Reading, renormalised, word_variants

Rows = Callable[[tuple[int, ...]], Sequence]  # path -> the logits rows at depth 0..len(path)


def _softmax(row):
    import numpy as np

    row = np.asarray(row, dtype=np.float64)
    row = np.exp(row - row.max())
    return row / row.sum()


def choice_reading(words: list[str], tokenize: Callable[[str], list[int]], rows: Rows) -> Reading | None:
    """The words' probabilities as the reply's start, renormalised over them; None when they had no mass."""
    sequences = {w: tuple(tokenize(w)) for w in words}
    starts = {w: {ids[0] for form in word_variants(w) if (ids := tokenize(form))} for w in words}
    shared = {t for w in words for t in starts[w] if any(t in starts[o] for o in words if o != w)}
    first = _softmax(rows(())[0])
    mass = {w: float(sum(first[t] for t in starts[w] - shared)) for w in words}
    groups: dict[int, list[str]] = {}
    for w in words:
        if sequences[w]:
            groups.setdefault(sequences[w][0], []).append(w)
    for token, members in groups.items():
        if len(members) > 1:  # they start alike: their first token's mass is split where they part
            for w, share in _split(members, (token,), sequences, rows).items():
                mass[w] += float(first[token]) * share
    return renormalised(mass)


def _split(members: list[str], prefix: tuple[int, ...], sequences: dict[str, tuple[int, ...]],
           rows: Rows) -> dict[str, float]:
    """How words that all start with ``prefix`` share its mass: by the model's p where they part."""
    while True:  # a token every one of them continues with is no choice
        longer = [w for w in members if len(sequences[w]) > len(prefix)]
        following = {sequences[w][len(prefix)] for w in longer}
        if len(following) == 1 and len(longer) == len(members):
            prefix += (following.pop(),)
            continue
        break
    ended = [w for w in members if len(sequences[w]) == len(prefix)]
    if not longer:  # the same tokens twice: nothing tells them apart
        return {w: 1 / len(members) for w in members}
    p = _softmax(rows(prefix)[-1])
    continuing = {t: float(p[t]) for t in following}
    # a word that ends here takes what continues none of the longer ones
    ending = max(1.0 - sum(continuing.values()), 0.0) if ended else 0.0
    total = sum(continuing.values()) + ending
    if total <= 0:
        return {w: 1 / len(members) for w in members}
    shares = {w: ending / total / len(ended) for w in ended}
    for token, p_token in continuing.items():
        branch = [w for w in longer if sequences[w][len(prefix)] == token]
        below = _split(branch, prefix + (token,), sequences, rows) if len(branch) > 1 else {branch[0]: 1.0}
        for w, share in below.items():
            shares[w] = p_token / total * share
    return shares
