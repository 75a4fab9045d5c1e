"""Question sets generated from collections: the configured model writes, the code checks.

Chunks are sampled across each collection's files. Every question is written in its chunk's language
with its key facts quoted from the chunk; a fact that is not a substring of its chunk, a question in
another language, one that contains its own answer, a (near-)duplicate in words or in meaning (the knowledge
base's embeddings), or an "unanswerable" question that the collection does answer is dropped, and the reason
is counted. The result is a question set in
the JSONL format of core.studio.question_set, with each question's kind and provenance.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import BaseModel, Field

from core.knowledge import korean_tokens
from core.prompts import HANGUL, fence
from core.prompts import questions as P
from core.prompts.questions import FACT_CHARS, QUESTION_CHARS, SMALL_TALK_CHARS
from core.studio.evaluate import answer_language

KINDS = ("single", "two_chunks", "cross_collection", "unanswerable", "small_talk")
# the order kinds are tried in: every kind turns up within the first six questions of a set
CYCLE = ("single", "two_chunks", "unanswerable", "single", "cross_collection", "small_talk", "single",
         "two_chunks", "single", "unanswerable")
MAX_FACT_CHARS = 40  # a key fact is checked as a substring of answers: a figure or a name, not a sentence
RECENT_SHOWN = 8  # questions written before, shown to the model so it writes another (prompt stays short)
ATTEMPTS_PER_QUESTION = 3  # dropped questions are replaced, up to this many model calls per kept one
MIN_CHUNK_CHARS = 60  # headings and stubs make poor questions
CHUNK_CHARS = 1200  # the model sees at most this much of a chunk; facts are checked against what it saw
NEAR_DUPLICATE = 0.7  # character-trigram overlap above which two questions count as one
# Cosine similarity (the knowledge base's embedder, query side) at or above which two questions ask the same
# thing. Measured on multilingual-e5-small (the built-in embedder) over 8 paraphrase and 10 distinct pairs,
# Korean and English (tests/test_question_gen.py, MEANING_PAIRS): paraphrases 0.896-0.989, distinct questions
# 0.789-0.954 ("누비라 한 시간 이용권의 가격은 얼마인가요?" / "누비라 한 달 정기권은 얼마인가요?" is 0.954).
# 0.96 sits between the closest distinct pair and the next paraphrase: it drops 6 of the 8 paraphrases and no
# distinct question. e5's cosines crowd near 1, other embedders' spread lower, so elsewhere it drops fewer.
SAME_MEANING = 0.96
LANGUAGES = {"ko": "Korean (한국어)", "en": "English"}

Progress = Callable[[int, int, str, "float | None"], None]  # (kept, wanted, label, seconds left or None)


class SingleFact(BaseModel):
    question: str = Field(min_length=3, max_length=QUESTION_CHARS)
    facts: list[Annotated[str, Field(max_length=FACT_CHARS)]] = Field(min_length=1, max_length=3)


class TwoFacts(BaseModel):
    question: str = Field(min_length=3, max_length=QUESTION_CHARS)
    fact_first: str = Field(min_length=1, max_length=FACT_CHARS)
    fact_second: str = Field(min_length=1, max_length=FACT_CHARS)


class Unanswerable(BaseModel):
    question: str = Field(min_length=3, max_length=QUESTION_CHARS)
    missing: str = Field(min_length=1, max_length=FACT_CHARS)


class SmallTalk(BaseModel):
    message: str = Field(min_length=2, max_length=SMALL_TALK_CHARS)


class AnsweredCheck(BaseModel):
    answered: bool


@dataclass
class Generated:
    """What a generation produced: the kept questions, and why the others were dropped."""

    items: list[dict] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    attempts: int = 0
    seconds: float = 0.0
    stopped: bool = False

    def summary(self) -> dict:
        return {"kept": len(self.items), "attempts": self.attempts, "dropped": dict(self.dropped),
                "seconds": round(self.seconds, 1), "stopped": self.stopped,
                "kinds": dict(Counter(i["kind"] for i in self.items)),
                "languages": dict(Counter(i["lang"] for i in self.items))}


# ---------------------------------------------------------------- text checks


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


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def _norm(text: str) -> str:
    """Letters and digits only, case-folded: how questions and answers are compared."""
    return re.sub(r"[\W_]+", "", text or "").casefold()


def fact_in(fact: str, chunk: str) -> bool:
    """Is the fact quoted from the chunk? Exact, except that runs of whitespace count as one space."""
    fact = _squash(fact)
    return bool(fact) and fact in _squash(chunk)


_SENTENCE_END = re.compile(r"(?<=[^\d][.!?。])\s+")


def focus_sentences(text: str, min_chars: int = 12) -> list[str]:
    """The chunk's sentences as written (headings left out), each a substring of the chunk."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out += [s.strip() for s in _SENTENCE_END.split(line) if len(s.strip()) >= min_chars]
    return out


