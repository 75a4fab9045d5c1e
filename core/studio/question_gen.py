"""Question sets written answer first from collections: code picks the answer, the model writes the question,
a round trip keeps it.

Chunks are sampled across each collection's files. For each question a candidate answer is taken from a chunk
(core.studio.answer_spans: a figure with its unit, a name, a defining phrase), and the configured model writes a
question in the chunk's language whose answer it is. The question is kept when it does not contain its answer,
retrieval over its collections puts its chunk in the top k, and answering it from that chunk (one short call)
gives the span back. An unanswerable question asks the same kind of detail about something not covered, and is
checked absent from every collection; small talk is checked to be the user's, not the assistant's. Every drop is
counted by reason. The result is a question set in the JSONL format of core.studio.question_set.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from core.knowledge import hybrid
from core.llm.graders import QUESTION_KINDS
from core.prompts import fence
from core.prompts import questions as P
from core.prompts.questions import ANSWER_CHARS, QUESTION_CHARS, SMALL_TALK_CHARS
from core.studio.answer_spans import Span, candidates, gives_a_span_like, hint, line_of, same_answer, stated_in
from core.studio.question_checks import (
    BLANK,
    Meaning,
    as_asked,
    asks,
    assistant_voice,
    copies,
    first_question,
    in_language,
    language_of,
    squash,
    unique,
    without_echo,
)
from core.studio.question_set import QuestionSetError, count_problem

KINDS = QUESTION_KINDS  # the kinds Auto routes (core.patterns.policy)
# the order kinds are tried in: every kind turns up within the first six questions of a set
CYCLE = ("single", "two_chunks", "unanswerable", "single", "cross_collection", "small_talk", "single",
         "two_chunks", "single", "unanswerable")
ATTEMPTS_PER_QUESTION = 3  # questions written per question wanted, at most
# a kind the set has none of yet is written again after a drop, up to this many times, before a single fact takes
# its place: tried once, a set of 10 kept 1 unanswerable question in 12 attempts over four collections
ATTEMPTS_PER_KIND = 3
MIN_CHUNK_CHARS = 60  # headings and stubs make poor questions
CHUNK_CHARS = 1200  # the model sees at most this much of a chunk; spans are taken from what it sees
RECENT_SHOWN = 8  # small-talk messages written before, shown so the next one differs
LANGUAGES = {"ko": "Korean (한국어)", "en": "English"}

Progress = Callable[[int, int, str, "float | None"], None]  # (kept, wanted, what happened, seconds left or None)


class Question(BaseModel):
    question: str = Field(min_length=3, max_length=QUESTION_CHARS)


class Answer(BaseModel):
    answer: str = Field(max_length=ANSWER_CHARS)


class SmallTalk(BaseModel):
    message: str = Field(min_length=2, max_length=SMALL_TALK_CHARS)


class AnsweredCheck(BaseModel):
    answered: bool


@dataclass
class Generated:
    """What a generation produced: the kept questions, why the others were dropped, and what it cost."""

    items: list[dict] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    attempts: int = 0
    seconds: float = 0.0
    stopped: bool = False
    model_calls: int = 0
    call_bound: int = 0  # the most model calls the generation could make (ATTEMPTS_PER_QUESTION × a kind's most)

    def summary(self) -> dict:
        kept = len(self.items)
        return {"kept": kept, "attempts": self.attempts, "dropped": dict(self.dropped),
                "seconds": round(self.seconds, 1), "stopped": self.stopped, "model_calls": self.model_calls,
                "calls_per_kept": round(self.model_calls / kept, 1) if kept else None, "call_bound": self.call_bound,
                "kinds": dict(Counter(i["kind"] for i in self.items)),
                "languages": dict(Counter(i["lang"] for i in self.items))}


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


def shown(chunk) -> str:
    return chunk.page_content[:CHUNK_CHARS]


@dataclass
class Pool:
    """One collection's sampled chunks and their unused candidate answers, taken in turn across chunks."""

    name: str
    description: str
    order: list
    cursor: int = 0
    spans: dict = field(default_factory=dict)  # chunk id -> candidate answers not yet asked about
    templates: int = 0  # which chunk the next unanswerable question is written from

    def candidates(self, chunk) -> list[Span]:
        if chunk.id not in self.spans:  # found on a chunk's first visit: a large collection is not read whole
            self.spans[chunk.id] = candidates(shown(chunk))
        return self.spans[chunk.id]

    def take(self):
        """(chunk, span) from the next chunk that still has a candidate, the span used up; None when none has."""
        for _ in range(len(self.order)):
            chunk = self.order[self.cursor % len(self.order)]
            self.cursor += 1
            if self.candidates(chunk):
                return chunk, self.candidates(chunk).pop(0)
        return None

    def neighbour(self, chunk):
        """(chunk, span) from the chunk before or after ``chunk`` in its file, the span used up; or None."""
        meta = chunk.metadata
        for other in self.order:
            om = other.metadata
            near = abs(int(om.get("chunk_index", -9)) - int(meta.get("chunk_index", -9))) == 1
            if near and om.get("source") == meta.get("source") and om.get("page") == meta.get("page") \
                    and self.candidates(other):
                return other, self.candidates(other).pop(0)
        return None

    def template(self):
        """The chunk the next unanswerable question is written from (its heading and language), in turn; or None."""
        if not self.order:
            return None
        self.templates += 1
        return self.order[(self.templates - 1) % len(self.order)]

    def language(self) -> str:
        return Counter(language_of(c.page_content) for c in self.order[:8]).most_common(1)[0][0]


