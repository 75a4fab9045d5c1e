"""Checks a written question passes before its round trip: its language, its answer not in it, not a duplicate in
words or in meaning, and (small talk) the user's voice, not the assistant's."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from core.prompts import HANGUL
from core.studio.evaluate import answer_language

NEAR_DUPLICATE = 0.7  # character-trigram overlap above which two questions count as one
# Cosine similarity (the knowledge base's embedder, query side) at or above which two questions ask the same
# thing. Measured on multilingual-e5-small (the built-in embedder) over 8 paraphrase and 10 distinct pairs,
# Korean and English (tests/core/studio/test_question_gen.py, MEANING_PAIRS): paraphrases 0.896-0.989, distinct questions
# 0.789-0.954 ("누비라 한 시간 이용권의 가격은 얼마인가요?" / "누비라 한 달 정기권은 얼마인가요?" is 0.954).
# 0.96 sits between the closest distinct pair and the next paraphrase: it drops 6 of the 8 paraphrases and no
# distinct question. e5's cosines crowd near 1, other embedders' spread lower, so elsewhere it drops fewer.
SAME_MEANING = 0.96
# what an assistant says and a user does not: offers of help, introducing itself as a tool (seen from Qwen 1.5B:
# "안녕하세요! 저는 회사 인사 규정을 제공하는 도구입니다. 어떻게 도와드릴까요?")
ASSISTANT_VOICE = re.compile(
    r"도와\s?드릴|도와\s?드리|무엇을 도와|저는[^.?!]{0,30}(?:도구|어시스턴트|비서|챗봇|인공지능|AI)|궁금한 (?:점|것)이 있으시면|"
    r"문의해 주세요|말씀해 주세요|how (?:can|may) i (?:help|assist)|what can i do for you|i(?:'m| am) (?:an? |your )?"
    r"(?:ai|assistant|chatbot|bot)\b|i(?:'m| am) here to help|let me know if|feel free to ask|i can help you", re.I)


def language_of(text: str) -> str:
    """``ko`` (mostly Hangul), ``en`` (mostly Latin letters) or ``""`` (something else, or no letters)."""
    if answer_language(text) == "ko":
        return "ko"
    letters = [c for c in text or "" if c.isalpha()]
    latin = sum(c.isascii() for c in letters)
    return "en" if letters and latin * 2 > len(letters) else ""


def in_language(text: str, lang: str) -> bool:
    """Is the text written in ``lang``? For English, a quoted Korean name may stay, a Korean clause may not."""
    if not lang:
        return True
    if language_of(text) != lang:
        return False
    letters = [c for c in text if c.isalpha()]
    return lang != "en" or sum(bool(HANGUL.match(c)) for c in letters) * 5 <= len(letters)


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def first_question(text: str) -> str:
    """The text up to its first question mark, when it has one: Qwen 1.5B, asked in Korean, went on after its
    question with the answer ("...얼마인가? <answer>200만 원</answer>"), which would drop a good question."""
    cut = re.match(r"[^?？]*[?？]", text or "")
    return cut.group(0).strip() if cut else (text or "").strip()


BLANK = "___"  # where the answer was, in the sentence the writing model is shown
KO_QUESTION_WORD = re.compile(r"몇|얼마|언제|며칠|무엇|무슨|누구|어디|어느|어떤|어떻게")


ECHO_SHARE = 0.6  # a statement with this share of its character trigrams in the chunk repeats it, words changed or not


def without_echo(reply: str, chunk: str) -> str:
    """The reply without the sentences of its chunk it opens with: Qwen 1.5B, asked in Korean, repeated the sentence
    it was shown, as it stands or with a word changed or left out, and wrote its question after it ("신규 입사자는 …
    3층 인사팀으로 오면 됩니다. 신규 입사자는 …"). A reply that is nothing but such sentences stays as it is (the copy
    check drops it)."""
    sentences = re.split(r"(?<=[.!?。？])\s+", (reply or "").strip())
    source = re.sub(r"\s+", "", (chunk or "").replace(BLANK, ""))
    grams = {source[i:i + 3] for i in range(len(source) - 2)}

    def echoes(sentence: str) -> bool:
        said = re.sub(r"\s+", "", sentence.replace(BLANK, ""))
        if not said or said in source:
            return bool(said)
        mine = [said[i:i + 3] for i in range(len(said) - 2)]
        return not said.endswith(("?", "？")) and bool(mine) and sum(g in grams for g in mine) >= ECHO_SHARE * len(mine)

    while len(sentences) > 1 and echoes(sentences[0]):
        sentences.pop(0)
    return " ".join(sentences)


def asked_for(span) -> str:
    """The Korean words that ask for a figure span: its number as 몇 with its unit kept ("3층" → "몇 층",
    "오후 6시" → "오후 몇 시", "5일" → "며칠"), money as 얼마; "" for a name or a phrase."""
    if span.kind != "figure":
        return ""
    if span.sort == "money":
        return "얼마"
    words = re.sub(r"\d[\d,.]*\s*(?:[만천억]\s*)?", "몇 ", span.text)
    return re.sub(r"몇 일", "며칠", " ".join(words.split()))


def as_asked(question: str, lang: str, spans: tuple = ()) -> str:
    """A Korean question in a question's form, where Qwen 1.5B wrote it in a statement's: the sentence it was
    shown with its blank ("인사 평가는 매년 6월과 ___에 실시합니다.") gets the words that ask for its one span
    ("몇 월"), and a statement that asks for something, with or without a question mark ("…얼마까지 지원합니다?",
    "…몇%를 차지합니다.") a question's ending ("…지원합니까?"). A statement without a question word stays one;
    anything not Korean is as it is."""
    question = question.strip()
    if lang != "ko":
        return question
    if BLANK in question and len(spans) == 1 and asked_for(spans[0]):
        question = question.replace(BLANK, asked_for(spans[0]), 1)
    elif len(spans) == 1 and asked_for(spans[0]) and spans[0].text in question and _states(question):
        # the sentence handed back with its blank filled in (a statement of its own answer): asked for it the same way
        question = question.replace(spans[0].text, asked_for(spans[0]), 1)
    question = re.sub(r"니다\s*[?？]$", "니까?", question)
    if KO_QUESTION_WORD.search(question):
        question = re.sub(r"니다\s*[.。]?$", "니까?", question)
    return question


def _states(text: str) -> bool:
    """Does the Korean text end as a statement (…다, …다.)?"""
    return re.sub(r"[\s?？.!。]+$", "", text or "").endswith("다")


def asks(question: str, lang: str) -> bool:
    """Is a Korean question asked as one? Qwen 1.5B also put a question word into a sentence and kept it a
    statement ("…몇 %를 차지합니다."): a sentence ending in 다 states. Other languages: not judged."""
    return lang != "ko" or not _states(question)


COPY_CHARS = 30  # a stretch this long (spacing ignored) is a sentence copied, not a subject named


def copies(question: str, text: str, chars: int | None = None) -> bool:
    """Does the question repeat ``chars`` characters in a row of its chunk? Qwen 1.5B, asked in Korean, handed
    back a whole sentence or the whole chunk as its "question"; naming the subject shares a dozen or so."""
    chars = chars or COPY_CHARS
    asked, source = re.sub(r"\s+", "", question or ""), re.sub(r"\s+", "", text or "")
    return any(asked[i:i + chars] in source for i in range(len(asked) - chars + 1))


def norm(text: str) -> str:
    """Letters and digits only, case-folded: how questions and answers are compared."""
    return re.sub(r"[\W_]+", "", text or "").casefold()


def gives_away(question: str, facts: list[str]) -> bool:
    """Does the question contain one of its own answer's facts?"""
    asked = norm(question)
    return any(norm(f) and norm(f) in asked for f in facts)


