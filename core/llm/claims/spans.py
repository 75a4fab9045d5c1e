"""Sentences: an answer split into claims, documents split into quotable spans, and their terms.

A span keeps its offsets, so its quote is a verbatim substring of the document, and the heading it sits
under ("## 2. 트러플 크림 파스타"), which says what a line like "가격: ₩28,000" is about. Terms are words
for Latin script and character bigrams for Hangul (no tokenizer needed), numbers left out: figures are
checked on their own (core.llm.claims.numbers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# ---------------------------------------------------------------- answers → claims

CITATIONS = re.compile(r"\[\s*(?:Source|Sources|출처|Doc(?:ument)?)\s*:[^\]]*\]|\[\s*\d+(?:\s*[,–\-]\s*\d+)*\s*\]",
                       re.IGNORECASE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|~~|`+)")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_BULLET = re.compile(r"^\s*(?:[-*+•·▪‣]\s+|\d{1,2}[.)]\s+|[①-⑳]\s*|>\s*)+")
_ABBREVIATIONS = {"dr", "mr", "mrs", "ms", "prof", "st", "vs", "etc", "e.g", "i.e", "no", "approx", "inc", "co",
                  "ltd", "jr", "sr", "fig", "vol", "p", "pp", "cf", "u.s", "u.k", "a.m", "p.m"}
# a sentence ends at . ! ? 。 followed by space (so ₩35,000. ends one, 3.5% and Dr. Kim do not). A match starts only
# at the first mark of a run and never gives back what it took: a run of 50,000 dots is read once, not once per dot
_END = re.compile(r"(?<![.!?。！？])[.!?。！？]++[\"'”’)\]]*+(?=\s|$)")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)\.*$")
WORD_WINDOW = 40  # longer than any abbreviation: the word before an end is looked for this far back, no further


@dataclass(frozen=True)
class Sentence:
    text: str  # cleaned: no citation markers, no Markdown
    heading: bool = False  # a Markdown heading line (a title, not a claim)


def clean(text: str) -> str:
    """Citation markers and Markdown emphasis and links removed, spaces collapsed."""
    text = CITATIONS.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _ITALIC.sub(r"\1", _EMPHASIS.sub("", text))
    text = re.sub(r"<br\s*/?>", " ", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+([.,!?;:])", r"\1", text)
    return " ".join(text.split())


def _word_before(text: str, at: int) -> str:
    """The word (letters and dots) that ends at ``at``, lower-cased; '' when none or longer than the window.

    Only a window before ``at`` is read, so a line of many sentences costs time in proportion to its length.
    """
    start = max(0, at - WORD_WINDOW)
    before = _WORD_BEFORE.search(text, start, at)
    if before is None or (before.start() == start and start > 0):  # the word runs past the window: no abbreviation
        return ""
    return before.group(1).lower()


def _ends(text: str) -> list[int]:
    """Offsets just after each sentence end inside one line of text."""
    ends = []
    for match in _END.finditer(text):
        word = _word_before(text, match.start())
        if match.group(0).startswith(".") and (word in _ABBREVIATIONS or len(word) == 1 and text[match.start() - 1].isupper()):
            continue  # "Dr. Kim", "U.S. policy", "Gemma 3 vs. Qwen"
        ends.append(match.end())
    return ends


def sentences_in(line: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of one line."""
    out, start = [], 0
    for end in _ends(line) + [len(line)]:
        piece = line[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((start + lead, start + len(piece.rstrip())))
        start = end
    return out


def _table_row(line: str) -> str | None:
    """A Markdown table row as "a, b, c"; "" for the |---| rule; None when the line is not a row."""
    stripped = line.strip()
    if not (stripped.startswith("|") and stripped.endswith("|") and stripped.count("|") >= 2):
        return None
    cells = [c.strip() for c in stripped.strip("|").split("|")]
    if all(re.fullmatch(r":?-{2,}:?", c) or not c for c in cells):
        return ""
    return ", ".join(c for c in cells if c)


def split_answer(answer: str) -> list[Sentence]:
    """The answer's sentences, in order: lines, list items and table rows first, then sentence ends."""
    out: list[Sentence] = []
    for raw in (answer or "").splitlines():
        if raw.lstrip().startswith("#"):
            title = clean(raw.strip().lstrip("#"))
            if title:
                out.append(Sentence(title, heading=True))
            continue
        row = _table_row(raw)
        line = clean(_BULLET.sub("", raw) if row is None else row)
        for start, end in sentences_in(line):
            text = line[start:end].strip()
            if re.search(r"\w", text):
                out.append(Sentence(text))
    return out


# ---------------------------------------------------------------- documents → spans


@dataclass(frozen=True)
class Span:
    doc: int  # index of the document in the run's list
    start: int
    end: int
    quote: str  # text[start:end] of that document, verbatim
    heading: str  # the heading the span sits under in its chunk ("" when none)
    section: int  # spans under the same heading of the same document share it


MAX_JOINED = 300  # characters of wrapped lines joined into one block


def _blocks(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, is_heading) of each logical line: wrapped lines (as a PDF extractor breaks them) re-joined."""
    blocks: list[list] = []
    offset = 0
    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        stripped = line.strip()
        start = offset + len(line) - len(line.lstrip())
        end = offset + len(line.rstrip())
        offset += len(raw)
        if not stripped:
            blocks.append(None)
            continue
        heading = stripped.startswith("#")
        structural = heading or _BULLET.match(line) or _table_row(line) is not None
        last = blocks[-1] if blocks else None
        if last and not structural and not last[2] and end - last[0] <= MAX_JOINED \
                and not text[last[0]:last[1]].endswith((".", "!", "?", "。", ":")):
            last[1] = end  # a wrapped line continues the previous one (a PDF table's rows: up to a limit)
        else:
            blocks.append([start, end, heading])
    return [tuple(b) for b in blocks if b]


@lru_cache(maxsize=512)
def document_spans(text: str) -> tuple[tuple[int, int, str, int], ...]:
    """(start, end, heading, section) of each sentence span of a document; cached by text."""
    spans = []
    heading, section = "", 0
    for start, end, is_heading in _blocks(text):
        if is_heading:
            heading, section = text[start:end].lstrip("#").strip(), section + 1
            continue
        bullet = _BULLET.match(text[start:end])
        if bullet:
            start += bullet.end()
        for s, e in sentences_in(text[start:end]):
            if re.search(r"\w", text[start + s:start + e]):
                spans.append((start + s, start + e, heading, section))
    return tuple(spans)


def spans_of(doc: int, text: str) -> list[Span]:
    return [Span(doc, s, e, text[s:e], h, sec) for s, e, h, sec in document_spans(text)]


# ---------------------------------------------------------------- terms

_HANGUL_WORD = re.compile(r"[가-힣]+")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
# endings stripped from a Hangul word before its bigrams: particles and the common sentence endings
_ENDINGS = sorted("""은 는 이 가 을 를 에 의 와 과 도 로 으로 에서 에게 까지 부터 만 보다 처럼 이며 이고 이나 며 고
입니다 습니다 합니다 됩니다 있습니다 없습니다 이다 였다 했다 한다 된다 있다 없다 이에요 예요 해요 어요 아요 요
하며 하고 되며 되고 으며 이라 라는 이라는 인 한 된 할 될 하는 되는 있는 없는 에는 으로는 로는 에서는 과는 와는 이란""".split(),
                  key=len, reverse=True)
_KOREAN_STOP = {"있", "없", "수", "것", "등", "및", "더", "약", "할", "한", "된", "될", "그", "이", "저", "또", "총",
                "원", "만", "천", "억", "조", "엔", "시", "분"}
_ENGLISH_STOP = set("""a an the is are was were be been being of to in on at by for with from and or as it its this
that these those which who whom than then there their they them he she we you your our i me my not no can could
would should will shall may might must do does did has have had also about into over under per each any all more
most such so very only just both either neither""".split())
NEGATIONS = re.compile(r"않|없|아니|아닌|아닙|아님|못|불가|\bnot\b|\bno\b|\bnever\b|n't\b|\bwithout\b|\bcannot\b|\bnone\b",
                       re.IGNORECASE)


_FIGURE = re.compile(r"\d[\d,.]*\s?[원만천억조년월일시분초명개세인층곳대병잔회차위배]?")


def _stem(word: str) -> str:
    for ending in _ENDINGS:
        if word.endswith(ending):
            return word[: -len(ending)]  # "입니다" after a figure is all ending: nothing left
    return word


@lru_cache(maxsize=8192)
def terms(text: str) -> frozenset[str]:
    """Hangul bigrams (one-syllable words whole) and lower-case Latin words; no numbers, no stop words."""
    out: set[str] = set()
    text = _FIGURE.sub(" ", text)  # figures (and the unit on them) are checked on their own
    for word in _HANGUL_WORD.findall(text):
        stem = _stem(word) if len(word) > 1 else word
        if not stem:
            continue
        if len(stem) == 1:
            if stem not in _KOREAN_STOP:
                out.add(stem)
        else:
            out.update(stem[i:i + 2] for i in range(len(stem) - 1))
    for word in _LATIN_WORD.findall(text):
        word = word.lower().strip("'-")
        if len(word) > 1 and word not in _ENGLISH_STOP:
            out.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return frozenset(out)


def _says_no(text: str) -> bool:
    return len(NEGATIONS.findall(text)) % 2 == 1


def polarity_differs(claim: str, evidence: str) -> bool:
    """Whether one says no where the other says yes: 않/없/아니/못 (not/no/never) an odd number of times in one
    of them, with and without their asides in brackets ("채식 (육류 없음)" is a yes; "병 ₩150,000 (글라스 판매
    없음)" a no), or a negating prefix on a word the claim uses plainly (비채식, 불가능, 무알코올)."""
    if _prefixed(claim, evidence):  # "비채식" says no: so must the claim ("…채식이 아닙니다")
        return not _says_no(claim)
    asides = re.compile(r"\([^)]*\)")
    if _says_no(claim) != _says_no(evidence) and \
            _says_no(asides.sub("", claim)) != _says_no(asides.sub("", evidence)):
        return True
    for word in _HANGUL_WORD.findall(claim):
        stem = _stem(word)
        for i in range(len(stem) - 1):
            if any(p + stem[i:i + 2] in evidence and p + stem[i:i + 2] not in claim for p in "비불무"):
                return True
    return False


# words where 불 / 무 / 비 is not a negation (fire, radish, rain...) though what follows is a word too
_NOT_NEGATED = frozenset("불고기 불꽃 불닭 불판 불맛 불향 무게 무대 무역 무늬 비용 비율 비교 비행 비빔 비밀 비상 비중".split())


def _prefixed(claim: str, evidence: str) -> str:
    """The evidence's whole word that is a claim word with a negating prefix (비채식 for 채식), or ""."""
    said = {_stem(w) for w in _HANGUL_WORD.findall(claim)}
    for word in _HANGUL_WORD.findall(evidence):
        stem = _stem(word)
        if len(stem) >= 3 and stem[0] in "비불무" and stem[1:] in said and stem not in said \
                and stem not in _NOT_NEGATED:
            return stem
    return ""


def negated_word(claim: str, evidence: str) -> str:
    """The evidence's word that says the opposite of a plain claim: "채식 여부: 비채식" against "…채식 메뉴입니다"
    (not a wording the other way but the opposite statement); "" when there is none or the claim says no too."""
    return "" if _says_no(claim) else _prefixed(claim, evidence)


def is_korean(text: str) -> bool:
    """Whether the text is mostly Hangul (by letters, against Latin ones)."""
    return len(re.findall(r"[가-힣]", text)) >= len(re.findall(r"[A-Za-z]", text))


def without_sentences(answer: str, drop: set[int]) -> str:
    """The answer without the sentences at the places ``drop`` (indexes into ``split_answer(answer)``); every other
    line as written, citation markers included. A line left with no sentence goes (its bullet too)."""
    lines, n = [], 0
    for raw in (answer or "").splitlines():
        count = len(split_answer(raw))
        mine = {i - n for i in range(n, n + count) if i in drop}
        n += count
        if not mine:
            lines.append(raw)
        elif len(mine) < count:
            lines.append(_cut_line(raw, mine, count))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _cut_line(raw: str, drop: set[int], count: int) -> str:
    """One line without some of its sentences: cut where they stand, or (when the raw line splits otherwise than
    its cleaned text) the kept sentences as the check read them."""
    lead = _BULLET.match(raw)
    prefix = lead.group(0) if lead else ""
    body = raw[len(prefix):]
    pieces = [(s, e) for s, e in sentences_in(body) if re.search(r"\w", clean(body[s:e]))]
    if len(pieces) == count:
        return prefix + " ".join(body[s:e] for k, (s, e) in enumerate(pieces) if k not in drop)
    return prefix + " ".join(s.text for k, s in enumerate(split_answer(raw)) if k not in drop)
