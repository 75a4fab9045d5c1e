"""The facts a sentence states as figures: amounts, numbers, percentages, dates and times, normalised.

People write the same figure many ways (₩35,000 / 35,000원 / 3만 5천 원 / 35000; 15만 원 / 150,000원;
8:00 / 오전 8시; 오후 8시 = 20:00; September 1, 2021 / 2021년 9월 1일). Each figure becomes a set of
keys; a claim's figure is in a text when one of its keys is among the text's keys. Units are not
compared (₩35,000 and "35,000 won" are the same amount), values are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

# kinds whose different value in the best evidence contradicts the claim (the pasta's ₩28,000, not ₩24,000)
CONFLICTING = {"money": {"money"}, "percent": {"percent"}, "date": {"date", "year"}, "year": {"date", "year"},
               "time": {"time"}}

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_UNITS = rf"(?:{_NUM})\s?(?:[천백십]\s?[만억조]?|[만억조])"
# 3만, 5천만, 424억: not followed by another syllable ("2 천천히"), unless it is a counter or currency
_UNIT_GROUP = rf"{_UNITS}(?![가-힣])|{_UNITS}(?=[원명개곳달엔대건])"
_KOREAN_NUMBER = rf"(?:(?:{_UNIT_GROUP})\s?)+(?:(?:{_NUM})(?![\d,]))?|(?:{_NUM})"
_CURRENCY_BEFORE = r"US\$|[₩$€¥£]|KRW|USD|JPY|EUR"
_CURRENCY_AFTER = r"원|달러|엔|유로|위안|won\b|dollars?\b|yen\b|euros?\b"
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12, "bn": 10**9}
_KOREAN_SMALL = {"십": 10, "백": 100, "천": 1000}
_KOREAN_BIG = {"만": 10**4, "억": 10**8, "조": 10**12}

QUANTITY = re.compile(rf"""
    (?<![A-Za-z0-9.])(?P<cur>{_CURRENCY_BEFORE})?\s?
    (?P<num>{_KOREAN_NUMBER})
    (?:\s?(?P<scale>thousand|million|billion|trillion|bn)\b)?
    (?:\s?(?P<pct>%|퍼센트|percent\b|per\s?cent\b))?
    (?:\s?(?P<unit>{_CURRENCY_AFTER}))?
