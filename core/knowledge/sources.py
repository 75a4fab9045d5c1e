"""The collections as the patterns see them: sources with a display name, a description and a switch.

Routes (Adaptive), fan-out targets (Self-RAG) and agent tools (ReAct, Agentic) are generated from
these records; no pattern names a collection. A description says which questions a collection
answers; it is stored in the collection's own Chroma metadata, so it lives and dies with it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

from core.knowledge.base import RESERVED
from core.prompts import escape_fences, fence

MAX_OFFERED = 8  # more enabled sources than this: the router sees the closest ones only
DESCRIPTION_CHARS = 600
SUGGEST_CHUNKS = 4

# The shipped demo corpora, described like any other collection (a stored edit wins).
SAMPLE_SOURCES = {
    "restaurant_menu": (
        "레스토랑 메뉴 · Restaurant menu",
        "이탈리안 레스토랑 라 포레스타(La Foresta)의 메뉴: 요리 이름, 가격, 재료, 맵기, 알레르기 유발 성분, "
        "채식·비건·키즈 메뉴, 영업 안내. The La Foresta Italian restaurant's menu: dishes, prices, ingredients, "
        "spiciness, allergens, vegetarian, vegan and kids' options, opening information."),
    "restaurant_wine": (
        "와인 리스트 · Wine list",
        # the styles are named because Qwen sent a rosé's grape and a dessert wine to the menu; in brackets,
        # because a sentence built around them made Gemma answer the menu's steak-price question directly
        "라 포레스타의 와인 리스트: 와인 이름, 포도 품종, 산지, 스타일(레드·화이트·로제·스파클링·디저트), 병·잔 가격, "
        "어울리는 요리. La Foresta's wine list: wines (red, white, rosé, sparkling, dessert), grape varieties, "
        "regions, styles, bottle and glass prices, food pairings."),
    "japan_ict": (
        "일본 ICT 정책 · Japan ICT policy",
        "일본 ICT 정책 동향 보고서: 디지털청과 행정 디지털화, 마이넘버, Society 5.0과 AI 전략, 반도체 산업 재건과 "
        "보조금, 5G·Beyond 5G, 사이버보안, 디지털 인재. Japan's ICT policy report: Digital Agency, Society 5.0 "
        "and AI strategy, semiconductor subsidies and targets, 5G / Beyond 5G, cybersecurity, digital talent."),
    "usa_ict": (
        "미국 ICT 정책 · US ICT policy",
        "미국 ICT 정책 동향 보고서: CHIPS 및 과학법과 반도체 예산, AI 행정명령과 AI 안전, BEAD 광대역 사업, "
        "국가 사이버보안 전략, 데이터 프라이버시, 빅테크 반독점. The US ICT policy report: the CHIPS and Science "
        "Act, AI executive orders and safety, BEAD broadband, the national cybersecurity strategy, data privacy, "
        "big-tech antitrust."),
}


class SourceError(ValueError):
    """A source cannot be created or changed as asked (reserved name, empty description...)."""


@dataclass(frozen=True)
class Source:
    id: str  # the collection name: the route id, and what evaluations compare
    name: str  # display name
    description: str  # which questions it answers (what routers and tool descriptions show)
    enabled: bool = True
    described: bool = True  # False: the description is a stand-in made from the collection's name

    def line(self) -> str:
        """How a router prompt lists the source (inside its <collections> fence: the text cannot close it)."""
        return f"- {self.id}: {as_prompt_text(self.name)}. {as_prompt_text(self.description)}"


def as_prompt_text(text: str) -> str:
    """A user-typed name or description as one line of prompt data: whitespace collapsed, fence tags escaped."""
    return escape_fences(" ".join(str(text).split()))


def _source(name: str, meta: dict) -> Source:
    sample_name, sample_description = SAMPLE_SOURCES.get(name, ("", ""))
    description = str(meta.get("description") or sample_description).strip()
    display = str(meta.get("display_name") or sample_name or name).strip()
    return Source(id=name, name=display, enabled=bool(meta.get("enabled", True)),
                  description=description or f"Documents of the collection {display}.", described=bool(description))


def all_sources(kb) -> list[Source]:
    """Every collection as a source, sorted by id; reserved names are never sources."""
    return [_source(name, meta) for name, meta in kb.catalogue().items() if name.lower() not in RESERVED]


def active_sources(kb, chosen: list[str] | None = None) -> list[Source]:
    """The sources a run works over: the enabled ones, narrowed to ``chosen`` when a choice was made."""
    enabled = [s for s in all_sources(kb) if s.enabled]
    if not chosen:
        return enabled
    wanted = set(chosen)
    return [s for s in enabled if s.id in wanted]


def get_source(kb, name: str) -> Source:
    return _source(name, kb.metadata(name))


def update_source(kb, name: str, *, display_name: str | None = None, description: str | None = None,
                  enabled: bool | None = None) -> Source:
    """Store a source's display name, description or switch with its collection."""
    if name.lower() in RESERVED:
        raise SourceError(f"{name!r} is reserved for the routers; rename the collection")
    values: dict = {}
    if display_name is not None:
        values["display_name"] = " ".join(display_name.split())[:80]
    if description is not None:
        text = " ".join(description.split())
        if len(text) > DESCRIPTION_CHARS:
            raise SourceError(f"the description is {len(text)} characters long; keep it under {DESCRIPTION_CHARS}")
        values["description"] = text
    if enabled is not None:
        values["enabled"] = bool(enabled)
    if values:
        kb.set_metadata(name, **values)
    return get_source(kb, name)


