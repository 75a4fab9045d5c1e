"""A pathological answer cannot hold the claim check for long (issue 53, item 2)."""

import time

from core.config import Settings
from core.llm.claims.check import check_claims, verify_answer

DOCS = [{"text": "The monthly pass costs 5,000 won. " * 20, "source": "a.md"}]
HUGE = "The pass" + " and the pass costs 5,000 won" * 1500 + "."  # one sentence, 1,500 figures


def test_one_huge_sentence_is_left_unchecked_at_once_and_says_which_limit():
    started = time.perf_counter()
    result = check_claims(HUGE, DOCS, mode="rules")
    assert time.perf_counter() - started < 2  # the rules took 37 s on this sentence before the limit
    [claim] = result["claims"]
    assert claim["verdict"] == "unchecked"  # never supported: nothing read it
    assert claim["detail"] == "too_long"
    assert "1,000 characters" in claim["reason"] and "RAG_CLAIM_MAX_CHARS" in claim["reason"]
    assert "RAG_CLAIM_MAX_CHARS" in result["note"]


def test_the_limit_is_a_setting_and_sentences_under_it_are_checked_as_before():
    result = verify_answer(Settings(claim_max_chars=40), "The monthly pass costs 5,000 won. " + HUGE[:200] + ".",
                           DOCS, mode="rules")
    first, second = result["claims"]
    assert first["verdict"] == "supported"
    assert second["verdict"] == "unchecked" and "40 characters" in second["reason"]


def test_long_runs_of_digits_and_commas_are_quick():
    for answer in ("The price is " + ",".join(["123"] * 3000) + " won.",
                   "Prices: " + ", ".join(str(i) for i in range(3000)) + ".", "It is " + "1" * 20000 + " won."):
        started = time.perf_counter()
        result = check_claims(answer, DOCS, mode="rules")
        assert time.perf_counter() - started < 2
        assert all(c["verdict"] != "supported" for c in result["claims"])
