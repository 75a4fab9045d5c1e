"""Every router, grader, rewriter and refiner: one function over a small structured-output schema.

A verdict that fails to parse is retried once; a second failure returns the documented fallback
with ``fallback=True`` and the error text, so the graph records it and continues. Provider errors
(connection, auth, timeout) are not parse failures and propagate to the runner.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from langchain_core.documents import Document
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel, Field, create_model

from core.llm.budgets import ReplyCutOff, bounded_text
from core.llm.structured import REFUSALS, structured
from core.llm.thresholds import Thresholds, model_key, thresholds_for
from core.llm.verdicts import Reading, probability_text, read_verdict, supports_probabilities
from core.prompts import documents_system, fence
from core.prompts import workflow as P

# ValidationError, JSONDecodeError..., and a provider that refused or was cut off: the fallback applies
PARSE_ERRORS = (OutputParserException, ValueError, KeyError, TypeError, *REFUSALS)
NO_STREAM = {"tags": ["nostream"]}  # grader output never reaches the chat bubble

T = TypeVar("T", bound=BaseModel)


# ---------------------------------------------------------------- schemas


class Route(BaseModel):
    """Where to look for the answer: a source id, web or direct (the ids are fixed per run)."""

    route: str


class Sources(BaseModel):
    """Which sources to search (one or more): source ids or web."""

    sources: list[str] = Field(min_length=1)


def route_schema(ids: list[str]) -> type[Route]:
    """Route with an enum of this run's ids, so constrained decoders can only emit one of them."""
    return create_model("Route", __base__=Route, route=(Literal[tuple(ids)], ...))


def sources_schema(ids: list[str], most: int) -> type[Sources]:
    return create_model("Sources", __base__=Sources,
                        sources=(list[Literal[tuple(ids)]], Field(min_length=1, max_length=max(1, most))))


class Complexity(BaseModel):
    complexity: Literal["simple", "compare", "analyse"]


QUESTION_CHARS = 150  # a rewritten or sub-question's longest spelling: the prompts say so, the schemas bound it


class SubQuestions(BaseModel):
    questions: list[bounded_text(QUESTION_CHARS)] = Field(min_length=1, max_length=3)


class RetrievalNeed(BaseModel):
    """The decision Self-RAG stores and shows; only ``kind == "lookup"`` retrieves."""

    retrieve: Literal["yes", "no"]
    kind: str = ""


class MessageKind(BaseModel):
    """What answering a message needs, the question the model is actually asked (see needs_retrieval)."""

    kind: Literal["lookup", "small_talk", "general_knowledge"]


QUESTION_KINDS = ("single", "two_chunks", "cross_collection", "unanswerable", "small_talk")  # as question sets name them


class QuestionKind(BaseModel):
    """The kind of a question, as question sets name kinds (Auto routes each kind to its own pattern)."""

    kind: Literal[QUESTION_KINDS]


class Relevance(BaseModel):
    relevant: Literal["yes", "no"]


class CragGrade(BaseModel):
    grade: Literal["correct", "ambiguous", "incorrect"]
    confidence: float = Field(ge=0.0, le=1.0)


class Grounded(BaseModel):
    grounded: Literal["yes", "no"]


class Usefulness(BaseModel):
    useful: Literal["yes", "no"]
    score: Literal[1, 2, 3, 4, 5]


class Rewrite(BaseModel):
    question: bounded_text(QUESTION_CHARS, min_length=1)


# ---------------------------------------------------------------- the one mechanism


