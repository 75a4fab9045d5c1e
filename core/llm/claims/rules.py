"""The cheap checks of the claim checker (core.llm.claims.check): no_claim sentences, evidence spans ranked per claim,
and every figure and quoted name of a claim in the evidence that supports it.

A figure found somewhere else in the documents does not count: "트러플 크림 파스타는 ₩24,000입니다" fails
although ₩24,000 is in the menu (for the risotto), because the spans about the pasta say ₩28,000.
What the rules only doubt (no passage shares the claim's terms, the evidence is worded the other way)
is left to the model, or called unsupported when there is none.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.llm.claims.numbers import CONFLICTING, Fact, extract, facts_of, keys_of, quoted_names, squeeze
from core.llm.claims.spans import Sentence, Span, is_korean, negated_word, polarity_differs, spans_of, terms

WINDOW = 3  # spans (best first) a claim's figures may come from, besides the best span's own section
LOW_OVERLAP = 0.34  # below this share of its terms (by weight) in the best span, nothing says it
VERBATIM = 0.95  # this share of its terms in one span, figures present, same polarity: supported without a model
EVIDENCE_SPANS = 3  # spans a model reads per claim


# ---------------------------------------------------------------- documents


@dataclass(frozen=True)
class Doc:
    text: str
    source: str
    chunk: str | int


def documents_of(documents: Sequence) -> list[Doc]:
    """Dicts ({text, source, chunk...}), LangChain Documents or run source records, as one shape."""
    out = []
    for i, doc in enumerate(documents or [], 1):
        if isinstance(doc, dict):
            meta, text = doc, doc.get("text") or doc.get("page_content") or ""
        else:
            meta, text = getattr(doc, "metadata", {}) or {}, getattr(doc, "page_content", "") or ""
        chunk = meta.get("chunk") or (int(meta["chunk_index"]) + 1 if meta.get("chunk_index") is not None
                                      else meta.get("chunk_id") or i)
        source = meta.get("source") or meta.get("url") or meta.get("title") or f"document {i}"
        out.append(Doc(str(text), str(source), chunk))
    return out


def cosines(vector, matrix) -> list[float]:
    """Cosine of one vector with each row of a matrix."""
    v, m = np.asarray(vector, dtype=np.float32), np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(v) or 1.0)
    return (m @ v / np.where(norms == 0, 1.0, norms)).tolist()


# ---------------------------------------------------------------- no_claim

_GREETING = re.compile(r"^(안녕하세요|안녕|반갑습니다|감사합니다|고맙습니다|hello|hi|hey|thanks|thank you|good (morning|"
                       r"afternoon|evening))\b", re.IGNORECASE)
_CLOSING = re.compile(r"궁금한 (점|것|사항)|도움이 (되|필요)|말씀해 ?주|문의해 ?주|물어봐 ?주|hope (this|that) helps|"
                      r"let me know|feel free|happy to help|any (other|more) questions", re.IGNORECASE)
_DECLINE = re.compile(
    r"(문서|자료|정보|내용|검색 결과|context)[^.!?]{0,30}(없습니다|없어요|없다|나와 있지 않|포함되어 있지 않|언급되어 있지 않|"
    r"언급이 없|찾을 수 없|확인할 수 없|확인되지 않)|찾을 수 없|확인할 수 없|알 수 없|답변(을|드리기)?\s?(할 수 없|어렵)|"
    r"(could not|couldn't|can't|cannot|unable to|did not|didn't) (find|locate|determine|answer|tell)|"
    r"(documents?|context|sources?|texts?|information)( provided)? (do|does|did) not (contain|mention|say|include|"
    r"provide|specify|state)|not (mentioned|found|included|specified|provided|stated|available) in|no information|"
    r"i (don't|do not) know|not in the (provided |given |retrieved )?(documents?|context|sources?)", re.IGNORECASE)


_SOURCES = re.compile(r"^(출처|참고 문헌|참고 자료|sources?|references?)\s*[:：]", re.IGNORECASE)


def no_claim_reason(sentence: Sentence) -> str | None:
    """Why a sentence states nothing to check, or None when it is a claim."""
    text = sentence.text
    if sentence.heading:
        return "a heading"
    if _SOURCES.match(text):
        return "lists the sources"
    if _DECLINE.search(text):
        return "says the documents do not have it"
    if text.rstrip(" )\"'”").endswith(("?", "？")):
        return "a question to the user"
    if _GREETING.match(text) and len(terms(text)) <= 3 or _CLOSING.search(text):
        return "a greeting or closing"
    if text.endswith((":", "：")) and not facts_of(text):
        return "introduces what follows"
    if not terms(text) and not facts_of(text):
        return "no statement to check"
    return None


# ---------------------------------------------------------------- ranking spans


@dataclass
class Evidence:
    """The spans of every document, with their terms, figure keys and facts (computed once per answer)."""

    docs: list[Doc]
    spans: list[Span]
    korean: bool = True  # the documents are mostly in Hangul
    terms: list[frozenset[str]] = field(default_factory=list)
    keys: list[set[str]] = field(default_factory=list)
    facts: list[list[Fact]] = field(default_factory=list)
    vectors: list | None = None

    @classmethod
    def of(cls, docs: list[Doc]) -> Evidence:
        spans = [span for i, doc in enumerate(docs) for span in spans_of(i, doc.text)]
        ev = cls(docs, spans, korean=is_korean(" ".join(d.text for d in docs)))
        for span in spans:
            facts, keys = extract(span.quote)
            ev.terms.append(terms(span.heading) | terms(span.quote))
            ev.keys.append(keys)
            ev.facts.append(facts)
        return ev

    def label(self, i: int) -> str:
        span = self.spans[i]
        doc = self.docs[span.doc]
        return f"{doc.source}" + (f" · {span.heading}" if span.heading else "")


@dataclass
class _Ranking:
    order: list[int]  # span indexes, most relevant first
    relevance: list[float]
    overlap: list[float]  # share of the claim's own terms found in each span (with its heading)
    similarity: list[float] | None


def _overlap(wanted: frozenset[str], have: frozenset[str], weight: dict[str, float]) -> float:
    """The share of the wanted terms' weight that ``have`` holds."""
    total = sum(weight[t] for t in wanted)
    return sum(weight[t] for t in wanted & have) / total if total else 0.0


