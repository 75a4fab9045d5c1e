"""The default embedded model (Qwen2.5-Coder 1.5B, for real) answers in the language of the question.

A 1.5B model follows "answer in the language of the question" loosely: asked in Korean it answered in
English until the answer prompt named the language (core.prompts.answer_request).
"""

import re

import pytest

from core.prompts import answer_request
from core.run.runner import run

pytestmark = pytest.mark.real_model

QWEN = "qwen2.5-coder-1.5b-instruct"
HANGUL = re.compile(r"[\uac00-\ud7a3]")


def test_the_answer_request_names_the_language_last():
    assert answer_request("스테이크 가격은?").startswith("스테이크 가격은?") and "Answer in Korean" in answer_request("가격?")
    assert "Korean" not in answer_request("How much is the steak?")
    # what a figure needs comes with it: its item, for every item the question matches (issue 39)
    assert "항목의 이름" in answer_request("가격?") and "name of the item" in answer_request("How much?")


def test_a_korean_question_gets_a_korean_answer_with_the_menu_price(sample_settings):
    settings = sample_settings.with_(provider="embedded", model=QWEN, max_tokens=96)
    # the menu has three steaks (₩35,000, ₩29,000, ₩14,000): the question names the one whose price it checks
    result = run("basic", "시그니처 스테이크 메뉴의 가격은 얼마인가요?", settings)
    assert result["model"] == QWEN and result["error"] is None, result
    answer = result["answer"]
    letters = [c for c in answer if c.isalpha()]
    assert sum(bool(HANGUL.match(c)) for c in letters) > len(letters) / 2, answer  # mostly Hangul
    assert "35,000" in answer, answer


def test_an_english_question_gets_an_english_answer(sample_settings):
    settings = sample_settings.with_(provider="embedded", model=QWEN, max_tokens=96)
    answer = run("basic", "How much is the signature steak on the menu?", settings)["answer"]
    assert answer.strip() and not HANGUL.search(answer.replace("시그니처 스테이크", "")), answer
