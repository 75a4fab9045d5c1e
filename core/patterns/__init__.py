"""Pattern registry: every module of this package that defines ``PATTERN`` is a pattern, listed by its ``order``.

A pattern module declares everything about itself next to its graph (title, descriptions in English
and Korean, answer nodes, variants, review, the state fields its result carries, the choices a what-if fork
offers, the termination reasons it can end with); the registry, the pages, the diagrams, the outcome badges, the
i18n tables and the steps code read those declarations.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from langgraph.graph import StateGraph

from core.config import Settings
from core.patterns.answer_review import TAIL_REASONS, add_answer_tail
from core.patterns.common import BASE_OPTIONS, BaseState
from core.patterns.state import declared, turn_defaults
from core.runtime.trace import RUN_REASONS, Reason

# id -> module under core.patterns, found on first use (a test may add its own)
_MODULES: dict[str, str] = {}
_found: list[bool] = []


@dataclass(frozen=True)
class Pattern:
    """A pattern's declaration: its graph, its bound, and everything the app reads about it."""

    id: str
    title: str
    description: str  # two short lines for the home page
    build: Callable[[], StateGraph]  # the graph's builder, not compiled; its nodes read the run from LangGraph's runtime
    max_llm_calls: Callable[..., int]  # (settings, sources=None) -> the documented bound for one run
    # (sources: how many the run has; None = the worst case the pattern allows)
    order: int = 100  # where the app lists it (home page, sidebar, Compare, Evaluation)
    description_ko: str = ""  # the same two lines in Korean
    answer_nodes: frozenset = frozenset({"generate"})  # nodes whose tokens stream into the chat bubble
    # the graph's state (a TypedDict declaring each field with core.patterns.state): the turn input and reset
    state: type = BaseState
    supports_review: bool = False
    # variant -> the first node only that variant runs; the first variant is the default (the "variant" option)
    variant_entries: dict = field(default_factory=dict)
    # state fields the runner copies into the run's result: what the outcome badge and the evaluation read
    # (``grounding``: "yes" / "no" / "" for the answer returned; ``iterations`` / ``parse_errors``: agent replies)
    result_fields: tuple = ()
    # state field -> (schema in core.llm.graders, attribute): the values a what-if fork offers for it
    field_values: dict = field(default_factory=dict)
    # every core.runtime.trace.Reason its nodes may stop() with, the shared review pause's included
    termination_reasons: tuple = ()
    # (English template, Korean template) for the trace and stop messages only this pattern writes (ui/i18n/trace.py)
    texts_ko: tuple = ()
    # False for a pattern that runs another pattern's whole graph (Auto): that graph ends in the claim check and the
    # answer review already, so the registry adds no second tail
    answer_tail: bool = True
    # nodes that run another pattern's graph: their state update repeats the trace that graph streamed already
    subgraph_nodes: frozenset = frozenset()
    # (state snapshot, checkpointer) -> the values of the graph it runs, where a run paused inside that graph (the
    # run's own state holds only what came before the subgraph): the runner reads the paused run's result from them
    paused_values: Callable | None = None

    @property
    def reset(self) -> dict:
        """The per-turn state a run's options may set, at its defaults: the pattern's own fields, and the base
        fields every pattern takes as options (the run's sources: the sidebar's choice arrives as ``source_ids``)."""
        base = declared(BaseState)
        return {name: value for name, value in turn_defaults(self.state).items()
                if name not in base or name in BASE_OPTIONS}

    @property
    def reason_ids(self) -> frozenset:
        """The ids of the termination reasons the pattern declares."""
        return frozenset(r.id for r in self.termination_reasons)

    @property
    def variants(self) -> tuple:
        """The pattern's variants, the default first."""
        return tuple(self.variant_entries)

    def recursion_limit(self, settings: Settings) -> int:
        """The run's recursion limit: every LLM call in its own super-step at most, plus routing and bookkeeping,
        plus the answer's tail (check, review, and each draft the reviewer may send back: three steps a draft)."""
        return 3 * self.max_llm_calls(settings) + 20 + 3 * (settings.max_generations + 1)