def _weights(ev: Evidence, wanted: frozenset[str]) -> dict[str, float]:
    """Rarer terms weigh more (idf over the spans): the restaurant's name in every span says little."""
    n = len(ev.spans)
    return {t: math.log((n + 1) / (sum(1 for have in ev.terms if t in have) + 0.5)) for t in wanted}


def rank(ev: Evidence, claim: str, context: str, facts: list[Fact], claim_vector=None) -> _Ranking:
    """Spans by relevance to the claim: its terms (the question and the previous sentence count a little),
    the embedder's similarity when there is one, and its figures only to break ties."""
    own = terms(claim)
    around = terms(context) - own
    weight = _weights(ev, own | around)
    overlap = [_overlap(own, t, weight) for t in ev.terms]
    lexical = [(o + 0.3 * _overlap(around, t, weight)) / 1.3 if around else o for o, t in zip(overlap, ev.terms)]
    similarity = None
    if claim_vector is not None and ev.vectors:
        similarity = cosines(claim_vector, ev.vectors)
        low, high = min(similarity), max(similarity)
        spread = (high - low) or 1.0
        lexical = [0.5 * lx + 0.5 * (s - low) / spread for lx, s in zip(lexical, similarity)]
    relevance = [lx + 0.02 * sum(1 for f in facts if f.keys & k) for lx, k in zip(lexical, ev.keys)]
    order = sorted(range(len(ev.spans)), key=lambda i: (-relevance[i], i))
    return _Ranking(order, relevance, overlap, similarity)


def _window(ev: Evidence, ranking: _Ranking) -> list[int]:
    """Where a claim's figures may come from: the best spans, and the best span's section (same heading).

    Under a heading (a dish, a wine) every line is about it: "가격: ₩28,000" shares no word with "트러플 크림
    파스타는 28,000원입니다" but its heading. Without one (a PDF's page) only the spans close to the best count.
    """
    if not ranking.order:
        return []
    best = ranking.order[0]
    floor = 0.0 if ev.spans[best].heading else 0.5 * ranking.relevance[best]
    section = [i for i in ranking.order if ev.spans[i].doc == ev.spans[best].doc
               and ev.spans[i].section == ev.spans[best].section and ranking.relevance[i] >= floor]
    return list(dict.fromkeys(ranking.order[:WINDOW] + section))


# ---------------------------------------------------------------- the cheap checks


@dataclass
class Check:
    text: str
    verdict: str = "unchecked"
    reason: str = ""
    detail: str = ""
    checked_by: str = "rules"
    spans: list[int] = field(default_factory=list)  # evidence, most telling first
    doubt: str = ""  # a soft reason against: rules mode says unsupported, model mode asks the model
    undecided: str = ""  # the rules cannot tell: rules mode leaves it unchecked, model mode asks the model
    sure: bool = False  # near-verbatim in one span: supported without a model
    figures_found: bool = False  # the claim states figures, and each is in the span that supports it
    reading: dict = field(default_factory=dict)  # {"p", "threshold"} when the model's verdict was read from probabilities