_FIGURE = re.compile(r"\d(?:[\d,.]*\d)?(?:[\uac00-\ud7a3%])?")  # 1,000원 / 312곳 / 24 / 7.5% (a Korean counter kept)


def figures(text: str) -> list[str]:
    """The numbers of a text as written, with a Korean counter or % attached (1,000원, 30분, 13세)."""
    return list(dict.fromkeys(_FIGURE.findall(text)))


def focused_facts(question: str, facts: list[str], focus: str, sentences: list[str]) -> tuple[list[str], str]:
    """The key facts of a question about ``focus``, or [] and why the question is dropped.

    The question must be about its focus sentence (its keyword tokens meet that sentence at least as often as
    any other sentence of the chunk). Its key facts are the figures of that sentence the question does not
    contain (those the model's quotes name, when they name some); a sentence without such figures keeps the
    model's quotes from it of at most MAX_FACT_CHARS characters. A small model's own quotes were whole
    sentences, or the wrong words of the right sentence ("Langstroth hives" for how many colonies),
    and a key fact is looked for in answers as a substring.
    """
    if not focus or gives_away(question, facts):
        return facts, ""  # the common checks drop a question holding the model's own answer
    asked = set(korean_tokens.tokens(question))
    overlap = [len(asked & set(korean_tokens.tokens(s))) for s in sentences]
    mine = len(asked & set(korean_tokens.tokens(focus)))
    if not mine or mine < max(overlap, default=0):
        return [], "off_focus"
    unasked = [f for f in figures(focus) if _norm(f) not in _norm(question)]
    quoted = [f for f in unasked if any(_norm(f) in _norm(q) for q in facts)]  # what the model's quotes name
    if unasked:
        return quoted or unasked, ""
    kept = [f for f in facts if fact_in(f, focus) and len(_squash(f)) <= MAX_FACT_CHARS]
    return (kept, "") if kept else ([], "fact_not_in_focus")


def gives_away(question: str, facts: list[str]) -> bool:
    """Does the question contain one of its own answer's facts?"""
    asked = _norm(question)
    return any(_norm(f) and _norm(f) in asked for f in facts)


def _trigrams(text: str) -> set[str]:
    text = _norm(text)
    return {text[i:i + 3] for i in range(max(1, len(text) - 2))}


def is_duplicate(question: str, kept: list[str]) -> bool:
    """Equal once spaces, punctuation and case are ignored, or nearly so (trigram overlap)."""
    grams = _trigrams(question)
    for other in kept:
        theirs = _trigrams(other)
        if _norm(other) == _norm(question) or len(grams & theirs) / max(1, len(grams | theirs)) >= NEAR_DUPLICATE:
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


# ---------------------------------------------------------------- sampling and planning


def sample_chunks(chunks: list, seed: int = 0) -> list:
    """Every chunk once, in an order that takes turns across files (each file's chunks shuffled), so the
    first N come from as many files as possible, not from the top of the first file."""
    rng = random.Random(seed)
    usable = [c for c in chunks if len(c.page_content.strip()) >= MIN_CHUNK_CHARS] or list(chunks)
    by_file: dict[str, list] = {}
    for chunk in sorted(usable, key=lambda c: str(c.id)):  # Chroma's order is not promised: sort, then shuffle
        by_file.setdefault(str(chunk.metadata.get("source", "?")), []).append(chunk)
    files = sorted(by_file)
    rng.shuffle(files)
    for name in files:
        rng.shuffle(by_file[name])
    order = []
    while any(by_file.values()):
        order += [by_file[name].pop() for name in files if by_file[name]]
    return order


def plan_kinds(count: int, collections: int, most_chunks: int) -> list[str]:
    """The kind of each of ``count`` questions: two collections are needed for cross-collection ones,
    a collection of two chunks for two-chunk ones; a kind that cannot be made becomes a single fact."""
    possible = {"single", "unanswerable", "small_talk"}
    possible |= {"two_chunks"} if most_chunks >= 2 else set()
    possible |= {"cross_collection"} if collections >= 2 else set()
    return [kind if kind in possible else "single" for kind in (CYCLE[i % len(CYCLE)] for i in range(count))]


# ---------------------------------------------------------------- writing one question


@dataclass
class Pool:
    """One collection's sampled chunks, taken in turn, and its whole text for the absence check."""

    name: str
    description: str
    order: list
    corpus: str
    cursor: int = 0

    def next(self):
        chunk = self.order[self.cursor % len(self.order)]  # a small collection is gone round again
        self.cursor += 1
        return chunk

    def language(self) -> str:
        return Counter(language_of(c.page_content) for c in self.order[:8]).most_common(1)[0][0]


