"""How a fork's run differs from the run it was forked from: path, decisions, cost, answer, sources, ending."""

from __future__ import annotations

DECISIONS = ("route", "verdict", "rewrite", "tool", "info", "error", "stop", "interrupt")


def decisions(trace: list[dict]) -> dict[tuple, dict]:
    """Decision events keyed by (node, grader, target, occurrence): the n-th grade of the same document."""
    out: dict[tuple, dict] = {}
    seen: dict[tuple, int] = {}
    for e in trace or []:
        if e.get("kind") not in DECISIONS:
            continue
        base = (e.get("node", ""), e.get("grader", ""), _key(e.get("target")))
        seen[base] = seen.get(base, 0) + 1
        out[(*base, seen[base])] = e
    return out


def _key(target) -> str:
    if isinstance(target, dict):  # a document reference
        return str(target.get("chunk_id") or target.get("source") or target)
    return "" if target is None else str(target)


def _said(e: dict | None) -> str:
    if not e:
        return "—"
    verdict = e.get("verdict")
    score = e.get("score")
    text = "" if verdict is None else str(verdict)
    return f"{text} ({score})" if score is not None and str(score) not in text else text


def diverges_at(a: list[str], b: list[str]) -> int:
    """Index of the first node where two paths part (the shorter length when one continues the other)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def compare_runs(original: dict, fork: dict) -> dict:
    """Differences between two run results; ``same`` says a replay repeated the original exactly."""
    before, after = decisions(original.get("trace")), decisions(fork.get("trace"))
    rows = []
    for key in list(before) + [k for k in after if k not in before]:
        a, b = before.get(key), after.get(key)
        if _said(a) != _said(b):
            rows.append({"node": key[0], "grader": key[1], "target": key[2], "original": _said(a), "fork": _said(b)})
    path_a, path_b = original.get("path") or [], fork.get("path") or []
    sources_a = [_source(s) for s in original.get("sources") or []]
    sources_b = [_source(s) for s in fork.get("sources") or []]
    same = (path_a == path_b and not rows and original.get("answer") == fork.get("answer")
            and original.get("termination_reason") == fork.get("termination_reason"))
    return {
        "same": same,
        "path": {"original": path_a, "fork": path_b, "diverges_at": diverges_at(path_a, path_b)},
        "decisions": rows,
        "answer_changed": original.get("answer") != fork.get("answer"),
        "sources": {"original": sources_a, "fork": sources_b,
                    "only_original": [s for s in sources_a if s not in sources_b],
                    "only_fork": [s for s in sources_b if s not in sources_a]},
        "termination": {"original": original.get("termination_reason"), "fork": fork.get("termination_reason")},
        "figures": {k: {"original": original.get(k, 0), "fork": fork.get(k, 0)} for k in ("llm_calls", "tokens", "ms")},
    }


def _source(src: dict) -> str:
    where = src.get("url") or src.get("chunk_id") or f"{src.get('source', '?')} p.{src.get('page')}"
    return f"{src.get('source', '?')} ({where})" if not src.get("url") else where
