"""Choices read where their alternatives part: words that share first tokens are split by the model's p there."""

import math

import pytest

from core.llm.choice_reading import choice_reading

# a toy vocabulary: each piece one token id
VOCAB = ["yes", "no", "Yes", "No", " yes", " no", '"', "restaurant", "_menu", "_wine", "usa", "_ict", "answer",
         "Restaurant", " restaurant", "Answer", " answer", "Usa", " usa", "x"]
IDS = {piece: i for i, piece in enumerate(VOCAB)}


def tokenize(text: str) -> list[int]:
    """Greedy longest-piece tokenisation over VOCAB; a character no piece starts with is "x"."""
    out, rest = [], text
    while rest:
        piece = max((p for p in VOCAB if rest.startswith(p)), key=len, default=None)
        out.append(IDS[piece or "x"])
        rest = rest[len(piece or rest[0]):]
    return out


def logits(probabilities: dict[str, float]) -> list[float]:
    """A logits row whose softmax gives these pieces these probabilities ("x" takes what is left)."""
    rest = {"x": max(1.0 - sum(probabilities.values()), 1e-12)}
    return [math.log(probabilities.get(piece, rest.get(piece, 1e-12))) for piece in VOCAB]


def rows_from(table: dict[tuple[str, ...], dict[str, float]], asked: list):
    def rows(path: tuple[int, ...]) -> list:
        asked.append(path)
        pieces = tuple(VOCAB[t] for t in path)
        return [logits(table[pieces[:depth]]) for depth in range(len(path) + 1)]
    return rows


def test_words_that_part_at_their_first_token_are_read_from_one_row():
    asked = []
    reading = choice_reading(["yes", "no"], tokenize, rows_from({(): {"yes": 0.6, "No": 0.2}}, asked))
    assert reading.p("yes") == pytest.approx(0.75, abs=1e-6)
    assert asked == [()]  # nothing forced: one row, the prompt's last


def test_words_that_start_alike_share_their_first_tokens_mass_split_where_they_part():
    table = {(): {"restaurant": 0.6, "usa": 0.2, "answer": 0.1},
             ("restaurant",): {"_menu": 0.27, "_wine": 0.09}}  # renormalised over the two: 0.75 / 0.25
    asked = []
    reading = choice_reading(["restaurant_menu", "restaurant_wine", "usa_ict", "answer"], tokenize,
                             rows_from(table, asked))
    assert reading.p("restaurant_menu") == pytest.approx(0.6 * 0.75 / 0.9, abs=1e-6)
    assert reading.p("restaurant_wine") == pytest.approx(0.6 * 0.25 / 0.9, abs=1e-6)
    assert reading.p("usa_ict") == pytest.approx(0.2 / 0.9, abs=1e-6)
    assert asked == [(), (IDS["restaurant"],)]  # one forced decode, of the shared token


def test_a_second_token_every_word_continues_with_is_no_choice():
    # usa_ict and usa_x: "usa" then the part; a shared chain is forced through without reading it
    vocab_words = ["usa_ict", "usa"]
    table = {(): {"usa": 0.9}, ("usa",): {"_ict": 0.2}}
    reading = choice_reading(vocab_words, tokenize, rows_from(table, []))
    # "usa" ends where "usa_ict" goes on: it takes what does not continue with "_ict"
    assert reading.p("usa_ict") == pytest.approx(0.2, abs=1e-6)
    assert reading.p("usa") == pytest.approx(0.8, abs=1e-6)


def test_no_mass_on_any_word_reads_nothing():
    table = {(): {"x": 0.99999}}
    assert choice_reading(["yes", "no"], tokenize, rows_from(table, [])) is None