FIGURE_SORTS = ("money", "time", "date", "percent", "duration", "size", "count", "number")


def topic_of(chunk) -> str:
    """What a chunk is on, without what it states: its heading, else its file's name."""
    first = chunk.page_content.strip().split("\n", 1)[0]
    if first.startswith("#"):
        return first.lstrip("# ").strip()[:80]
    name = str(chunk.metadata.get("title") or chunk.metadata.get("source") or "").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0].replace("_", " ")[:80] or "-"


def _echoes(reply: str, question: str) -> bool:
    """Is the reply words the question already holds (its subject given back, not a detail about it)?"""
    words = squash(reply).strip(" .?!").lower()
    return bool(words) and words in question.lower()


def _where(pool: Pool, chunk) -> dict:
    return {"collection": pool.name, "file": str(chunk.metadata.get("source", "?")), "chunk_id": str(chunk.id)}


def _language_name(lang: str) -> str:
    return LANGUAGES.get(lang, "the language of the document")


# ---------------------------------------------------------------- writing one question


class Writer:
    """Writes one question of a kind and checks it; each kind returns (item, "") or (None, why dropped).

    Every call on a chunk starts with the same system text and the chunk, so the question and its round-trip
    answer share a prefix (the embedded model's prompt-state cache reads the chunk once).
    """

    def __init__(self, model, kb, pools: list[Pool], k: int = 3):
        self.model, self.kb, self.pools, self.k = model, kb, pools, k
        self.calls = 0
        self.note = ""  # what the last attempt wrote and why it was dropped, for its progress line
        self.small_talk_written: dict[str, list[str]] = {}
        self.unanswerable_written = 0

    def most_calls(self) -> int:
        """The most model calls one question can cost: an unanswerable one, asked once per collection, or a pair
        (two questions and their two answers)."""
        # per collection: the check's probabilities, (none given) its written verdict, then the answer it is tried by
        return max(4, 1 + len(self.pools) * 3)

    def _ask(self, schema, human: str):
        from core.llm import graders

        self.calls += 1
        outcome = graders.ask(self.model, schema, P.SYSTEM, human, None)
        return None if outcome.fallback or outcome.value is None else outcome.value

    def _answer(self, docs: str, question: str):
        """The question answered from the fenced chunks (the round trip, and the absence check's second look)."""
        return self._ask(Answer, docs + "\n\n" + P.ANSWER_TASK.format(question=fence(question, "question")))

    def single(self, pool: Pool, _other: Pool | None = None):
        picked = pool.take()
        if picked is None:
            return None, "no_candidate"
        return self._answerable([(pool, picked[0])], [picked[1]])

    def two_chunks(self, pool: Pool, _other: Pool | None = None):
        return self._pair(pool, pool)

    def cross_collection(self, pool: Pool, other: Pool | None = None):
        return self._pair(pool, other or pool)

    def _pair(self, first_pool: Pool, second_pool: Pool):
        first = first_pool.take()
        if first is None:
            return None, "no_candidate"
        second = first_pool.neighbour(first[0]) if second_pool is first_pool else second_pool.take()
        if second is None:
            first_pool.spans[first[0].id].insert(0, first[1])  # unused: the next single question takes it
            return None, "no_pair"
        return self._answerable([(first_pool, first[0]), (second_pool, second[0])], [first[1], second[1]])

    def _answerable(self, where: list[tuple[Pool, object]], spans: list[Span]):
        """Ask for a question whose answer is the span(s), check it, and make the round trip.

        Two spans are asked as two questions, each written from its own chunk, then put together: asked for one
        question needing both documents, Qwen 1.5B put one of the two answers into it (3 of 4 Korean pairs)."""
        lang = language_of(where[0][1].page_content)
        written = []
        for (_pool, chunk), span in zip(where, spans):
            question = self._write(chunk, span, lang)
            if question is None:
                return None, "model_failed"
            written.append(question)
        question = " ".join(written)
        self.note = f"{question} [{' | '.join(s.text for s in spans)}]"
        if not in_language(question, lang):
            return None, "language"
        if not all(asks(q, lang) for q in written):
            return None, "not_a_question"
        if any(stated_in(s, question) for s in spans):
            return None, "answer_in_question"
        # the sentence it was shown, blank and all, is a copy too when the blank could not be asked for
        if BLANK in question or any(copies(q, chunk.page_content) for q, (_pool, chunk) in zip(written, where)):
            return None, "copies_chunk"
        why = self._round_trip(question, where, spans, written)
        if why:
            return None, why
        sources = list(dict.fromkeys(pool.name for pool, _chunk in where))
        return {"question": question, "facts": list(dict.fromkeys(s.text for s in spans)), "answerable": True,
                "lang": lang, "sources": sources, "provenance": [_where(pool, chunk) for pool, chunk in where]}, ""

    def _write(self, chunk, span: Span, lang: str) -> str | None:
        """One question whose answer is ``span``, written from its chunk alone in ``lang``; None if unreadable."""
        # the sentence with its answer blanked: shown it whole, Qwen 1.5B copied it, answer and all, as its question
        line = fence(line_of(shown(chunk), span, BLANK), "line", inline=True)
        task = P.WRITE_TASK.format(answer=fence(span.text, "answer", inline=True), line=line, hint=hint(span),
                                   language=_language_name(lang))
        got = self._ask(Question, fence(shown(chunk)) + "\n\n" + task)
        if got is None:
            return None
        return as_asked(squash(first_question(without_echo(got.question, shown(chunk)))), lang, (span,))

    def _round_trip(self, question: str, where: list, spans: list[Span], parts: list[str]) -> str:
        """"" when retrieval finds the question's chunks and answering each part from its chunk gives its span back
        (a pair's two questions one by one: asked both at once, Qwen 1.5B answered one of them)."""
        found = hybrid.search(self.kb, list(dict.fromkeys(p.name for p, _c in where)), question, self.k).documents
        ids = {str(d.id) for d in found}
        if any(str(chunk.id) not in ids for _pool, chunk in where):
            return "not_retrieved"
        for part, (_pool, chunk), span in zip(parts, where, spans):
            got = self._answer(fence(shown(chunk)), part)
            if got is None:
                return "model_failed"
            self.note += f" -> {squash(got.answer)}"
            if not same_answer(span, got.answer):
                return "answer_differs"
        return ""

    def unanswerable(self, pool: Pool, _other: Pool | None = None):
        chunk = pool.template()
        if chunk is None:
            return None, "no_candidate"
        # the aspects in turn across the set, so a kind written again asks for another detail
        sort, aspect = P.UNANSWERABLE_ASPECTS[self.unanswerable_written % len(P.UNANSWERABLE_ASPECTS)]
        self.unanswerable_written += 1
        lang = language_of(chunk.page_content)
        about = fence(f"{pool.name}: {pool.description}" if pool.description else pool.name, "collections", inline=True)
        task = P.UNANSWERABLE_TASK.format(about=about, topic=fence(topic_of(chunk), "line", inline=True),
                                          aspect=aspect, language=_language_name(lang),
                                          example=P.UNANSWERABLE_EXAMPLES.get(lang, ""))
        # what the documents are about and a heading, never a sentence: modelled on a sentence, Qwen 1.5B copied it
        # or asked for a detail it states; whether the question is unanswerable is checked in every collection below
        got = self._ask(Question, task)
        if got is None:
            return None, "model_failed"
        question = as_asked(squash(first_question(without_echo(got.question, shown(chunk)))), lang)
        self.note = f"{question} [{sort}]"
        if not in_language(question, lang):
            return None, "language"
        if not asks(question, lang):
            return None, "not_a_question"
        if copies(question, chunk.page_content):
            return None, "copies_chunk"
        like = Span("", 0, "figure", sort) if sort in FIGURE_SORTS else Span("", 0, sort)
        if not all(self._absent(other, question, like) for other in self.pools):
            return None, "not_absent"
        return {"question": question, "facts": [], "answerable": False, "lang": lang, "sources": [pool.name],
                "provenance": [_where(pool, chunk)]}, ""

    def _absent(self, pool: Pool, question: str, like: Span) -> bool:
        """Do none of the collection's best chunks for the question state its answer? Read from the model's
        p("yes") where it gives probabilities, else its written verdict (one that cannot be read: not absent);
        a verdict of absent is then tried: answered from those chunks, a detail of ``like``'s sort that they
        state means they answer it (the verdict alone passed "How long does support take on the Team plan?")."""
        from core.llm import graders
        from core.llm.verdicts import supports_probabilities

        found = hybrid.search(self.kb, [pool.name], question, self.k).documents
        if not found:
            return True
        docs = "\n\n".join(fence(shown(d)) for d in found)
        human = docs + "\n\n" + P.ANSWERED_TASK.format(question=fence(question, "question"))
        reading = None
        if supports_probabilities(self.model):
            self.calls += 1
            reading = graders.read_many(self.model, P.SYSTEM, [human], graders.YES_NO)[0]
        if reading is not None:  # cut at the model's fitted relevance threshold: the nearest yes/no over documents
            self.note += f" [{pool.name}: p(yes) {reading.p('yes'):.2f}]"
            absent = reading.p("yes") < graders.default_thresholds(self.model).cut("relevance")
        else:
            got = self._ask(AnsweredCheck, human)
            absent = got is not None and not got.answered
        if not absent:
            return False
        got = self._answer(docs, question)
        if got is None:
            return False  # an answer that cannot be read proves nothing absent
        # a name the question itself gives is no answer to it ("Who wrote Ironwood Fitness Club's plans?" ->
        # "Ironwood Fitness Club" dropped a question the documents do not answer)
        if gives_a_span_like(got.answer, [shown(d) for d in found], like) and not _echoes(got.answer, question):
            self.note += f" [{pool.name} answers it: {squash(got.answer)}]"
            return False
        return True

    def small_talk(self, pool: Pool, _other: Pool | None = None):
        lang = pool.language()
        written = self.small_talk_written.setdefault(pool.name, [])
        human = fence(f"{pool.name}: {pool.description}", "collections") + "\n\n" + P.SMALL_TALK_TASK.format(
            sort=P.SMALL_TALK_SORTS[len(written) % len(P.SMALL_TALK_SORTS)], language=_language_name(lang),
            different=P.DIFFERENT if written else "")
        if written:
            human += "\n\n" + fence("\n".join(written[-RECENT_SHOWN:]), "already_written")
        got = self._ask(SmallTalk, human)
        if got is None:
            return None, "model_failed"
        message = squash(got.message)
        self.note = message
        written.append(message)
        if not in_language(message, lang):
            return None, "language"
        if assistant_voice(message):
            return None, "assistant_voice"
        return {"question": message, "facts": [], "answerable": True, "lang": lang, "sources": [],
                "provenance": [{"collection": pool.name, "file": "", "chunk_id": ""}]}, ""