def _shown(chunk) -> str:
    return chunk.page_content[:CHUNK_CHARS]


def _where(pool: Pool, chunk) -> dict:
    return {"collection": pool.name, "file": str(chunk.metadata.get("source", "?")), "chunk_id": str(chunk.id)}


def _language_name(lang: str) -> str:
    return LANGUAGES.get(lang, "the language of the document")


class Writer:
    """Asks the model for one question of a kind and checks it; each method returns (item, "") or (None, why)."""

    def __init__(self, model, kb, k: int = 3):
        self.model, self.kb, self.k = model, kb, k
        self.written: dict[tuple[str, str], list[str]] = {}  # (collection, kind) -> questions written, kept or not
        self.visits: Counter = Counter()  # chunk id -> times a question was asked about it

    def _focused(self, chunk) -> tuple[str, str, list[str]]:
        """The chunk fenced, then one of its sentences to ask about (the next one at each visit); that
        sentence ("" for a chunk without one) and all of the chunk's sentences.

        A small model shown the same chunk writes the same question, whatever it is told it wrote before
        (Qwen2.5 1.5B did, four times in a row): a different sentence each time gives a different question.
        """
        shown = _shown(chunk)
        sentences = focus_sentences(shown)
        focus = sentences[self.visits[chunk.id] % len(sentences)] if sentences else ""
        self.visits[chunk.id] += 1
        return fence(shown) + ("\n\n" + fence(focus, "focus") if focus else ""), focus, sentences

    def _ask(self, schema, system: str, human: str):
        from core.llm import graders

        outcome = graders.ask(self.model, schema, system, human, None)
        return None if outcome.fallback or outcome.value is None else outcome.value

    def _write(self, schema, template: str, lang: str, human: str, where: tuple[str, str]):
        """Ask for a new question, showing the last ones written for the same collection and kind."""
        written = self.written.setdefault(where, [])
        recent = written[-RECENT_SHOWN:]
        system = template.format(language=_language_name(lang), different=P.DIFFERENT if recent else "")
        if recent:
            human += "\n\n" + fence("\n".join(recent), "already_written")
        got = self._ask(schema, system, human)
        text = getattr(got, "question", None) or getattr(got, "message", None)
        if text:
            written.append(_squash(text))
        return got

    def single(self, pool: Pool, _other: Pool | None = None):
        chunk = pool.next()
        lang = language_of(chunk.page_content)
        human, focus, sentences = self._focused(chunk)
        got = self._write(SingleFact, P.SINGLE_FACT_SYSTEM, lang, human, (pool.name, "single"))
        if got is None:
            return None, "model_failed"
        if not all(fact_in(f, _shown(chunk)) for f in got.facts):  # a misquote drops the question
            return None, "fact_not_in_chunk"
        facts, why = focused_facts(got.question, got.facts, focus, sentences)
        if why:
            return None, why
        return _checked(got.question, [(f, _shown(chunk)) for f in facts], lang,
                        {"sources": [pool.name], "provenance": [_where(pool, chunk)]})

    def two_chunks(self, pool: Pool, _other: Pool | None = None):
        return self._pair(pool, pool, "two_chunks")

    def cross_collection(self, pool: Pool, other: Pool | None = None):
        return self._pair(pool, other or pool, "cross_collection")

    def _pair(self, first_pool: Pool, second_pool: Pool, kind: str):
        first, second = first_pool.next(), second_pool.next()
        if first.id == second.id:
            second = second_pool.next()
        lang = language_of(first.page_content)
        human = fence(_shown(first)) + "\n\n" + fence(_shown(second))
        got = self._write(TwoFacts, P.TWO_FACTS_SYSTEM, lang, human, (first_pool.name, kind))
        if got is None:
            return None, "model_failed"
        sources = list(dict.fromkeys([first_pool.name, second_pool.name]))
        return _checked(got.question, [(got.fact_first, _shown(first)), (got.fact_second, _shown(second))], lang,
                        {"sources": sources, "provenance": [_where(first_pool, first), _where(second_pool, second)]})

    def unanswerable(self, pool: Pool, _other: Pool | None = None):
        chunk = pool.next()
        lang = language_of(chunk.page_content)
        got = self._write(Unanswerable, P.UNANSWERABLE_SYSTEM, lang, self._focused(chunk)[0],
                          (pool.name, "unanswerable"))
        if got is None:
            return None, "model_failed"
        if not in_language(got.question, lang):
            return None, "language"
        if _norm(got.missing) in pool.corpus or not self._absent(pool, got.question):
            return None, "not_absent"
        return {"question": _squash(got.question), "facts": [], "answerable": False, "lang": lang,
                "sources": [pool.name], "provenance": [_where(pool, chunk)], "missing": _squash(got.missing)}, ""

    def _absent(self, pool: Pool, question: str) -> bool:
        """Search the collection for the question and have the model read what comes back: absent only
        when none of it answers (a verdict that cannot be read keeps the question out)."""
        hits = self.kb.search(pool.name, question, k=self.k)
        if not hits:
            return True
        human = f"Question: {question}\n\n" + "\n\n".join(fence(_shown(d)) for d in hits)
        got = self._ask(AnsweredCheck, P.ANSWERED_CHECK_SYSTEM, human)
        return got is not None and not got.answered

    def small_talk(self, pool: Pool, _other: Pool | None = None):
        lang = pool.language()
        human = fence(f"{pool.name}: {pool.description}", "collections")
        got = self._write(SmallTalk, P.SMALL_TALK_SYSTEM, lang, human, (pool.name, "small_talk"))
        if got is None:
            return None, "model_failed"
        if not in_language(got.message, lang):
            return None, "language"
        return {"question": _squash(got.message), "facts": [], "answerable": True, "lang": lang, "sources": [],
                "provenance": [{"collection": pool.name, "file": "", "chunk_id": ""}]}, ""


