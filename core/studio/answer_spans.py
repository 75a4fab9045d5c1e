"""Candidate answers chosen in code from a chunk before any model call, and the round trip's comparison.

A question set is written answer first: a figure with its unit (15일, 1박 12만 원, 오후 6시, 90 days, 32 GB),
a name (Kiwi's proper nouns in Korean; capitalised spans and quoted names in English) or, for a chunk without
figures, a short defining phrase is picked from the chunk, and the model only writes a question for it. Every
span is a substring of its chunk, so a question's facts cannot be misquoted. ``same_answer`` says whether a
reply gives a span back: figures by value as the claim checker reads them (core.llm.claims.numbers), names and
phrases by their letters and words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.knowledge import korean_tokens
from core.llm.claims import numbers

MAX_SPAN_CHARS = 40  # a fact is a figure, a name or a few words: it is looked for in answers as a substring
MAX_PHRASE_WORDS = 8
# counters after a number; longer ones first so 시간 is not read as 시, 개월 not as 개
KOREAN_UNITS = ("시간", "개월", "주일", "가지", "퍼센트", "일", "분", "초", "개", "명", "곳", "대", "회", "번", "박",
                "년", "주", "세", "층", "권", "장", "건", "점", "배", "석", "인", "원")
ENGLISH_UNITS = (r"business\s+days?|working\s+days?|days?|hours?|minutes?|seconds?|weeks?|months?|years?|"
                 r"[KMGT]B|Mbps|Gbps|GHz|MHz|users?|computers?|seats?|people|percent|kilograms?|kg|km|miles?|times")
_UNIT_AFTER = re.compile(rf"\s?(?:{'|'.join(KOREAN_UNITS)}|(?:{ENGLISH_UNITS})\b)")
DURATION_UNITS = frozenset({"시간", "개월", "주일", "일", "분", "초", "년", "주", "박", "business days", "working days",
                            "day", "days", "hour", "hours", "minute", "minutes", "second", "seconds", "week", "weeks",
                            "month", "months", "year", "years"})
SIZE_UNITS = frozenset({"KB", "MB", "GB", "TB", "Mbps", "Gbps", "GHz", "MHz"})
# words that start a capitalised run without being part of a name ("The Team plan", "Our data centres")
_NOT_NAMES = frozenset("a an the and or of in on at to for by with from if when where our your you we it this that "
                       "these those all every each any some no not is are be can may will after before during "
                       "email phone please note yes what which who how why".split())


@dataclass(frozen=True)
class Span:
    """A candidate answer: its text as written in the chunk, where it sits, and what sort of answer it is."""

    text: str
    start: int
    kind: str  # figure | name | phrase
    sort: str = ""  # money | time | date | percent | duration | size | count | number (figures only)


# ---------------------------------------------------------------- figures


def _lines(text: str):
    """(offset, line) of every line that is not a Markdown heading (a heading names, it does not answer)."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if not line.lstrip().startswith("#"):
            yield offset, line.rstrip("\n")
        offset += len(line)


def _located(line: str, facts: list[numbers.Fact]) -> list[tuple[int, int, numbers.Fact]]:
    """Each figure's (start, end) in the line: the first occurrence not taken by an earlier one."""
    taken: list[tuple[int, int, numbers.Fact]] = []
    for fact in facts:
        at = line.find(fact.text)
        while at >= 0 and any(s < at + len(fact.text) and at < e for s, e, _ in taken):
            at = line.find(fact.text, at + 1)
        if at >= 0:
            taken.append((at, at + len(fact.text), fact))
    return sorted(taken, key=lambda t: t[0])


def _sort_of(fact: numbers.Fact, unit: str, before: str = "") -> str:
    if unit.strip() == "일" and re.search(r"(?:매달|매월|월)\s*$", before):  # 매달 25일: a day of the month
        return "date"
    if fact.kind in ("money", "time", "percent"):
        return fact.kind
    if fact.kind in ("date", "year"):
        return "date"
    unit = re.sub(r"\s+", " ", unit.strip())
    if unit in DURATION_UNITS:
        return "duration"
    if unit in SIZE_UNITS:
        return "size"
    return "count" if unit else "number"


def _product_number(line: str, start: int) -> bool:
    """A number that is part of a name: Windows 11, macOS 12, AES-256."""
    return bool(re.search(r"(?:[A-Za-z]+-|\b\w*[A-Z]\w*\s)$", line[:start]))


