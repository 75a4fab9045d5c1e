"""Pattern registry: {id: Pattern}. One module per graph; each defines ``PATTERN``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from langgraph.graph import StateGraph

from core.config import Settings

# id -> module under core.patterns; the order is the order the UI lists them in
_MODULES = {
    "basic": "basic",
    "adaptive": "adaptive",
    "self_rag": "self_rag",
    "corrective": "corrective",
    "agentic": "agentic",
    "react": "react",
    "react_native": "react_native",
    "graph_rag": "graph_rag",
}


@dataclass(frozen=True)
class Pattern:
    id: str
    title: str
    description: str  # two short lines for the home page
    build: Callable  # (RunContext) -> StateGraph builder, not compiled
    max_llm_calls: Callable[..., int]  # (settings, sources=None) -> the documented bound for one run
    # (sources: how many the run has; None = the worst case the pattern allows)
    answer_nodes: frozenset = frozenset({"generate"})  # nodes whose tokens stream into the chat bubble
    reset: dict = field(default_factory=dict)  # per-turn state keys reset at the start of each run
    supports_review: bool = False
    variants: tuple = ()  # values of the per-turn "variant" option, the first is the default

    def __post_init__(self) -> None:
        # every pattern works over the run's sources: the sidebar's choice arrives as this state key
        object.__setattr__(self, "reset", {"source_ids": [], **self.reset})

    def recursion_limit(self, settings: Settings) -> int:
        # every LLM call happens in its own super-step at most, plus routing and bookkeeping steps
        return 3 * self.max_llm_calls(settings) + 20


def pattern_ids() -> list[str]:
    return list(_MODULES)


def get_pattern(pattern_id: str) -> Pattern:
    if pattern_id not in _MODULES:
        raise KeyError(f"unknown pattern {pattern_id!r}; choose one of {', '.join(_MODULES)}")
    return importlib.import_module(f"core.patterns.{_MODULES[pattern_id]}").PATTERN


def all_patterns() -> list[Pattern]:
    return [get_pattern(pid) for pid in _MODULES]


def compile_pattern(pattern: Pattern, ctx, checkpointer=None):
    builder: StateGraph = pattern.build(ctx)
    return builder.compile(checkpointer=checkpointer, name=pattern.id)
