"""What a graph's nodes need at run time: models, knowledge base, web search and options.

Graphs are built as closures over a RunContext, so models and clients (and the keys inside them)
never enter graph state or checkpoints. A resumed run simply builds a fresh context.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel

from core.config import Settings
from core.knowledge import KnowledgeBase, KnowledgeError
from core.web_search import WebResult, web_search


@dataclass
class RunContext:
    settings: Settings
    llm: BaseChatModel  # answers and agents
    grader: BaseChatModel  # routers, graders, rewriters (may be a cheaper model)
    kb: KnowledgeBase
    web: Callable[[str], WebResult]
    options: dict = field(default_factory=dict)  # per-run switches: review, variant

    def retrieve(self, collection: str, query: str, k: int | None = None):
        return self.kb.search(collection, query, k or self.settings.k)

    def search(self, collections: list[str], query: str, k: int | None = None) -> tuple[list, list[tuple[str, str]]]:
        """Top-k over several collections merged by score, and (collection, reason) for each that failed."""
        found, problems = [], []
        for name in collections:
            try:
                found.extend(self.retrieve(name, query, k))
            except KnowledgeError as exc:
                problems.append((name, str(exc)))
        found.sort(key=lambda d: d.metadata.get("score", 0.0), reverse=True)
        return found[: k or self.settings.k], problems


def make_context(settings: Settings, llm: BaseChatModel | None = None, grader: BaseChatModel | None = None,
                 kb: KnowledgeBase | None = None, web: Callable[[str], WebResult] | None = None,
                 **options) -> RunContext:
    """Build the real context from settings; tests pass scripted models or a stub web search."""
    from core.models import get_chat_model

    llm = llm or get_chat_model(settings)
    if grader is None:
        grader = get_chat_model(settings, role="grader") if settings.grader_model else llm
    return RunContext(
        settings=settings,
        llm=llm,
        grader=grader,
        kb=kb or KnowledgeBase(settings),
        web=web or (lambda query: web_search(query, settings)),
        options=options,
    )