def _conflict(ev: Evidence, best: int, fact: Fact, claimed: set[str]) -> Fact | None:
    """A figure of the same kind in the best span that the claim does not state (₩28,000 for a ₩24,000 claim)."""
    kinds = CONFLICTING.get(fact.kind)
    if not kinds:
        return None
    return next((f for f in ev.facts[best] if f.kind in kinds and not f.keys & claimed), None)


def _figures(ev: Evidence, check: Check, text: str, facts: list[Fact], window: list[int],
             ranking_order: list[int]) -> None:
    """Every figure must be in a span of the window, and not contradicted by the best span."""
    best = window[0]
    claimed = keys_of(text)  # every key the claim supports: "2023년 10월" does not contradict "2023년 10월 30일"
    stretches, weight = _stretches(text, facts), _weights(ev, terms(text))
    for fact in facts:
        home = next((i for i in window if fact.keys & ev.keys[i]), None)
        other = None if home == best else _conflict(ev, best, fact, claimed)
        if home is not None and other is None:
            other = _clause_conflict(ev.spans[home].quote, text, fact, claimed, weight)
            paired = _paired_otherwise(ev.spans[home].quote, fact, facts) if other is None else None
            if other is None and paired is None:
                check.spans.append(home)
                continue
            check.verdict, check.detail = "unsupported", "figure_conflict"
            check.reason = (f"the documents give {fact.text} for something else; for this they say {other.text}"
                            if other else f"the documents pair {paired[0].text} with {paired[1].text}, not {fact.text}")
            check.spans = [home] + [i for i in window if i != home]
            return
        if other is None:  # what the evidence says instead, if it states a figure of that kind
            where = next((i for i in window if _conflict(ev, i, fact, claimed)), best)
            other = _conflict(ev, where, fact, claimed)
            elsewhere = next((i for i in ranking_order if fact.keys & ev.keys[i]), None)
            if other is None and elsewhere is not None and _names_heading(ev, elsewhere, stretches.get(fact.text, "")):
                check.spans.append(elsewhere)  # a sentence that prices two items: each figure under its own
                continue
            if other is None and elsewhere is not None:  # in a passage the ranking did not tie to the claim
                check.doubt = f"{fact.text} is only in a passage that seems to be about something else"
                check.detail = "figure_elsewhere"
                check.spans.insert(0, elsewhere)
                continue
        else:
            where = best
        check.verdict, check.detail = "unsupported", "figure_missing" if home is None else "figure_conflict"
        check.reason = f"{fact.text} is not in the evidence" + (f"; the documents say {other.text}" if other else "")
        check.spans = [where] + [i for i in window if i != where]
        return
    check.figures_found = bool(facts) and not check.doubt


def _names_heading(ev: Evidence, i: int, stretch: str) -> bool:
    """Does a figure's stretch of the claim (from the figure before it up to it) name the item span ``i`` is under,
    every term of its heading? "트러플 크림 파스타는 ₩28,000, 불꽃 아라비아타 새우 파스타는 ₩23,000입니다" ranks
    one pasta's section first; the other's price is under the heading its own words name, not somewhere unrelated."""
    heading = terms(ev.spans[i].heading)
    return bool(heading) and is_korean(ev.spans[i].heading) == is_korean(stretch) and heading <= terms(stretch)


_CLAUSE = re.compile(r"[,;，、/]\s|[.!?。]\s|\(|\)")
CLAUSE_MARGIN = 0.2  # how much better another figure's clause must match the claim to contradict it


