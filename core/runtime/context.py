"""What a graph's nodes need at run time: models, knowledge base, web search and options.

Nodes reach models and clients (and the keys inside them) through a RunContext, never through graph state or
checkpoints: every pattern's graph is built with ``context_schema=RunContext``, a run streams it with its own
context (``graph.stream(..., context=ctx)``) and each node reads it as ``runtime.context``
(``node(state, runtime: Runtime[RunContext])``), so one compiled graph serves every run
(core.patterns.run_graph). A resumed run simply builds a fresh context.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel

from core.config import Settings
from core.knowledge import hybrid
from core.knowledge.base import KnowledgeBase
from core.knowledge.hybrid import retrieval_mode
from core.knowledge.loaders import KnowledgeError
from core.knowledge.web_search import WebResult, web_search
from core.llm.thresholds import Thresholds, model_key, thresholds_for


@dataclass
class RunContext:
    settings: Settings
    llm: BaseChatModel  # answers and agents
    grader: BaseChatModel  # routers, graders, rewriters (may be a cheaper model)
    kb: KnowledgeBase
    web: Callable[[str], WebResult]
    options: dict = field(default_factory=dict)  # per-run switches: review, variant

    doc_chars: int = 0  # the most characters of a document the model reads (0: all of it)
    thresholds: Thresholds = field(default_factory=Thresholds)  # verdict probability -> decision, per grader
    web_ready: bool = True  # web search can answer (a key is set, or a test injected one)

    @property
    def retrieval(self) -> str:
        """The retrieval mode of this run (``RAG_RETRIEVAL``): hybrid, dense or keyword."""
        return retrieval_mode(self.settings.retrieval)

    def retrieve(self, collection: str, query: str, k: int | None = None):
        docs, problems = self.search([collection], query, k)
        if problems:
            raise KnowledgeError(problems[0][1])
        return docs

    def search(self, collections: list[str], query: str, k: int | None = None) -> tuple[list, list[tuple[str, str]]]:
        """Top-k over several collections in the run's retrieval mode (core.knowledge.hybrid), and
        (collection, reason) for each that failed."""
        found = hybrid.search(self.kb, collections, query, k or self.settings.k, self.retrieval)
        docs = found.documents
        return ([_capped(d, self.doc_chars) for d in docs] if self.doc_chars else docs), found.problems


def with_run(config: dict, ctx: RunContext) -> dict:
    """``config`` carrying ``ctx`` as LangGraph's runtime context, for a graph call that takes no ``context=``.

    ``update_state(config, values, as_node=node)`` runs the node's routers, and a router may read the run's
    settings (a budget); LangGraph 1.2 gives them no runtime there ("Missing required config key").
    """
    from langgraph._internal._constants import CONFIG_KEY_RUNTIME  # where a node's runtime is looked up
    from langgraph.runtime import Runtime

    return {**config, "configurable": {**config.get("configurable", {}), CONFIG_KEY_RUNTIME: Runtime(context=ctx)}}


def _capped(doc, chars: int):
    """The document cut to ``chars`` at a word boundary (sources then show what the model read)."""
    text = doc.page_content
    if len(text) <= chars:
        return doc
    cut = text[:chars].rsplit(None, 1)[0] if " " in text[:chars] else text[:chars]
    return doc.model_copy(update={"page_content": cut + " …", "metadata": {**doc.metadata, "full_chars": len(text)}})


def make_context(settings: Settings, llm: BaseChatModel | None = None, grader: BaseChatModel | None = None,
                 kb: KnowledgeBase | None = None, web: Callable[[str], WebResult] | None = None,
                 **options) -> RunContext:
    """Build the real context from settings; tests pass scripted models or a stub web search."""
    from core.llm.models import get_chat_model, resolve_provider

    doc_chars = 0
    if llm is None and resolve_provider(settings) == "embedded":  # 2 cores read ~40-150 tokens/s: cap k and chunks
        settings = settings.with_(k=max(1, min(settings.k, settings.embedded_k)))
        doc_chars = max(0, settings.embedded_doc_chars)
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
        doc_chars=doc_chars,
        thresholds=thresholds_for(settings, model_key(grader)),
        web_ready=web is not None or bool(settings.tavily_api_key),
    )