@dataclass
class Outcome(Generic[T]):
    """A verdict, how it was read (``probability``: from the model's token probabilities against
    ``threshold``; ``text``: the verdict the model wrote), and the fallback's error if it applied."""

    value: T
    fallback: bool = False
    error: str = ""
    p: float | list[float] | None = None  # a list for verdicts over several items (knowledge strips)
    threshold: float | list[float] | None = None
    method: str = "text"
    choices: dict[str, float] | None = None  # a choice among several (an agent's next step): p of each

    def trace_fields(self) -> dict:
        """What the trace records of how the verdict was read."""
        if self.method != "probability":
            return {"method": "text"}
        p = [round(x, 3) for x in self.p] if isinstance(self.p, list) else round(self.p, 3)
        fields = {"method": "probability", "p": p, "threshold": self.threshold}
        if self.choices:
            fields["p_choices"] = {name: round(x, 3) for name, x in self.choices.items()}
        return fields

    def reading(self) -> str:
        """How the decision was read: ``0.81 ≥ 0.62`` (probability), "" for a written verdict."""
        return probability_text(self.trace_fields())

    def why(self) -> str | None:
        """The trace's reason for this verdict: the parse error of a fallback, if one applied."""
        return self.error or None


def _messages(system: str, human: str) -> list:
    return [SystemMessage(system), HumanMessage(human)]


def _fallback(fallback: T, exc: Exception) -> Outcome[T]:
    return Outcome(fallback, fallback=True, error=f"{exc.__class__.__name__}: {str(exc)[:300]}")


def ask(model: BaseChatModel, schema: type[T], system: str, human: str, fallback: T) -> Outcome[T]:
    """One structured verdict, with one retry on a parse failure (not on a reply cut off at its budget), then the fallback."""
    runnable = structured(model, schema)
    last: Exception | None = None
    for _ in range(2):
        try:
            value = runnable.invoke(_messages(system, human), config=NO_STREAM)
            if isinstance(value, schema):
                return Outcome(value)
            return Outcome(schema.model_validate(value))
        except PARSE_ERRORS as exc:
            last = exc
            if isinstance(exc, ReplyCutOff):  # the same budget would be spent again on the same reply
                break
    return _fallback(fallback, last)


def ask_many(model: BaseChatModel, schema: type[T], system: str, humans: list[str], fallback: T,
             max_concurrency: int, progress: Callable[[int, int], None] | None = None) -> list[Outcome[T]]:
    """The same verdict over many inputs, concurrently (bounded); failures retried once, together (not cut-offs).

    ``progress(done, total)`` is called as each first attempt ends (from the worker threads).
    """
    if not humans:
        return []
    runnable = structured(model, schema)
    if progress:
        runnable = _counted(runnable, len(humans), progress)
    config = {**NO_STREAM, "max_concurrency": max(1, max_concurrency)}
    inputs = [_messages(system, h) for h in humans]
    results: list = runnable.batch(inputs, config=config, return_exceptions=True)
    retry = [i for i, r in enumerate(results) if isinstance(r, PARSE_ERRORS) and not isinstance(r, ReplyCutOff)]
    if retry:
        again = runnable.batch([inputs[i] for i in retry], config=config, return_exceptions=True)
        for i, r in zip(retry, again):
            results[i] = r
    outcomes: list[Outcome[T]] = []
    for r in results:
        if isinstance(r, PARSE_ERRORS):
            outcomes.append(_fallback(fallback, r))
        elif isinstance(r, Exception):
            raise r  # provider trouble: the runner turns it into one clear message
        else:
            outcomes.append(Outcome(r if isinstance(r, schema) else schema.model_validate(r)))
    return outcomes


def _counted(runnable, total: int, progress: Callable[[int, int], None]):
    """The runnable, reporting how many of ``total`` inputs are done, whether they succeeded or not."""
    lock, done = threading.Lock(), [0]

    def call(messages, config):
        try:
            return runnable.invoke(messages, config)
        finally:
            with lock:
                done[0] = min(done[0] + 1, total)  # retried inputs do not count twice
                count = done[0]
            progress(count, total)

    return RunnableLambda(call)


# ---------------------------------------------------------------- probability verdicts

