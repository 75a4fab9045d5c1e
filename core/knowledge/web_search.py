"""Web search through Tavily, normalised to Documents; failures come back typed, never raised."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from langchain_core.documents import Document

from core.config import Settings
from core.secrets import redact

MAX_QUERY_CHARS = 380  # Tavily rejects long queries with HTTP 400


@dataclass
class WebResult:
    status: Literal["ok", "empty", "unavailable"]
    documents: list[Document] = field(default_factory=list)
    reason: str = ""
    query: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def shorten_query(query: str, limit: int = MAX_QUERY_CHARS) -> str:
    """Collapse whitespace and cut at a word boundary below ``limit`` characters."""
    text = " ".join(query.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut or text[:limit]


def web_status(settings: Settings) -> str:
    """What the doctor and the sidebar say about web search: configured, not set, or a key refused as too short."""
    return "configured" if settings.tavily_api_key else "unavailable: " + settings.missing_key("tavily_api_key",
                                                                                               "no TAVILY_API_KEY")


def normalise(raw, query: str) -> WebResult:
    """Turn Tavily's answer (dict with results, an error dict, or a string) into a WebResult."""
    if isinstance(raw, str):
        return WebResult("empty", reason=raw.strip() or "no results", query=query)
    if not isinstance(raw, dict):
        return WebResult("unavailable", reason=f"unexpected answer of type {type(raw).__name__}", query=query)
    if raw.get("error"):
        return WebResult("unavailable", reason=f"search API error: {raw['error']}", query=query)
    docs = []
    for item in raw.get("results") or []:
        content = (item.get("content") or "").strip()
        if not content:
            continue
        url = item.get("url", "")
        docs.append(Document(
            page_content=content,
            metadata={"source": url or "web", "url": url, "title": item.get("title") or url,
                      "score": float(item.get("score") or 0.0), "collection": "web"},
        ))
    if not docs:
        return WebResult("empty", reason="no results", query=query)
    return WebResult("ok", docs, query=query)


def web_search(query: str, settings: Settings, max_results: int = 3, client=None) -> WebResult:
    """Search the web. ``client`` (anything with ``invoke``) is injectable for tests."""
    query = shorten_query(query)
    if not query:
        return WebResult("empty", reason="empty query", query=query)
    if client is None:
        if not settings.tavily_api_key:
            reason = settings.missing_key("tavily_api_key", "web search is not configured (no TAVILY_API_KEY)")
            return WebResult("unavailable", reason=reason, query=query)
        try:
            from langchain_tavily import TavilySearch

            client = TavilySearch(max_results=max_results, tavily_api_key=settings.tavily_api_key)
        except Exception as exc:  # bad key format, missing package
            return WebResult("unavailable", reason=redact(f"web search could not start: {exc}", settings)[:300], query=query)
    try:
        raw = client.invoke({"query": query})
    except Exception as exc:  # timeouts, HTTP errors: the graphs must keep going; the text may quote the key
        return WebResult("unavailable", reason=redact(f"web search failed: {exc.__class__.__name__}: {exc}", settings)[:300],
                         query=query)
    result = normalise(raw, query)
    result.reason = redact(result.reason, settings)  # an error body may echo the request, key included
    return result