def _clause_conflict(quote: str, claim: str, fact: Fact, claimed: set[str],
                     weight: dict[str, float] | None = None) -> Fact | None:
    """Within one span, a figure of the same kind whose clause matches the claim clearly better than the
    clause of the claimed figure: "TSMC는 애리조나 공장에 66억 달러, 삼성전자는 텍사스 테일러 공장에 약 47억
    달러" does not say Samsung got 66억 달러. Terms weigh by rarity (``weight``, idf over the evidence): the
    names that tell the clauses apart count for more than the 공장 and 달러 they share; each clause counts up to its
    figure."""
    kinds = CONFLICTING.get(fact.kind)
    if not kinds:
        return None
    own = terms(claim)
    weight = weight or {}
    total = sum(weight.get(t, 1.0) for t in own) or 1.0
    others = [f for f in facts_of(claim) if f is not fact and f.kind != fact.kind]

    def score(clause: str) -> float:
        found = sum(1 for f in others if f.keys & keys_of(clause))
        return sum(weight.get(t, 1.0) for t in own & terms(clause)) / total + 0.5 * found / (len(others) or 1)

    clauses = [c for c in _CLAUSE.split(quote) if c.strip()]
    mine = [score(_up_to(c, f)) for c in clauses for f in facts_of(c) if fact.keys & f.keys]
    rivals = [(score(_up_to(c, f)), f) for c in clauses for f in facts_of(c)
              if f.kind in kinds and not f.keys & claimed and not fact.keys & keys_of(c)]
    if not mine or not rivals:
        return None
    best_score, rival = max(rivals, key=lambda r: r[0])
    return rival if best_score >= max(mine) + CLAUSE_MARGIN else None


def _up_to(clause: str, fact: Fact) -> str:
    """The clause up to its figure: what a figure is of is named before it, and an enumeration's last clause
    carries the predicate all its figures share ("…, 삼성전자는 … 약 47억 달러를 지원받기로 했다")."""
    at = clause.find(fact.text)
    return clause[:at + len(fact.text)] if at >= 0 else clause


def _paired_otherwise(quote: str, fact: Fact, facts: list[Fact]) -> tuple[Fact, Fact] | None:
    """A span that lists figures of two kinds in step pairs them in order: "1990년 약 37%에서 2020년 약 12%로" pairs
    37% with 1990년, so "2020년 약 37%" pairs its figures otherwise. Returns (the claim's other figure, the figure
    of ``fact``'s kind the span pairs it with) when that is not ``fact``; None when the span lists no such steps."""
    found = sorted(((quote.find(f.text), f) for f in facts_of(quote) if quote.find(f.text) >= 0),
                   key=lambda pair: pair[0])
    mine = [f for _at, f in found if f.kind in CONFLICTING.get(fact.kind, {fact.kind})]
    at = next((n for n, f in enumerate(mine) if f.keys & fact.keys), None)
    for partner in facts:
        if at is None or partner.kind in CONFLICTING.get(fact.kind, {fact.kind}):
            continue
        theirs = [f for _at, f in found if f.kind in CONFLICTING.get(partner.kind, {partner.kind})]
        there = next((n for n, f in enumerate(theirs) if f.keys & partner.keys), None)
        if len(theirs) == len(mine) >= 2 and there is not None and there != at:
            return partner, mine[there]
    return None


def _sections(ev: Evidence) -> dict[tuple[int, int], tuple[frozenset[str], set[str]]]:
    """Each headed section of the evidence -> (its heading's terms, the kinds of figure it states)."""
    out: dict[tuple[int, int], tuple[frozenset[str], set[str]]] = {}
    for i, span in enumerate(ev.spans):
        if span.heading:
            heading, kinds = out.get((span.doc, span.section), (terms(span.heading), set()))
            out[(span.doc, span.section)] = (heading, kinds | {f.kind for f in ev.facts[i]})
    return out


def _untied(ev: Evidence, check: Check, text: str, previous: str, question: str, facts: list[Fact]) -> None:
    """A figure that answers for one of several items the question matches, without saying which.

    "가격은 ₩14,000입니다" answering "스테이크 메뉴의 가격은?" over three steaks is true of the kids' steak and
    reads as the price of every steak. The items are the evidence's headed sections (a dish, a wine); the
    question matches those whose heading shares the most of its terms; the figure's clause, or the words
    since the figure before it (or, for a claim of one figure, the claim with the sentence before) must name
    its item better than any other of them.
    Same-language text only: a heading in Hangul shares no term with an English claim that names it.
    """
    sections, asked = _sections(ev), terms(question)
    clauses = [c for c in _CLAUSE.split(text) if c.strip()]
    stretches = _stretches(text, facts)
    for fact in facts:
        home = next((ev.spans[i] for i in check.spans if fact.keys & ev.keys[i]), None)
        if home is None or (home.doc, home.section) not in sections or is_korean(home.heading) != is_korean(text):
            continue
        kinds = CONFLICTING.get(fact.kind, {fact.kind})
        shared = {key: len(asked & heading) for key, (heading, have) in sections.items() if have & kinds}
        most = max(shared.values(), default=0)
        matched = [key for key, n in shared.items() if n == most and n > 0]
        if len(matched) < 2 or (home.doc, home.section) not in matched:
            continue
        own = [terms(c) for c in clauses if fact.keys & keys_of(c)] + [terms(stretches.get(fact.text, ""))]
        names = own + ([terms(text) | terms(previous)] if len(facts) == 1 else [])
        if any(_singles_out(named, (home.doc, home.section), matched, sections) for named in names):
            continue
        check.verdict, check.detail = "unsupported", "figure_untied"
        check.reason = (f"the figure is not tied to the item asked about: {fact.text} is the figure of "
                        f"“{home.heading}”, one of {len(matched)} items the question matches")
        return