YES_NO = ["yes", "no"]
# the most calls one verdict can make: its probabilities read once, then (none given) the written verdict with one
# retry on a parse failure; the patterns' LLM-call bounds count each verdict so
VERDICT_CALLS = 3
ONE_WORD = "\nAnswer with one word: {words}."


def _one_word(human: str, words: list[str]) -> str:
    return human + ONE_WORD.format(words=", ".join(words[:-1]) + " or " + words[-1])


def default_thresholds(model) -> Thresholds:
    """The thresholds for a model when the caller has none (shipped or generic; no store read)."""
    return thresholds_for(None, model_key(model))


def read_many(model, system: str, humans: list[str], words: list[str],
              max_concurrency: int = 1) -> list[Reading | None]:
    """``words``' probabilities for each message, concurrently; None where the provider gives none.

    A reply that cannot be read is a None (the caller falls back to the written verdict); provider
    errors (connection, auth, timeout) propagate as in ``ask``.
    """
    if not humans:
        return []

    def one(human: str) -> Reading | None:
        try:
            return read_verdict(model, _messages(system, _one_word(human, words)), words)
        except PARSE_ERRORS:
            return None

    runnable = RunnableLambda(one)
    results = runnable.batch(humans, config={"max_concurrency": max(1, max_concurrency)}, return_exceptions=True)
    for r in results:
        if isinstance(r, Exception):
            raise r
    return results


def _binary_many(model, system: str, humans: list[str], grader: str, thresholds: Thresholds | None,
                 schema: type[T], make: Callable[[bool], T], fallback: T, max_concurrency: int) -> list[Outcome[T]]:
    """yes/no verdicts read as p(yes) ≥ the grader's threshold; the written verdict where p cannot be read."""
    cut = (thresholds or default_thresholds(model)).cut(grader)
    readings = read_many(model, system, humans, YES_NO, max_concurrency)
    outcomes: list[Outcome[T] | None] = [
        Outcome(make(r.p("yes") >= cut), p=r.p("yes"), threshold=round(cut, 3), method="probability") if r else None
        for r in readings]
    missing = [i for i, o in enumerate(outcomes) if o is None]
    if missing:
        for i, outcome in zip(missing, ask_many(model, schema, system, [humans[i] for i in missing], fallback,
                                                max_concurrency)):
            outcomes[i] = outcome
    return outcomes


def _judge(task: str, question: str | None = None, documents: str = "", answer: str | None = None) -> str:
    """A grader's message: the data first (question, documents, answer), the check last.

    With one shared system text, calls over the same data share their prompt up to the task, so a
    local model reuses its cached prefix: several documents against one question, or several checks
    against one document, pay only for what differs.
    """
    parts = [f"Question: {question}"] if question is not None else []
    parts += [documents] if documents else []
    parts += [fence(answer, "answer")] if answer is not None else []
    task = task.replace(P.DATA_NOTE, "").strip()  # the shared system text already says it
    return "\n\n".join(parts + [f"Task: {task}"])


# ---------------------------------------------------------------- graders


def _source_lines(sources) -> str:
    return "\n".join(s.line() for s in sources) or "(no document collections are enabled)"


def route_question(model, question: str, sources: list) -> Outcome[Route]:
    """One of the sources' ids, web or direct. Fallback: direct (the run says so in its trace)."""
    schema = route_schema([s.id for s in sources] + ["web", "direct"])
    system = P.ROUTER_SYSTEM.format(sources=_source_lines(sources))
    return ask(model, schema, system, f"Question: {question}", schema(route="direct"))


def select_sources(model, question: str, sources: list, most: int) -> Outcome[Sources]:
    """Multi-select among the sources and web for fan-out search, at most ``most``.

    Fallback: the first ``most`` sources (our own documents before the web), or web when there are none.
    """
    ids = [s.id for s in sources] + ["web"]
    schema = sources_schema(ids, most)
    system = P.MULTI_ROUTER_SYSTEM.format(sources=_source_lines(sources), most=most)
    fallback = schema(sources=[s.id for s in sources][:most] or ["web"])
    outcome = ask(model, schema, system, f"Question: {question}", fallback)
    outcome.value.sources = list(dict.fromkeys(outcome.value.sources))[:most]  # a small model may repeat itself
    return outcome