# ---------------------------------------------------------------- the set


def pools(kb, collections: list[str], seed: int = 0) -> list[Pool]:
    """Each chosen collection's chunks, sampled; a collection without chunks is refused by name."""
    from core.knowledge.sources import get_source

    out = []
    for name in dict.fromkeys(collections):
        chunks = kb.chunks(name, limit=None)
        if not chunks:
            raise ValueError(f"collection {name!r} has no chunks; index some files first")
        out.append(Pool(name, get_source(kb, name).description, sample_chunks(chunks, seed)))
    return out


def _eta(done: Generated, kept: int, wanted: int) -> float | None:
    """Seconds left, from the measured seconds per attempt and the share of attempts kept so far."""
    if not done.attempts or not kept:
        return None
    per_attempt = done.seconds / done.attempts
    return round((wanted - kept) * done.attempts / kept * per_attempt, 1)


def _record(done: Generated, kind: str, item: dict | None, why: str, note: str) -> str:
    """Keep the item or count its drop; the line progress shows for it (a drop: what was written, and why)."""
    if item is None:
        done.dropped[why] += 1
        return f"{kind}: dropped ({why}) {note}".rstrip()
    n = len(done.items) + 1
    done.items.append({"id": f"g{n:03d}", "category": kind, "kind": kind, **item})
    facts = f" [{' | '.join(item['facts'])}]" if item["facts"] else ""
    return f"{kind}: kept g{n:03d} {item['question']}{facts}"