def check_new_name(name: str) -> None:
    """A collection name the routers can use: not one of their own route ids."""
    if name.lower() in RESERVED:
        use = "web search" if name.lower() == "web" else "a direct answer"
        raise SourceError(f"{name!r} is reserved (the routers use it for {use}); choose another collection name")


# ---------------------------------------------------------------- what patterns generate from them


def tool_names(sources: list[Source], taken: tuple[str, ...] = ("web_search",)) -> dict[str, str]:
    """source id -> a tool name every provider accepts (letters, digits, _ and -, at most 64), unique."""
    used = set(taken)
    out = {}
    for source in sources:
        base = re.sub(r"[^A-Za-z0-9_-]", "_", source.id)[:60] or "source"
        name, n = base, 2
        while name in used:
            name, n = f"{base[:57]}_{n}", n + 1
        used.add(name)
        out[source.id] = name
    return out


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def closest(kb, question: str, sources: list[Source], limit: int = MAX_OFFERED) -> tuple[list[Source], list[float]]:
    """The ``limit`` sources whose descriptions are nearest the question (embedding similarity), best first."""
    if len(sources) <= limit:
        return list(sources), []
    query = kb.embed_query(question)
    vectors = kb.embeddings.embed_documents([f"{s.name}. {s.description}" for s in sources])
    scored = sorted(zip(sources, (_cosine(query, v) for v in vectors)), key=lambda pair: -pair[1])[:limit]
    return [s for s, _ in scored], [round(score, 4) for _, score in scored]


# ---------------------------------------------------------------- drafting a description


class DraftDescription(BaseModel):
    description: str = Field(min_length=1, max_length=DESCRIPTION_CHARS)


def suggest_description(kb, model, name: str, chunks: int = SUGGEST_CHUNKS) -> str:
    """Draft a description from the collection's first chunks with ``model``; the user edits it."""
    from core.llm import graders
    from core.prompts import workflow as P

    docs = kb.chunks(name, limit=max(chunks * 8, 32))
    docs.sort(key=lambda d: (d.metadata.get("source", ""), d.metadata.get("page", 0), d.metadata.get("chunk_index", 0)))
    if not docs:
        raise SourceError(f"collection {name!r} has no chunks to describe yet; index some files first")
    files = sorted({d.metadata.get("source", "?") for d in docs})  # file names are the uploader's text too
    human = fence("Files: " + ", ".join(as_prompt_text(f) for f in files)) + "\n\n" + "\n\n".join(
        fence(d.page_content[:700]) for d in docs[:chunks])
    system = P.DESCRIBE_SOURCE_SYSTEM.format(chars=DESCRIPTION_CHARS)
    outcome = graders.ask(model, DraftDescription, system, human, DraftDescription(description="-"))
    if outcome.fallback:
        raise SourceError(f"the model could not draft a description ({outcome.error}); write one yourself")
    return " ".join(outcome.value.description.split())