def classify_complexity(model, question: str) -> Outcome[Complexity]:
    """simple / compare / analyse. Fallback: simple (one retrieval)."""
    return ask(model, Complexity, P.COMPLEXITY_SYSTEM, f"Question: {question}", Complexity(complexity="simple"))


def decompose(model, question: str, max_parts: int = 3) -> Outcome[SubQuestions]:
    """At most ``max_parts`` sub-questions. Fallback: the question itself."""
    system = P.DECOMPOSE_SYSTEM.format(max_parts=max_parts, chars=QUESTION_CHARS)
    outcome = ask(model, SubQuestions, system, f"Question: {question}", SubQuestions(questions=[question]))
    cleaned = [_strip_label(" ".join(q.split()))[:300] for q in outcome.value.questions if q.strip()]
    outcome.value.questions = list(dict.fromkeys(cleaned))[:max_parts] or [question]
    return outcome


def needs_retrieval(model, question: str, sources: list = (),
                    thresholds: Thresholds | None = None) -> Outcome[RetrievalNeed]:
    """yes / no, with the kind of message that decided it. Fallback: yes (looking up is the safe default).

    The model classifies the message (lookup / small talk / general knowledge) rather than answering
    yes/no: asked "does this need looking up?", Qwen2.5 1.5B said "no" to 9 of the built-in set's 37 factual
    questions; with the named kinds it got 39 of the 41 scored questions right (benchmarks/probe_decisions.py).
    With probabilities, p = p(lookup) among the three kinds decides against the ``retrieve`` threshold, as
    Self-RAG's paper thresholds p(Retrieve). The collections are listed so the model knows what looking up
    would find.
    """
    system = P.RETRIEVAL_NEED_SYSTEM.format(sources=_source_lines(sources))
    human = f"Message: {question}"
    kinds = ["lookup", "small_talk", "general_knowledge"]
    reading = read_many(model, system, [human], kinds)[0]
    if reading is not None:
        cut = (thresholds or default_thresholds(model)).cut("retrieve")
        p = reading.p("lookup")
        kind = "lookup" if p >= cut else max(kinds[1:], key=reading.p)
        return Outcome(RetrievalNeed(retrieve="yes" if kind == "lookup" else "no", kind=kind), p=p,
                       threshold=round(cut, 3), method="probability")
    outcome = ask(model, MessageKind, system, human, MessageKind(kind="lookup"))
    kind = outcome.value.kind
    return Outcome(RetrievalNeed(retrieve="yes" if kind == "lookup" else "no", kind=kind), outcome.fallback,
                   outcome.error)


def classify_kind(model, question: str, sources: list, thresholds: Thresholds | None = None) -> Outcome[QuestionKind]:
    """single / two_chunks / cross_collection / unanswerable / small_talk, read as the graders read their verdicts.

    With probabilities: one verdict-sized call, the top kind's share over the kinds is ``p`` against the ``kind``
    threshold (below it the reading is unsure, and ``choices`` tells the caller which kinds came close); the kind is
    the top one either way. Otherwise the kind the model writes (one retry). Fallback: single (the commonest kind).
    """
    system = P.KIND_SYSTEM.format(sources=_source_lines(sources))
    human = f"Question: {question}"
    words = list(QUESTION_KINDS)
    reading = read_many(model, system, [human], words)[0]
    if reading is not None:
        cut = (thresholds or default_thresholds(model)).cut("kind")
        top = max(words, key=reading.p)
        return Outcome(QuestionKind(kind=top), p=reading.p(top), threshold=round(cut, 3), method="probability",
                       choices=dict(reading.probabilities))
    return ask(model, QuestionKind, system, human, QuestionKind(kind="single"))