def generate(kb, model, collections: list[str], count: int = 10, progress: Progress | None = None,
             should_stop: Callable[[], bool] | None = None, seed: int = 0, k: int = 3,
             into: Generated | None = None) -> Generated:
    """Write up to ``count`` checked questions over ``collections`` (stops early when ``should_stop()``).

    ``into`` is filled as questions are kept, so a caller that is interrupted (a page rerun) keeps them. A
    kind that finds no candidate answer costs no model call and no attempt; when no kind finds one, it stops.
    A ``count`` past the settings' RAG_MAX_SET_QUESTIONS is refused (QuestionSetError) before any model call.
    """
    problem = count_problem(count, getattr(kb, "settings", None))
    if problem:
        raise QuestionSetError(problem)
    chosen = pools(kb, collections, seed)
    plan = plan_kinds(count, len(chosen), max(len(p.order) for p in chosen))
    writer, done, started = Writer(model, kb, chosen, k), into or Generated(), time.perf_counter()
    done.call_bound = count * ATTEMPTS_PER_QUESTION * writer.most_calls()
    meaning, slot, idle, spent, misses = Meaning(kb.embed_query), 0, 0, set(), Counter()
    while len(done.items) < count and done.attempts < count * ATTEMPTS_PER_QUESTION and idle < len(plan):
        if should_stop and should_stop():
            done.stopped = True
            break
        position = len(done.items)  # the question wanted next: its kind is tried until one is kept (see below)
        kind, pool, other = plan[position], chosen[slot % len(chosen)], chosen[(slot + 1) % len(chosen)]
        slot, calls, writer.note = slot + 1, writer.calls, ""
        item, why = getattr(writer, kind)(pool, other)
        if writer.calls == calls:  # nothing left to ask about for this kind here: not an attempt
            spent |= {pool.name} if kind == "single" and why == "no_candidate" else set()
            if len(spent) == len(chosen):
                break  # every candidate answer was asked about: what is left would be small talk only
            idle += 1
            if kind != "single" and idle % len(chosen) == 0:
                plan[position] = "single"  # no collection has what this kind is made of any more
            continue
        idle, done.attempts, done.model_calls = 0, done.attempts + 1, writer.calls
        item, why = unique(item, why, [i["question"] for i in done.items], meaning)
        line = _record(done, kind, item, why, writer.note)
        if item is None:
            misses[position] += 1
            if kind in {i["kind"] for i in done.items} or misses[position] >= ATTEMPTS_PER_KIND:
                # a kind the set has, or one that would not be kept here: the set takes a single fact instead
                plan[position] = "single"
        done.seconds = time.perf_counter() - started
        if progress:
            progress(len(done.items), count, line, _eta(done, len(done.items), count))
    done.seconds = time.perf_counter() - started
    return done