def assistant_voice(message: str) -> bool:
    """Is this written as the assistant (an offer of help, "I am an assistant") rather than as its user?"""
    return bool(ASSISTANT_VOICE.search(message or ""))


def _trigrams(text: str) -> set[str]:
    text = norm(text)
    return {text[i:i + 3] for i in range(max(1, len(text) - 2))}


def is_duplicate(question: str, kept: list[str]) -> bool:
    """Equal once spaces, punctuation and case are ignored, or nearly so (trigram overlap)."""
    grams = _trigrams(question)
    for other in kept:
        theirs = _trigrams(other)
        if norm(other) == norm(question) or len(grams & theirs) / max(1, len(grams | theirs)) >= NEAR_DUPLICATE:
            return True
    return False


class Meaning:
    """Questions compared by meaning: cosine of their embeddings (query side, each text embedded once)."""

    def __init__(self, embed_query: Callable[[str], list[float]], threshold: float = SAME_MEANING):
        self.embed_query, self.threshold = embed_query, threshold
        self.vectors: dict[str, np.ndarray] = {}

    def vector(self, text: str) -> np.ndarray:
        if text not in self.vectors:
            vec = np.asarray(self.embed_query(text), dtype=float)
            self.vectors[text] = vec / (np.linalg.norm(vec) or 1.0)
        return self.vectors[text]

    def similarity(self, first: str, second: str) -> float:
        return float(self.vector(first) @ self.vector(second))

    def same_as_any(self, question: str, kept: list[str]) -> bool:
        return any(self.similarity(question, other) >= self.threshold for other in kept)


def unique(item: dict | None, why: str, kept: list[str], meaning: Meaning) -> tuple[dict | None, str]:
    """The item, or None with the reason: the same words as a kept question, or the same meaning."""
    if item is None:
        return None, why
    if is_duplicate(item["question"], kept):
        return None, "duplicate"
    if meaning.same_as_any(item["question"], kept):
        return None, "same_meaning"
    return item, ""