def _doc(doc: Document) -> str:
    return fence(doc.page_content)


def _relevance(yes: bool) -> Relevance:
    return Relevance(relevant="yes" if yes else "no")


def grade_documents(model, question: str, docs: list[Document], max_concurrency: int,
                    thresholds: Thresholds | None = None) -> list[Outcome[Relevance]]:
    """Relevance yes/no per document, all at once, each call reading its one document.

    p(yes) against the relevance threshold where the provider gives probabilities, else the written verdict.
    The threshold is the ``relevance`` floor, raised for these documents to where one's odds fall below
    ``relevance_ratio`` of the best one's (``Thresholds.relevance_cut``): a document far less likely than the
    question's best is dropped, whatever the collection's level of p. Fallback: yes (keep, rather than lose
    evidence). Calls over one document share their prefix with any other grader of that document and question
    (Corrective's grade, another pattern's in Compare).
    """
    thresholds = thresholds or default_thresholds(model)
    humans = [_judge(P.RELEVANCE_SYSTEM, question, _doc(d)) for d in docs]
    outcomes = _binary_many(model, P.GRADER_SYSTEM, humans, "relevance", thresholds, Relevance, _relevance,
                            Relevance(relevant="yes"), max_concurrency)
    read = [o for o in outcomes if o.method == "probability"]
    if read:
        cut = thresholds.relevance_cut(max(o.p for o in read))
        for o in read:
            o.value, o.threshold = _relevance(o.p >= cut), round(cut, 3)
    return outcomes


def grade_documents_for_answer(model, question: str, docs: list[Document], max_concurrency: int,
                               thresholds: Thresholds | None = None) -> list[Outcome[Relevance]]:
    """``grade_documents`` laid out for the answer that follows: all documents first, each call naming its own.

    Every call starts with the answer's system text (``documents_system``), so the grades, the answer over
    the documents they kept (when they kept all) and its grounded check share that prefix: a local model
    reads the documents once instead of once in the grades and again to answer. Use it where the answer is
    written from these documents with ``documents_system`` (Self-RAG).

    Verdicts read from probabilities take ``grade_documents``' one-document layout instead: in this one the
    model's p barely tells relevant from irrelevant (Qwen2.5 1.5B, 43 labelled pairs: AUC 0.58, against 0.90
    one document a call; docs/BENCHMARKS.md), so discrimination is worth reading each document again.
    """
    if supports_probabilities(model):
        return grade_documents(model, question, docs, max_concurrency, thresholds)
    humans = [_judge(P.NUMBERED_RELEVANCE_SYSTEM.format(n=n), question) + "\n" + P.DATA_NOTE
              for n in range(1, len(docs) + 1)]
    return ask_many(model, Relevance, documents_system(docs), humans, Relevance(relevant="yes"), max_concurrency)


def crag_grade(model, question: str, docs: list[Document], max_concurrency: int,
               thresholds: Thresholds | None = None) -> list[Outcome[CragGrade]]:
    """correct / ambiguous / incorrect with confidence per document. Fallback: ambiguous, 0.5.

    As CRAG's evaluator: one relevance score, p(yes) of the relevance question, and two thresholds: at or
    above the upper one correct, below the lower one incorrect, between them ambiguous. It is the very call
    ``grade_documents`` makes, so in Compare a document graded for a question is read once. Where the
    provider gives no probabilities the model writes its grade and confidence (``CRAG_SYSTEM``).
    Each call reads its one document: Corrective answers from refined strips, not from these documents.
    """
    lower, upper = (thresholds or default_thresholds(model)).band("crag")
    humans = [_judge(P.RELEVANCE_SYSTEM, question, _doc(d)) for d in docs]
    readings = read_many(model, P.GRADER_SYSTEM, humans, YES_NO, max_concurrency)
    outcomes: list[Outcome[CragGrade] | None] = []
    for r in readings:
        if r is None:
            outcomes.append(None)
            continue
        p = r.p("yes")
        grade = "correct" if p >= upper else "incorrect" if p < lower else "ambiguous"
        outcomes.append(Outcome(CragGrade(grade=grade, confidence=round(p, 3)), p=p,
                                threshold=[round(lower, 3), round(upper, 3)], method="probability"))
    missing = [i for i, o in enumerate(outcomes) if o is None]
    written = ask_many(model, CragGrade, P.GRADER_SYSTEM, [_judge(P.CRAG_SYSTEM, question, _doc(docs[i]))
                                                          for i in missing],
                       CragGrade(grade="ambiguous", confidence=0.5), max_concurrency)
    for i, outcome in zip(missing, written):
        outcomes[i] = outcome
    return outcomes