""", re.X | re.I)

_MONTHS = {name: i for i, names in enumerate(
    ["jan january", "feb february", "mar march", "apr april", "may", "jun june", "jul july", "aug august",
     "sep sept september", "oct october", "nov november", "dec december"], 1) for name in names.split()}
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
DATES = [
    re.compile(r"(?P<y>\d{4})\s?년(?:\s?(?P<m>\d{1,2})\s?월)?(?:\s?(?P<d>\d{1,2})\s?일)?"),
    re.compile(r"(?<!\d)(?P<m>\d{1,2})\s?월(?:\s?(?P<d>\d{1,2})\s?일)?"),
    re.compile(r"(?<!\d)(?P<y>\d{4})[-./](?P<m>\d{1,2})[-./](?P<d>\d{1,2})(?!\d)"),
    re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH})\.?,?(?:\s+(?P<y>\d{{4}}))?", re.I),
    re.compile(rf"\b(?P<mon>{_MONTH})\.?\s+(?:(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b,?\s*)?(?P<y>\d{{4}})?", re.I),
]
_AMPM = r"a\.?m\.?|p\.?m\.?"
TIMES = [
    re.compile(rf"(?:(?P<k>오전|오후|아침|낮|저녁|밤|새벽)\s?)?(?<!\d)(?P<h>\d{{1,2}}):(?P<mi>\d{{2}})(?!\d)"
               rf"(?:\s?(?P<ap>{_AMPM})(?![a-z]))?", re.I),
    re.compile(r"(?:(?P<k>오전|오후|아침|낮|저녁|밤|새벽)\s?)?(?<!\d)(?P<h>\d{1,2})\s?시(?![간각즌그])"
               r"(?:\s?(?P<mi>\d{1,2})\s?분|\s?(?P<half>반))?"),
    re.compile(rf"(?<![\d:])(?P<h>\d{{1,2}})\s?(?P<ap>{_AMPM})(?![a-z])", re.I),
]
_PM_WORDS = {"오후", "저녁", "밤"}
_AM_WORDS = {"오전", "아침", "새벽"}


@dataclass(frozen=True)
class Fact:
    """One figure as written (``text``), its kind, and the keys any one of which supports it."""

    text: str
    kind: str  # money | number | percent | year | date | time
    keys: frozenset[str]


def canonical(value: Decimal) -> str:
    """35000, 3.5, 52700000000: one spelling per value."""
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def korean_value(text: str) -> Decimal:
    """The value of a number written with Korean units: 3만 5천 → 35000, 424억 5천만 → 42450000000."""
    total, section, pending = Decimal(0), Decimal(0), None
    for number, unit in re.findall(r"([\d,.]+)|([십백천만억조])", text):
        if number:
            if pending is not None:
                section += pending
            pending = Decimal(number.replace(",", ""))
        elif unit in _KOREAN_SMALL:
            section += (pending if pending is not None else Decimal(1)) * _KOREAN_SMALL[unit]
            pending = None
        else:
            section += pending if pending is not None else Decimal(0)
            total += (section or Decimal(1)) * _KOREAN_BIG[unit]
            section, pending = Decimal(0), None
    return total + section + (pending if pending is not None else Decimal(0))


def _date_keys(y: str | None, m: str | int | None, d: str | None) -> tuple[set[str], frozenset[str]]:
    """(every key a text with this date supports, the key a claim of it needs)."""
    y = int(y) if y else None
    m = int(m) if m else None
    d = int(d) if d else None
    if m is not None and not 1 <= m <= 12 or d is not None and not 1 <= d <= 31:
        return set(), frozenset()
    has = set()
    if y:
        has.add(f"y:{y}")
    if m:
        has.add(f"m:{m}")
    if y and m:
        has.add(f"ym:{y}-{m}")
    if m and d:
        has.add(f"md:{m}-{d}")
    if y and m and d:
        has.add(f"d:{y}-{m}-{d}")
    need = (f"d:{y}-{m}-{d}" if y and m and d else f"ym:{y}-{m}" if y and m else f"md:{m}-{d}" if m and d
            else f"y:{y}" if y else f"m:{m}")
    return has, frozenset({need})


def _hours(h: int, mi: int, word: str | None, ampm: str | None, colon: bool) -> list[int]:
    """Minutes after midnight the written time can mean (오후 8시 = 20:00; a bare 8시 is 8:00 or 20:00)."""
    marker = (ampm or "").lower().replace(".", "")
    if h > 24 or mi > 59:
        return []
    if marker == "pm" or word in _PM_WORDS or (word == "낮" and h < 6):
        h = h + 12 if h < 12 else h
    elif marker == "am" or word in _AM_WORDS:
        h = 0 if h == 12 else h
    elif not colon and h <= 12:
        return sorted({(h % 12) * 60 + mi, (h % 12 + 12) * 60 + mi})
    return [(h % 24) * 60 + mi]


def _mask(text: str, match: re.Match) -> str:
    return text[:match.start()] + "\x00" * (match.end() - match.start()) + text[match.end():]


def extract(text: str) -> tuple[list[Fact], set[str]]:
    """The figures a text states (as a claim needs them) and every key the text supports (as evidence)."""
    facts: list[Fact] = []
    has: set[str] = set()
    work = text
    for pattern in DATES:
        for match in list(pattern.finditer(work)):
            g = match.groupdict()
            month = _MONTHS.get((g.get("mon") or "").lower().rstrip(".")) if g.get("mon") else g.get("m")
            if g.get("mon") and (not (g.get("d") or g.get("y")) or g["mon"] == "may"):
                continue  # "may" is a verb more often than a month
            supported, need = _date_keys(g.get("y"), month, g.get("d"))
            if not need:
                continue
            has |= supported
            kind = "year" if next(iter(need)).startswith("y:") else "date"
            facts.append(Fact(match.group(0).strip(), kind, need))
            work = _mask(work, match)
    for pattern in TIMES:
        for match in list(pattern.finditer(work)):
            g = match.groupdict()
            mi = 30 if g.get("half") else int(g.get("mi") or 0)
            minutes = _hours(int(g["h"]), mi, g.get("k"), g.get("ap"), ":" in match.group(0))
            if not minutes:
                continue
            keys = frozenset(f"t:{m // 60:02d}:{m % 60:02d}" for m in minutes)
            has |= keys
            facts.append(Fact(match.group(0).strip(), "time", keys))
            work = _mask(work, match)
    for match in QUANTITY.finditer(work):
        fact, keys = _quantity(match)
        if fact:
            facts.append(fact)
            has |= keys
    return facts, has


def _quantity(match: re.Match) -> tuple[Fact | None, set[str]]:
    g = match.groupdict()
    raw = g["num"].strip()
    try:
        value = korean_value(raw) if re.search(r"[십백천만억조]", raw) else Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return None, set()
    if g.get("scale"):
        value *= _SCALES[g["scale"].lower()]
    key = canonical(value)
    text = match.group(0).strip()
    if g.get("pct"):
        # "80–90%" writes the sign once: a percentage matches the bare number too
        return Fact(text, "percent", frozenset({f"pct:{key}", f"n:{key}"})), {f"pct:{key}", f"n:{key}"}
    if g.get("cur") or g.get("unit"):
        return Fact(text, "money", frozenset({f"n:{key}"})), {f"n:{key}"}
    if re.fullmatch(r"(19|20)\d\d", raw):  # a bare year: "by 2030"
        return Fact(text, "year", frozenset({f"y:{key}", f"n:{key}"})), {f"y:{key}", f"n:{key}"}
    return Fact(text, "number", frozenset({f"n:{key}"})), {f"n:{key}"}


def facts_of(text: str) -> list[Fact]:
    """The figures a claim states."""
    return extract(text)[0]


def keys_of(text: str) -> set[str]:
    """Every figure key a passage supports."""
    return extract(text)[1]


QUOTED = re.compile(r"\"([^\"\n]{2,60})\"|“([^”\n]{2,60})”|(?<![A-Za-z])'([^'\n]{2,60})'(?![A-Za-z])|‘([^’\n]{2,60})’"
                    r"|「([^」\n]{1,60})」|『([^』\n]{1,60})』")


def quoted_names(text: str) -> list[str]:
    """Names the claim puts in quotation marks ("와인의 왕", 'AI 사업자 가이드라인')."""
    return [next(g for g in match.groups() if g) for match in QUOTED.finditer(text)]


def squeeze(text: str) -> str:
    """Case, spaces and punctuation removed: how quoted names are compared."""
    return re.sub(r"[\W_]+", "", text.casefold())