def _registry() -> dict[str, str]:
    """id -> module, in the order the patterns declare; the package is scanned once."""
    if not _found:
        found = []
        for info in pkgutil.iter_modules(__path__):
            pattern = getattr(importlib.import_module(f"{__name__}.{info.name}"), "PATTERN", None)
            if isinstance(pattern, Pattern):
                found.append((pattern.order, pattern.id, info.name))
        discovered = {pid: module for _, pid, module in sorted(found)}
        extra = dict(_MODULES)  # added before the scan (tests)
        _MODULES.clear()
        _MODULES.update({**discovered, **extra})
        _found.append(True)
    return _MODULES


def pattern_ids() -> list[str]:
    """Every registered pattern's id, in the order the app lists them."""
    return list(_registry())


def get_pattern(pattern_id: str) -> Pattern:
    """The registered pattern ``pattern_id`` (KeyError naming the known ones otherwise)."""
    modules = _registry()
    if pattern_id not in modules:
        raise KeyError(f"unknown pattern {pattern_id!r}; choose one of {', '.join(modules)}")
    return importlib.import_module(f"core.patterns.{modules[pattern_id]}").PATTERN


def all_patterns() -> list[Pattern]:
    """Every registered pattern, in the order the app lists them."""
    return [get_pattern(pid) for pid in _registry()]


def termination_reasons() -> dict[str, Reason]:
    """Every reason a run can stop with, id -> Reason: the runner's own, the answer review's (every pattern's
    graph ends in it), then what each pattern declares."""
    out = {r.id: r for r in (*RUN_REASONS, *TAIL_REASONS)}
    for pattern in all_patterns():
        for reason in pattern.termination_reasons:
            if out.setdefault(reason.id, reason) != reason:
                raise ValueError(f"{pattern.id} declares {reason.id!r} unlike another pattern: share one Reason")
    return out


def reason_outcome(reason_id: str) -> str:
    """The outcome class of a termination reason ('' for none, or one no pattern declares any more)."""
    reason = termination_reasons().get(reason_id or "")
    return reason.outcome if reason else ""


def compile_pattern(pattern: Pattern, checkpointer=None):
    """The pattern's graph with the shared tail (the claim check, the answer review: core.patterns.answer_review),
    compiled (on ``checkpointer``); a run streams it with ``context=`` its RunContext."""
    builder: StateGraph = pattern.build()
    if pattern.answer_tail:
        builder = add_answer_tail(builder, reason_outcome)
    return builder.compile(checkpointer=checkpointer, name=pattern.id)


SHARED_GRAPHS = 64  # compiled graphs kept: patterns x checkpointers (one per database) in use
_shared: OrderedDict = OrderedDict()  # (pattern id, build, checkpointer) ids -> (build, checkpointer, graph)
_shared_lock = threading.Lock()


def run_graph(pattern: Pattern, checkpointer=None):
    """The compiled graph a run streams with ``context=`` its RunContext: compiled once per pattern and
    checkpointer, then reused by every run.

    It holds no run's settings, models or keys: each node takes ``runtime: Runtime[RunContext]`` and reads
    the context of the run that executes it. Nothing else shapes a graph: variants, review and sources are
    state, routed at run time.
    """
    key = (pattern.id, id(pattern.build), id(checkpointer))
    with _shared_lock:  # concurrent runs (Compare) compile a pattern once
        kept = _shared.get(key)
        if kept is not None and kept[0] is pattern.build and kept[1] is checkpointer:
            _shared.move_to_end(key)
            return kept[2]
        graph = compile_pattern(pattern, checkpointer)
        _shared[key] = (pattern.build, checkpointer, graph)  # held: their ids cannot be reused while kept
        while len(_shared) > SHARED_GRAPHS:
            _shared.popitem(last=False)
        return graph