class StripVerdicts(BaseModel):
    """One yes/no per numbered sentence, in order."""

    verdicts: list[Literal["yes", "no"]]


def _strip_schema(n: int) -> type[StripVerdicts]:
    # the exact length is part of the schema, so constrained decoders emit one verdict per strip
    return create_model("StripVerdicts", __base__=StripVerdicts,
                        verdicts=(list[Literal["yes", "no"]], Field(min_length=n, max_length=n)))


def grade_strips(model, question: str, strips_per_doc: list[list[str]], max_concurrency: int,
                 thresholds: Thresholds | None = None) -> list[Outcome[StripVerdicts]]:
    """Relevance of each sentence strip, per document.

    With probabilities: one call per strip, each after the same numbered list of the document's strips and
    naming its own (they share that prefix), p(yes) against the ``strip`` threshold. Otherwise one written
    call per document listing a verdict per strip. Fallback: every strip of that document kept (losing
    evidence is worse than keeping a sentence).
    """
    cut = (thresholds or default_thresholds(model)).cut("strip")
    outcomes: list[Outcome[StripVerdicts] | None] = [None] * len(strips_per_doc)
    for i, strips in enumerate(strips_per_doc):
        if not strips:
            outcomes[i] = Outcome(StripVerdicts(verdicts=[]))
            continue
        listed = _numbered_strips(strips)
        humans = [_judge(P.STRIP_ONE_SYSTEM.format(n=j), question, listed) for j in range(1, len(strips) + 1)]
        readings = read_many(model, P.GRADER_SYSTEM, humans, YES_NO, max_concurrency)
        if all(readings):
            ps = [r.p("yes") for r in readings]
            outcomes[i] = Outcome(StripVerdicts(verdicts=["yes" if p >= cut else "no" for p in ps]), p=ps,
                                  threshold=round(cut, 3), method="probability")
    written = [i for i, o in enumerate(outcomes) if o is None]
    by_size: dict[int, list[int]] = {}
    for i in written:
        by_size.setdefault(len(strips_per_doc[i]), []).append(i)
    for n, indexes in by_size.items():  # one schema per strip count; usually one or two sizes
        humans = [_judge(P.STRIP_SYSTEM, question, _numbered_strips(strips_per_doc[i])) for i in indexes]
        results = ask_many(model, _strip_schema(n), P.GRADER_SYSTEM, humans,
                           StripVerdicts(verdicts=["yes"] * n), max_concurrency)
        for i, outcome in zip(indexes, results):
            outcomes[i] = outcome
    return outcomes


def _numbered_strips(strips: list[str]) -> str:
    return "\n".join(f"{j}. {fence(s, inline=True)}" for j, s in enumerate(strips, 1))