def figure_spans(text: str) -> list[Span]:
    """Figures with their units, in order; neighbours joined (1박 12만 원); bare one-digit numbers and numbers
    of product names left out."""
    spans: list[Span] = []
    for offset, line in _lines(text):
        pieces: list[list] = []  # [start, end, sort]
        for start, end, fact in _located(line, numbers.facts_of(line)):
            unit = _UNIT_AFTER.match(line, end) if fact.kind in ("number", "money") else None
            if unit and not (fact.kind == "money" and unit.group(0).strip() != "원"):
                end = unit.end()
            sort = _sort_of(fact, unit.group(0) if unit else "", line[:start])
            if sort == "number" and (len(fact.text) < 2 or _product_number(line, start)):
                continue
            if pieces and line[pieces[-1][1]:start].strip() == "":  # 1박 + 12만 원: one answer
                pieces[-1][1] = end
                pieces[-1][2] = sort if sort not in ("count", "number", "duration") else pieces[-1][2]
                continue
            pieces.append([start, end, sort])
        spans += [Span(line[s:e], offset + s, "figure", sort) for s, e, sort in pieces if e - s <= MAX_SPAN_CHARS]
    return spans


# ---------------------------------------------------------------- names


def _english_names(line: str) -> list[tuple[int, int]]:
    """Runs of capitalised words; a single capitalised word opening a sentence is not a name."""
    out = []
    for match in re.finditer(r"(?<!\w)[A-Z][\w&'-]*(?:\s+(?:of\s+|&\s+)?[A-Z][\w&'-]*)*", line):
        start, words = match.start(), match.group(0)
        while words and words.split(None, 1)[0].lower() in _NOT_NAMES:  # "The Team plan": the name is "Team"
            rest = words.split(None, 1)[1:]
            start, words = (start + words.index(rest[0]), rest[0]) if rest else (start, "")
        if not words:
            continue
        opening = not line[:start].strip() or re.search(r"[.!?:]\s*$|^\s*[-*]\s*$", line[:start])
        if " " not in words and opening:
            continue
        out.append((start, start + len(words)))
    return out


def name_spans(text: str) -> list[Span]:
    """Quoted names, then proper nouns (Kiwi's NNP in Korean, capitalised runs in English); a name its chunk's
    heading holds is the chunk's subject, not an answer."""
    headings = numbers.squeeze(" ".join(line for line in text.splitlines() if line.lstrip().startswith("#")))
    found: list[Span] = []
    for offset, line in _lines(text):
        for quoted in numbers.quoted_names(line):
            found.append(Span(quoted, offset + line.find(quoted), "name"))
        ranges = korean_tokens.proper_noun_spans(line) if korean_tokens.has_korean(line) else _english_names(line)
        found += [Span(line[s:e], offset + s, "name") for s, e in ranges]
    seen: set[str] = set()
    out = []
    for span in sorted(found, key=lambda s: s.start):
        key = numbers.squeeze(span.text)
        if key and key not in seen and key not in headings and len(span.text) <= MAX_SPAN_CHARS:
            seen.add(key)
            out.append(span)
    return out


# ---------------------------------------------------------------- defining phrases

_DEFINITIONS = [
    re.compile(r"(?:[은는]|이란|란)\s(?P<d>[^.!?]{3,60}?)(?:을|를)\s(?:말합니다|뜻합니다|의미합니다|가리킵니다|말한다|뜻한다)"),
    re.compile(r"\b(?:is|are)\s(?:an?|the)\s(?P<d>[^.;:!?]{4,80})"),  # "X is a cloud backup service for ..."
    re.compile(r"\b(?:means|refers to)\s(?P<d>[^.;:!?]{4,80})"),
    re.compile(r"^\s*[-*]?\s*[^:\n]{2,30}:\s(?P<d>[^\n]{3,60})$"),  # "- 복장: 비즈니스 캐주얼"
]


