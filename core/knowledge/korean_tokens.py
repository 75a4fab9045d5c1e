"""Keyword tokens: Kiwi morphemes for Korean, a plain tokenizer for other text, identifiers kept whole.

Korean words carry particles and endings (메뉴의, 메뉴는, 메뉴를), so whitespace tokens rarely match;
Kiwi's morphological analysis gives the content words (nouns, verb and adjective stems, roots, foreign
words, numbers). ASCII identifiers and numbers are found first and handed to Kiwi as fixed tokens, so
``generate_with_counter`` or ``v1.2.3`` stay one token and ``5,000`` matches ``5000``.
"""

from __future__ import annotations

import re
import threading
import time

# what keyword search indexes: nouns, numerals, verb / adjective stems, roots, foreign words, hanja, numbers
CONTENT_TAGS = frozenset({"NNG", "NNP", "NR", "VV", "VA", "XR", "SL", "SH", "SN", "W_SERIAL", "W_URL", "W_EMAIL",
                          "W_HASHTAG", "W_MENTION"})
# numbers with thousands separators, then ASCII words: letters, digits, _ . - inside (identifiers, versions)
_ASCII = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_])?")
_HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
# plain text: the same, with letters of every script (café, crème)
_WORD = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\w(?:[\w.\-]*\w)?")
# English words too common to say what a chunk is about (IDF alone leaves them noisy on short chunks)
STOPWORDS = frozenset(
    "a an and are as at be been by can do does for from has have how i in is it its of on or that the this to "
    "was were what when where which who why will with you your".split())

_kiwi = None
_load_lock = threading.Lock()
_use_lock = threading.Lock()  # Kiwi holds the GIL while it analyses: serial calls lose nothing and need no proof of safety
load_seconds: float | None = None  # how long the first use took (reported by benchmarks and the doctor)


def kiwi():
    """The process's Kiwi analyser, loaded on first use (about 2-6 s on 2 shared cores)."""
    global _kiwi, load_seconds
    with _load_lock:
        if _kiwi is None:
            from kiwipiepy import Kiwi

            started = time.perf_counter()
            analyser = Kiwi()
            analyser.tokenize("한국어 형태소")  # the first call loads the rest of the model: pay it here
            load_seconds = round(time.perf_counter() - started, 2)
            _kiwi = analyser
        return _kiwi


def normalise(token: str) -> str:
    """The indexed form: lower case, thousands separators dropped (5,000 = 5000)."""
    token = token.lower()
    return token.replace(",", "") if token[:1].isdigit() else token


def has_korean(text: str) -> bool:
    return bool(_HANGUL.search(text or ""))


def token_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, token) of every content word of ``text``, in order."""
    text = str(text or "")
    if not has_korean(text):
        return _plain_spans(text)
    fixed = [(m.start(), m.end()) for m in _ASCII.finditer(text)]
    analyser = kiwi()
    with _use_lock:
        analysed = analyser.tokenize(text, pretokenized=[(s, e, "SL") for s, e in fixed])
    spans = []
    for tok in analysed:
        tag = str(tok.tag).split("-")[0]  # irregular stems are tagged VV-I / VA-R
        if tag in CONTENT_TAGS:
            form = text[tok.start:tok.end] if tag in ("SL", "SN", "SH") or tag.startswith("W_") else tok.form
            if normalise(form) not in STOPWORDS:
                spans.append((tok.start, tok.end, normalise(form)))
    return spans


def proper_noun_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the names in Korean text: Kiwi's proper nouns (NNP) and capitalised Latin words, names
    one space apart joined (강원도 평창)."""
    text = str(text or "")
    fixed = [(m.start(), m.end()) for m in _ASCII.finditer(text)]
    analyser = kiwi()
    with _use_lock:
        analysed = analyser.tokenize(text, pretokenized=[(s, e, "SL") for s, e in fixed])
    spans: list[list[int]] = []
    for tok in analysed:
        latin = str(tok.tag) == "SL" and text[tok.start:tok.start + 1].isupper()
        if str(tok.tag) != "NNP" and not latin:
            continue
        if spans and text[spans[-1][1]:tok.start] in ("", " "):
            spans[-1][1] = tok.start + tok.len
        else:
            spans.append([tok.start, tok.start + tok.len])
    return [(s, e) for s, e in spans if e - s >= 2]


def _plain_spans(text: str) -> list[tuple[int, int, str]]:
    """Text without Hangul: words and identifiers split at spaces and punctuation, lower-cased."""
    spans = [(m.start(), m.end(), normalise(m.group(0))) for m in _WORD.finditer(text)]
    return [s for s in spans if s[2] not in STOPWORDS]


def tokens(text: str) -> list[str]:
    """The keyword tokens of ``text`` (what the index stores and a query is matched with)."""
    return [token for _, _, token in token_spans(text)]