def _checked(question: str, facts: list[tuple[str, str]], lang: str, fields: dict):
    """The checks every question with facts passes: quoted, in the chunk's language, not giving itself away."""
    if not all(fact_in(fact, chunk) for fact, chunk in facts):
        return None, "fact_not_in_chunk"
    quoted = list(dict.fromkeys(_squash(fact) for fact, _chunk in facts))
    if not in_language(question, lang):
        return None, "language"
    if gives_away(question, quoted):
        return None, "answer_in_question"
    return {"question": _squash(question), "facts": quoted, "answerable": True, "lang": lang, **fields}, ""


# ---------------------------------------------------------------- the set


def pools(kb, collections: list[str], seed: int = 0) -> list[Pool]:
    """Each chosen collection's chunks, sampled; a collection without chunks is refused by name."""
    from core.knowledge.sources import get_source

    out = []
    for name in dict.fromkeys(collections):
        chunks = kb.chunks(name, limit=None)
        if not chunks:
            raise ValueError(f"collection {name!r} has no chunks; index some files first")
        out.append(Pool(name, get_source(kb, name).description, sample_chunks(chunks, seed),
                        _norm(" ".join(c.page_content for c in chunks))))
    return out


def _eta(done: Generated, kept: int, wanted: int) -> float | None:
    """Seconds left, from the measured seconds per model attempt and the share of attempts kept so far."""
    if not done.attempts or not kept:
        return None
    per_attempt = done.seconds / done.attempts
    return round((wanted - kept) * done.attempts / kept * per_attempt, 1)


def _unique(item: dict | None, why: str, kept: list[str], meaning: Meaning) -> tuple[dict | None, str]:
    """The item, or None with the reason: the same words as a kept question, or the same meaning."""
    if item is None:
        return None, why
    if is_duplicate(item["question"], kept):
        return None, "duplicate"
    if meaning.same_as_any(item["question"], kept):
        return None, "same_meaning"
    return item, ""


def generate(kb, model, collections: list[str], count: int = 10, progress: Progress | None = None,
             should_stop: Callable[[], bool] | None = None, seed: int = 0, k: int = 3,
             into: Generated | None = None) -> Generated:
    """Write up to ``count`` checked questions over ``collections`` (stops early when ``should_stop()``).

    ``into`` is filled as questions are kept, so a caller that is interrupted (a page rerun) keeps them.
    """
    chosen = pools(kb, collections, seed)
    plan = plan_kinds(count, len(chosen), max(len(p.order) for p in chosen))
    writer, done, started = Writer(model, kb, k), into or Generated(), time.perf_counter()
    meaning = Meaning(kb.embed_query)
    while len(done.items) < count and done.attempts < count * ATTEMPTS_PER_QUESTION:
        if should_stop and should_stop():
            done.stopped = True
            break
        kind = plan[done.attempts % len(plan)]
        pool = chosen[done.attempts % len(chosen)]
        other = chosen[(done.attempts + 1) % len(chosen)]
        item, why = getattr(writer, kind)(pool, other)
        done.attempts += 1
        item, why = _unique(item, why, [i["question"] for i in done.items], meaning)
        if item is None:
            done.dropped[why] += 1
        else:
            n = len(done.items) + 1
            done.items.append({"id": f"g{n:03d}", "category": kind, "kind": kind, **item})
        done.seconds = time.perf_counter() - started
        if progress:
            progress(len(done.items), count, kind, _eta(done, len(done.items), count))
    return done
