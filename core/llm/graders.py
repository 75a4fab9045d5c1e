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
    value: T
    fallback: bool = False
    error: str = ""


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


def needs_retrieval(model, question: str, sources: list = ()) -> Outcome[RetrievalNeed]:
    """yes / no, with the kind of message that decided it. Fallback: yes (looking up is the safe default).

    The model classifies the message (lookup / small talk / general knowledge) rather than answering
    yes/no: asked "does this need looking up?", Qwen2.5 1.5B said "no" to 9 of the built-in set's 37 factual
    questions; with the named kinds it got 39 of the 41 scored questions right (benchmarks/probe_decisions.py).
    The collections are listed so the model knows what "looking up" would find.
    """
    system = P.RETRIEVAL_NEED_SYSTEM.format(sources=_source_lines(sources))
    outcome = ask(model, MessageKind, system, f"Message: {question}", MessageKind(kind="lookup"))
    kind = outcome.value.kind
    return Outcome(RetrievalNeed(retrieve="yes" if kind == "lookup" else "no", kind=kind), outcome.fallback,
                   outcome.error)


def _doc(doc: Document) -> str:
    return fence(doc.page_content)


def grade_documents(model, question: str, docs: list[Document], max_concurrency: int) -> list[Outcome[Relevance]]:
    """Relevance yes/no per document, all at once, each call reading its one document.

    Fallback: yes (keep, rather than lose evidence). Calls over one document share their prefix with any
    other grader of that document and question (Corrective's grade, another pattern's in Compare).
    """
    humans = [_judge(P.RELEVANCE_SYSTEM, question, _doc(d)) for d in docs]
    return ask_many(model, Relevance, P.GRADER_SYSTEM, humans, Relevance(relevant="yes"), max_concurrency)


def grade_documents_for_answer(model, question: str, docs: list[Document],
                               max_concurrency: int) -> list[Outcome[Relevance]]:
    """``grade_documents`` laid out for the answer that follows: all documents first, each call naming its own.

    Every call starts with the answer's system text (``documents_system``), so the grades, the answer over
    the documents they kept (when they kept all) and its grounded check share that prefix: a local model
    reads the documents once instead of once in the grades and again to answer. Use it where the answer is
    written from these documents with ``documents_system`` (Self-RAG).
    """
    humans = [_judge(P.NUMBERED_RELEVANCE_SYSTEM.format(n=n), question) + "\n" + P.DATA_NOTE
              for n in range(1, len(docs) + 1)]
    return ask_many(model, Relevance, documents_system(docs), humans, Relevance(relevant="yes"), max_concurrency)


def crag_grade(model, question: str, docs: list[Document], max_concurrency: int) -> list[Outcome[CragGrade]]:
    """correct / ambiguous / incorrect with confidence per document. Fallback: ambiguous, 0.5.

    Each call reads its one document: Corrective answers from refined strips, not from these documents,
    so the answer's layout would gain nothing, and this one shares the relevance grades' prefix.
    """
    humans = [_judge(P.CRAG_SYSTEM, question, _doc(d)) for d in docs]
    return ask_many(model, CragGrade, P.GRADER_SYSTEM, humans, CragGrade(grade="ambiguous", confidence=0.5),
                    max_concurrency)


class StripVerdicts(BaseModel):
    """One yes/no per numbered sentence, in order."""

    verdicts: list[Literal["yes", "no"]]


def _strip_schema(n: int) -> type[StripVerdicts]:
    # the exact length is part of the schema, so constrained decoders emit one verdict per strip
    return create_model("StripVerdicts", __base__=StripVerdicts,
                        verdicts=(list[Literal["yes", "no"]], Field(min_length=n, max_length=n)))


def grade_strips(model, question: str, strips_per_doc: list[list[str]],
                 max_concurrency: int) -> list[Outcome[StripVerdicts]]:
    """Relevance of each sentence strip: one batched call per document, documents concurrently.

    Fallback: every strip of that document kept (losing evidence is worse than keeping a sentence).
    """
    outcomes: list[Outcome[StripVerdicts] | None] = [None] * len(strips_per_doc)
    by_size: dict[int, list[int]] = {}
    for i, strips in enumerate(strips_per_doc):
        if strips:
            by_size.setdefault(len(strips), []).append(i)
        else:
            outcomes[i] = Outcome(StripVerdicts(verdicts=[]))
    for n, indexes in by_size.items():  # one schema per strip count; usually one or two sizes
        humans = [_judge(P.STRIP_SYSTEM, question, "\n".join(
            f"{j}. {fence(s, inline=True)}" for j, s in enumerate(strips_per_doc[i], 1))) for i in indexes]
        results = ask_many(model, _strip_schema(n), P.GRADER_SYSTEM, humans,
                           StripVerdicts(verdicts=["yes"] * n), max_concurrency)
        for i, outcome in zip(indexes, results):
            outcomes[i] = outcome
    return outcomes


def grade_grounded(model, docs: list[Document], answer: str, question: str | None = None) -> Outcome[Grounded]:
    """Is every fact in the answer in the documents? Fallback: no (do not accept unverified text).

    The prompt starts as the answer's own did (the documents in the answer's system text), so a local
    model restores the documents it just answered from instead of reading them again.
    """
    human = _judge(P.HALLUCINATION_SYSTEM, question, answer=answer) + "\n" + P.DATA_NOTE
    return ask(model, Grounded, documents_system(docs), human, Grounded(grounded="no"))


def grade_usefulness(model, question: str, answer: str) -> Outcome[Usefulness]:
    """useful yes/no and a 1-5 score. Fallback: no, 3 (regenerate, do not accept)."""
    human = _judge(P.USEFULNESS_SYSTEM, question, answer=answer)
    return ask(model, Usefulness, P.GRADER_SYSTEM, human, Usefulness(useful="no", score=3))


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
