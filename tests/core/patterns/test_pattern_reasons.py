"""Each pattern declares exactly the termination reasons its nodes can stop with; badges and labels read them."""

import ast
import importlib
import inspect

import pytest

from core.patterns import get_pattern, pattern_ids, reason_outcome, termination_reasons
from core.run.outcome import OUTCOMES, outcome
from core.runtime.trace import OUTCOME_CLASSES, RUN_REASONS


def _tree(module: str) -> ast.Module:
    return ast.parse(inspect.getsource(importlib.import_module(f"core.patterns.{module}")))


def _constants(node: ast.AST) -> set[str]:
    """The strings an expression can be: a literal, or either branch of ``a if c else b``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _constants(node.body) | _constants(node.orelse)
    raise AssertionError(f"a stop() reason the test cannot read: {ast.unparse(node)}")


def _assigned(scope: ast.AST, name: str) -> set[str]:
    """The strings assigned to ``name`` in ``scope`` (``reason = ...`` or ``reason, why = ..., ...``)."""
    found: set[str] = set()
    for node in ast.walk(scope):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == name:
                found |= _constants(node.value)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                found |= {s for t, v in zip(target.elts, node.value.elts)
                          if isinstance(t, ast.Name) and t.id == name for s in _constants(v)}
    assert found, f"no value assigned to the stop() reason {name!r}"
    return found


def _direct_reasons(scope: ast.AST) -> set[str]:
    reasons: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "stop":
            arg = node.args[1]
            reasons |= _assigned(scope, arg.id) if isinstance(arg, ast.Name) else _constants(arg)
    return reasons


def reachable_reasons(module: str, name: str | None = None, seen: set | None = None) -> set[str]:
    """What stop() can be called with from ``module`` (or one top-level function of it), following the
    functions it uses from its own module and from other core.patterns modules."""
    seen = set() if seen is None else seen
    if (module, name) in seen:
        return set()
    seen.add((module, name))
    tree = _tree(module)
    defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    imported = {alias.asname or alias.name: (n.module.rsplit(".", 1)[-1], alias.name) for n in tree.body
                if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("core.patterns.") for alias in n.names}
    scope = tree if name is None else defined[name]
    reasons = _direct_reasons(scope)
    for used in {n.id for n in ast.walk(scope) if isinstance(n, ast.Name)}:
        if used in defined and name is not None and used != name:
            reasons |= reachable_reasons(module, used, seen)
        elif used in imported:
            other, original = imported[used]
            if original in {n.name for n in _tree(other).body if isinstance(n, ast.FunctionDef)}:
                reasons |= reachable_reasons(other, original, seen)
    return reasons


@pytest.mark.parametrize("pattern_id", pattern_ids())
def test_a_pattern_declares_exactly_the_reasons_its_nodes_stop_with(pattern_id):
    pattern = get_pattern(pattern_id)
    if pattern.subgraph_nodes:  # Auto stops as the pattern it ran did
        from core.patterns.auto import ROUTED

        modules = [p.build.__module__.rsplit(".", 1)[-1] for p in ROUTED]
        stops = set().union(*(reachable_reasons(m) for m in modules))
    else:
        stops = reachable_reasons(pattern.build.__module__.rsplit(".", 1)[-1])
    assert stops, f"{pattern_id}: no stop() found"
    assert stops == pattern.reason_ids, f"{pattern_id}: stops with {sorted(stops)}, declares {sorted(pattern.reason_ids)}"


def test_the_review_pause_makes_a_pattern_declare_user_rejected():
    assert reachable_reasons("common", "make_review_documents") == {"user_rejected"}
    assert reachable_reasons("react_loop", "finish") == {"answered", "direct_answer", "error"}


def test_every_declared_reason_reads_in_both_languages_and_maps_to_a_badge():
    reasons = termination_reasons()  # raises when two patterns declare one id differently
    assert {r.id for r in RUN_REASONS} <= set(reasons)
    for reason in reasons.values():
        assert reason.en and any("\uac00" <= c <= "\ud7a3" for c in reason.ko), reason
        assert reason.outcome in OUTCOME_CLASSES, reason
        status = outcome({"termination_reason": reason.id, "answer": "", "sources": []})
        assert status in OUTCOMES
        if reason.outcome in ("budget", "direct", "rejected", "error"):
            assert status == reason.outcome
        if reason.outcome == "declined":
            assert status == "declined"


def test_an_unknown_reason_has_no_outcome_class():
    assert reason_outcome("no_such_reason") == "" and reason_outcome("") == ""
    assert outcome({"termination_reason": "no_such_reason", "answer": "x"}) == "unchecked"