def _stretches(text: str, facts: list[Fact]) -> dict[str, str]:
    """Each figure -> the text from the figure before it up to it ("A는 ₩35,000이고 B는 ₩29,000": "A는 ₩35,000",
    "이고 B는 ₩29,000"): where a sentence that prices several items names each one."""
    found = sorted((at, fact.text) for fact in facts if (at := text.find(fact.text)) >= 0)
    out, start = {}, 0
    for at, figure in found:
        out[figure] = text[start:at + len(figure)]
        start = at + len(figure)
    return out


def _singles_out(named: frozenset[str], home: tuple[int, int], matched: list, sections: dict) -> bool:
    """Do these words name the home item better than every other matched item?"""
    mine = len(named & sections[home][0])
    return all(mine > len(named & sections[key][0]) for key in matched if key != home)


def _quotes(ev: Evidence, check: Check, text: str, window: list[int]) -> None:
    """A name the claim quotes must be in the evidence (unless the evidence is in another script)."""
    hangul = re.compile(r"[가-힣]")
    for name in quoted_names(text):
        pool = [ev.spans[i].heading + " " + ev.spans[i].quote for i in window]
        if bool(hangul.search(name)) != any(hangul.search(p) for p in pool):
            continue  # a Korean name against English evidence: the model judges
        if not any(squeeze(name) in squeeze(p) for p in pool):
            check.verdict, check.detail = "unsupported", "quote_missing"
            check.reason = f"“{name}” is not in the evidence"
            return


def rules_check(ev: Evidence, text: str, context: str = "", claim_vector=None, *, question: str = "",
                previous: str = "") -> Check:
    """Figures and quoted names in the evidence that supports the claim; doubts for the model to settle.

    ``context`` ranks the spans; ``question`` and ``previous`` (the sentence before) tell whether a figure is
    tied to the item it belongs to."""
    check = Check(text)
    if not ev.spans:
        check.verdict, check.detail, check.reason = "unsupported", "no_documents", "there are no documents to check against"
        return check
    facts = facts_of(text)
    ranking = rank(ev, text, context, facts, claim_vector)
    window = _window(ev, ranking)
    _figures(ev, check, text, facts, window, ranking.order)
    if check.verdict != "unsupported" and check.spans and question:
        _untied(ev, check, text, previous, question, facts)
    if check.verdict != "unsupported":
        _quotes(ev, check, text, window)
    check.spans = list(dict.fromkeys(check.spans + window))[:EVIDENCE_SPANS + 1]
    if check.verdict != "unsupported":
        _wording(ev, check, text, facts, ranking)
    return check


def _wording(ev: Evidence, check: Check, text: str, facts: list[Fact], ranking: _Ranking) -> None:
    """What term overlap says of a claim whose figures passed: a doubt, undecided, or near-verbatim."""
    best = ranking.order[0]
    if check.doubt:  # a figure already raised one
        return
    if is_korean(text) != ev.korean:  # another language: shared terms mean little, and so does the embedder's
        if not facts:  # cosine (0.83-0.87 for right and wrong claims alike); its figures passed above
            check.undecided = "the documents are in another language: without a model only figures can be compared"
            check.detail = "other_language"
        return
    overlap = ranking.overlap[best]
    negated = negated_word(text, ev.spans[best].quote)
    if negated:  # "비채식" against "채식": the opposite, which Qwen 1.5B called supported
        check.verdict, check.detail = "unsupported", "negation"
        check.reason = f"the documents say the opposite, “{negated}”: “{short(ev.spans[best].quote)}”"
    elif overlap < LOW_OVERLAP:
        check.doubt, check.detail = "no passage in the documents says this", "not_in_documents"
    elif polarity_differs(text, ev.spans[best].quote):
        check.doubt, check.detail = f"the documents word it the other way: “{short(ev.spans[best].quote)}”", "negation"
    elif overlap >= VERBATIM and len(terms(text)) >= 3:
        check.sure = True


def short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
