"""A scripted question writer for any collection: it answers the generator's prompts from the chunks it is shown.

tests/support/question_corpus.py scripts a writer for its own tiny corpus; this one needs no table, so the app
tests and the browser test can generate a set from the shipped samples. A question names its chunk's heading
and is answered back with the span it was written for (remembered here, as a model reading the chunk would
find it).
"""

from __future__ import annotations

import re

from core.prompts import questions as P
from core.prompts.workflow import DECLINE_SYSTEM

HANGUL = re.compile("[가-힣]")


def _is(system: str, prompt: str) -> bool:
    return system.startswith(prompt.split("{")[0])


def _documents(text: str) -> list[str]:
    return re.findall(r"<document>\n(.*?)\n</document>", text, re.S)


def _heading(chunk: str) -> str:
    first = next(line for line in chunk.splitlines() if line.strip())
    return re.sub(r"^[#\-\s\d.]+", "", first).strip()[:40] or first.strip()[:40]


WRITTEN: dict[str, str] = {}  # question -> the span(s) it was written for: its round-trip answer


def _task(human: str, name: str) -> bool:
    return getattr(P, name).split("{")[0] in human


def _question(human: str, docs: list[str], korean: bool) -> str:
    spans = re.findall(r"<answer>(.*?)</answer>", human)
    headings = [_heading(d) for d in docs[:2]]
    if len(headings) == 2:
        question = (f"{headings[0]}와 {headings[1]}에 대해 각각 무엇이 적혀 있나요?" if korean else
                    f"What do {headings[0]} and {headings[1]} each say?")
    else:
        question = f"{headings[0]}에 대해 무엇이 적혀 있나요?" if korean else f"What is said about {headings[0]}?"
    WRITTEN[question] = ", ".join(spans)
    return question


def reply(messages) -> dict | None:
    """The writer's reply to a question-generation or decline-judge prompt; None for any other prompt."""
    system, human = str(messages[0].content), str(messages[-1].content)
    docs = _documents(human)
    korean = bool(HANGUL.search(" ".join(docs) or human))
    if _is(system, DECLINE_SYSTEM):
        return {"declined": "찾을 수 없" in human or "not available" in human}
    if system != P.SYSTEM:
        return None
    if _task(human, "ANSWERED_TASK"):
        return {"answered": False}
    if _task(human, "SMALL_TALK_TASK"):
        return {"message": "안녕하세요, 오늘도 고마워요!" if korean else "Hello, thanks for your help!"}
    if _task(human, "ANSWER_TASK"):
        question = re.findall(r"<question>\n(.*?)\n</question>", human, re.S)
        return {"answer": WRITTEN.get(question[-1] if question else "", "")}
    if _task(human, "UNANSWERABLE_TASK"):  # shown the answer's sentence alone, not its chunk
        line = re.findall(r"<line>(.*?)</line>", human, re.S)
        heading = _heading(line[-1] if line else human)[:20]
        return {"question": f"{heading} 담당 요리사의 고향은 어디인가요?" if korean else
                f"Where was the head cook of {heading} born?"}
    return {"question": _question(human, docs, korean)}


def combined(fallback):
    """A responder: question-generation prompts answered here, every other prompt by ``fallback``."""
    def respond(messages):
        mine = reply(messages)
        return mine if mine is not None else fallback(messages)

    return respond