def grade_grounded(model, docs: list[Document], answer: str, question: str | None = None,
                   thresholds: Thresholds | None = None) -> Outcome[Grounded]:
    """Is every fact in the answer in the documents? p(yes) against the ``grounded`` threshold, or the
    written verdict. Fallback: no (do not accept unverified text).

    The prompt starts as the answer's own did (the documents in the answer's system text), so a local
    model restores the documents it just answered from instead of reading them again.
    """
    human = _judge(P.HALLUCINATION_SYSTEM, question, answer=answer) + "\n" + P.DATA_NOTE
    system = documents_system(docs)
    return _binary_many(model, system, [human], "grounded", thresholds, Grounded,
                        lambda yes: Grounded(grounded="yes" if yes else "no"), Grounded(grounded="no"), 1)[0]


def grade_usefulness(model, question: str, answer: str, thresholds: Thresholds | None = None) -> Outcome[Usefulness]:
    """useful yes/no and a 1-5 score. Fallback: no, 3 (regenerate, do not accept).

    With probabilities the model is asked yes or no (``USEFUL_SYSTEM``): p(yes) against the ``useful`` threshold.
    The score shown is 1 + 4p, held on the decision's side (4 or more when useful, 3 or less when not), since the
    score routes the run: a clear miss (a decline, another question's answer: p near 0) scores 1-2 and sends
    Self-RAG to search again, a near miss scores 3 and is written again. Without probabilities the model writes
    the 1-5 score (``USEFULNESS_SYSTEM``).
    """
    cut = (thresholds or default_thresholds(model)).cut("useful")
    reading = read_many(model, P.GRADER_SYSTEM, [_judge(P.USEFUL_SYSTEM, question, answer=answer)], YES_NO)[0]
    if reading is None:
        human = _judge(P.USEFULNESS_SYSTEM, question, answer=answer)
        return ask(model, Usefulness, P.GRADER_SYSTEM, human, Usefulness(useful="no", score=3))
    p = reading.p("yes")
    useful = p >= cut
    score = round(1 + 4 * p)
    score = max(4, score) if useful else min(3, score)
    return Outcome(Usefulness(useful="yes" if useful else "no", score=score), p=p, threshold=round(cut, 3),
                   method="probability")


def rewrite_question(model, question: str, for_web: bool = False) -> Outcome[Rewrite]:
    """A better vector-store question, or a short web query. Fallback: the question unchanged."""
    system = P.REWRITE_WEB_SYSTEM if for_web else P.REWRITE_VECTOR_SYSTEM.format(chars=QUESTION_CHARS)
    outcome = ask(model, Rewrite, system, f"Question: {question}", Rewrite(question=question))
    text = _strip_label(" ".join(outcome.value.question.split()))
    if for_web:
        text = " ".join(text.split()[:12])
    outcome.value.question = text[:300] or question
    return outcome


_LABEL = re.compile(r"^((question|query|질문)\s*[:：]\s*)+", re.I)


def _strip_label(text: str) -> str:
    """Small models echo the prompt's "Question:" label back; it is not part of the question."""
    return _LABEL.sub("", text).strip()


_SENTENCE_END = re.compile(r"(?<=[^\d][.!?。])\s+")
_BULLET = ("#", "-", "•", "*")


def _logical_lines(text: str) -> list[str]:
    """Re-join lines a PDF extractor broke mid-sentence; keep headings and bullets separate."""
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if lines and not line.startswith(_BULLET) and not lines[-1].startswith("#") \
                and not lines[-1].endswith((".", "!", "?", "。", ":")):
            lines[-1] += " " + line
        else:
            lines.append(line)
    return lines


def split_strips(text: str, min_chars: int = 10) -> list[str]:
    """Sentence strips for knowledge refinement, each prefixed with its section heading.

    The heading keeps a strip meaningful on its own ("시그니처 스테이크: 가격: ₩35,000").
    """
    strips, heading = [], ""
    for line in _logical_lines(text):
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            continue
        for sentence in _SENTENCE_END.split(line):
            sentence = sentence.strip(" -•*\t")
            if len(sentence) >= min_chars:
                strips.append(f"{heading}: {sentence}" if heading else sentence)
    return strips
