"""A scripted question writer for any collection: it answers the generator's prompts from the chunks it is shown.

tests/question_corpus.py scripts a writer for its own tiny corpus; this one needs no table, so the app
tests and the browser test can generate a set from the shipped samples. Each question names its chunk's
heading (a single fact: the first words of its focus sentence) and quotes the last words as the fact (so it is a
substring, and not in the question).
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


def _fact(chunk: str) -> str:
    """The last line's last words (at most about 20 characters), cut at a space so it reads as a quote."""
    last = " ".join(chunk.split()[-4:])
    return last[-20:].strip()


def reply(messages) -> dict | None:
    """The writer's reply to a question-generation or decline-judge prompt; None for any other prompt."""
    system, human = str(messages[0].content), str(messages[-1].content)
    docs = _documents(human)
    korean = bool(HANGUL.search(" ".join(docs) or human))
    if _is(system, P.ANSWERED_CHECK_SYSTEM):
        return {"answered": False}
    if _is(system, DECLINE_SYSTEM):
        return {"declined": "찾을 수 없" in human or "not available" in human}
    if _is(system, P.SMALL_TALK_SYSTEM):
        return {"message": "안녕하세요, 오늘도 고마워요!" if korean else "Hello, thanks for your help!"}
    if _is(system, P.UNANSWERABLE_SYSTEM):
        heading = _heading(docs[0])
        return ({"question": f"{heading} 담당 요리사의 고향은 어디인가요?", "missing": "요리사의 고향"} if korean else
                {"question": f"Where was the head cook of {heading} born?", "missing": "head cook"})
    if _is(system, P.TWO_FACTS_SYSTEM):
        first, second = (_heading(d) for d in docs[:2])
        question = (f"{first}와 {second}에 대해 각각 무엇이 적혀 있나요?" if korean else
                    f"What do {first} and {second} each say?")
        return {"question": question, "fact_first": _fact(docs[0]), "fact_second": _fact(docs[1])}
    if _is(system, P.SINGLE_FACT_SYSTEM):  # about the sentence in focus, as the prompt asks
        focus = (re.findall(r"<focus>\n(.*?)\n</focus>", human, re.S) or [docs[0]])[0]
        subject = " ".join(focus.split()[:2])
        return {"question": f"{subject}에 대해 무엇이 적혀 있나요?" if korean else f"What is said about {subject}?",
                "facts": [_fact(focus)]}
    return None


def combined(fallback):
    """A responder: question-generation prompts answered here, every other prompt by ``fallback``."""
    def respond(messages):
        mine = reply(messages)
        return mine if mine is not None else fallback(messages)

    return respond