def phrase_spans(text: str) -> list[Span]:
    """Short defining phrases (what X is or means, a key's value), cut to a few words at a word boundary."""
    out = []
    for offset, line in _lines(text):
        for pattern in _DEFINITIONS:
            for match in pattern.finditer(line):
                words = match.group("d").split()[:MAX_PHRASE_WORDS]
                phrase = " ".join(words).rstrip(",")
                while len(phrase) > MAX_SPAN_CHARS and " " in phrase:
                    phrase = phrase.rsplit(" ", 1)[0].rstrip(",")
                at = line.find(phrase, match.start("d"))
                if at >= 0 and len(phrase) >= 3:
                    out.append(Span(phrase, offset + at, "phrase"))
    return out


def candidates(text: str) -> list[Span]:
    """A chunk's candidate answers, best first: figures, then names; defining phrases only without figures."""
    figures = figure_spans(text)
    names = name_spans(text)
    phrases = [] if figures else phrase_spans(text)
    taken: list[Span] = []
    for span in figures + names + phrases:
        inside = any(s.start <= span.start < s.start + len(s.text) for s in taken)
        if not inside:
            taken.append(span)
    return taken


def line_of(text: str, span: Span, blank: str = "") -> str:
    """The sentence of ``text`` the span sits in (what it answers there: the item a figure is the price of), the
    span replaced by ``blank`` when one is given."""
    start = text.rfind("\n", 0, span.start) + 1
    end = text.find("\n", span.start)
    line = text[start:end if end >= 0 else len(text)]
    at, offset = span.start - start, 0
    for sentence in re.split(r"(?<=[.!?。])\s+", line):
        if offset <= at < offset + len(sentence) + 1:
            where = at - offset
            if blank and sentence[where:where + len(span.text)] == span.text:
                sentence = sentence[:where] + blank + sentence[where + len(span.text):]
            return sentence.strip()
        offset += len(sentence) + 1
    return line.strip()


def hint(span: Span) -> str:
    """What sort of answer the span is, and the question word that asks for it (said to the writing model)."""
    return {"money": "an amount of money: ask how much", "time": "a time of day: ask what time",
            "date": "a date: ask when or on which date", "percent": "a percentage: ask what percentage",
            "duration": "a length of time or number of days: ask how long or how many days",
            "size": "a size or speed: ask how much or how large", "count": "a number of things: ask how many",
            "number": "a number: ask how many or which number", "name": "a name: ask who or which one",
            "phrase": "a description: ask what"}[span.sort or span.kind]


# ---------------------------------------------------------------- the round trip's comparison


def _needed_keys(text: str) -> list[frozenset[str]]:
    """The figure keys a reply must hold to state ``text``: its money, times, dates and percentages, or, when it
    has none, its plain numbers (1박 12만 원 needs the 120000, not the 1)."""
    facts = numbers.facts_of(text)
    strong = [f.keys for f in facts if f.kind != "number"]
    return strong or [f.keys for f in facts]


def stated_in(span: Span, text: str) -> bool:
    """Does the text state the span (a question holding its own answer): its figure's value, or its words?"""
    if span.kind == "figure":
        wanted = _needed_keys(span.text)
        return bool(wanted) and all(keys & numbers.keys_of(text) for keys in wanted)
    want = numbers.squeeze(span.text)
    return bool(want) and want in numbers.squeeze(text)


def same_answer(span: Span, reply: str) -> bool:
    """Does the reply give the span back? Figures by value (units not compared, as in the claim checker),
    names and phrases by their letters, or most of their words; a reply listing many figures does not count."""
    reply = reply or ""
    if span.kind == "figure":
        wanted = _needed_keys(span.text)
        stated = numbers.facts_of(reply)
        if not wanted or len(stated) > len(numbers.facts_of(span.text)) + 1:
            return False
        have = numbers.keys_of(reply)
        return all(keys & have for keys in wanted)
    want, got = numbers.squeeze(span.text), numbers.squeeze(reply)
    if not got:
        return False
    if want in got and len(got) <= 3 * len(want) + 10:
        return True
    words = set(korean_tokens.tokens(span.text))
    return bool(words) and len(words & set(korean_tokens.tokens(reply))) >= 0.6 * len(words)


def gives_a_span_like(reply: str, texts: list[str], like: Span) -> bool:
    """Does the reply give back a detail the texts state, of the same sort as ``like``? (An unanswerable question
    modelled on ``like`` that the documents answer anyway: "how long on the Team plan?" → "365 days".)"""
    return bool((reply or "").strip()) and any(
        s.kind == like.kind and s.sort == like.sort and same_answer(s, reply)
        for text in texts for s in candidates(text))
