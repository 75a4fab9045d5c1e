"""A pattern's Mermaid diagram with the path one run took highlighted (text only, no web service)."""

from __future__ import annotations

import re
import string

from core.patterns import get_pattern
from core.patterns.answer_review import REVIEW, REVISE, VERIFY

VISITED = "classDef visited fill:#f6c667,stroke:#7b2d26,stroke-width:2px,color:#222"
PAUSED = "classDef paused fill:#9ecae1,stroke:#08519c,stroke-width:3px,stroke-dasharray:4 2"
VISITED_LINK = "stroke:#7b2d26,stroke-width:3px"
_EDGE = re.compile(r"^\s*(\S+?)\s*(?:-->|-\.->|-\.\s.*?\.->)\s*(\S+?);?\s*$")
_SAFE = set(string.ascii_letters + string.digits + "_-")


def mermaid_id(name: str) -> str:
    """The node id LangChain's draw_mermaid gives a node name (same escaping rule)."""
    return "".join(ch if ch in _SAFE else "\\" + format(ord(ch), "x") for ch in name)


def node_ids(mermaid: str) -> set[str]:
    """The ids of the nodes a Mermaid flowchart defines."""
    return {m.group(1) for line in mermaid.split("\n") if (m := re.match(r"^\s*([^\s(\[]+)[(\[]", line))}


REVIEW_PREFIX = "review_"  # review_documents, review_tool_calls, review_answer: drawn only when the run paused for review
REVIEW_ONLY = {REVISE}  # reached only from a review: drawn with the review nodes


def edges(mermaid: str) -> list[tuple[str, str]]:
    return [m.groups() for line in mermaid.split("\n") if (m := _EDGE.match(line))]


def _reachable(links: list[tuple[str, str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        node = todo.pop()
        for a, b in links:
            if a == node and b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def drop_nodes(mermaid: str, hidden: set[str]) -> str:
    """The diagram without the ``hidden`` node ids and every edge that touches them."""
    if not hidden:
        return mermaid
    kept = []
    for line in mermaid.split("\n"):
        edge = _EDGE.match(line)
        node = re.match(r"^\s*([^\s(\[]+)[(\[]", line)
        if (edge and hidden & set(edge.groups())) or (not edge and node and node.group(1) in hidden):
            continue
        kept.append(line)
    return "\n".join(kept)


def variant_entries(pattern_id: str) -> dict:
    """variant -> its first node, as the pattern declares (the nodes only one variant reaches follow from the graph)."""
    try:
        return get_pattern(pattern_id).variant_entries
    except KeyError:  # a pattern that no longer exists (an old thread)
        return {}


def run_variant(pattern_id: str, path: list[str]) -> str | None:
    """The variant a run took, read from its path (None: the pattern has no variants, or it never got there)."""
    visited = {mermaid_id(n) for n in path}
    return next((v for v, entry in variant_entries(pattern_id).items() if entry in visited), None)


def focused(mermaid: str, pattern_id: str, variant: str | None = None, review: bool = False) -> str:
    """Only what one run can go through: the nodes of one variant (default: the first), review nodes if on."""
    ids = node_ids(mermaid)
    reviews = {n for n in ids if n.startswith(REVIEW_PREFIX) or n in REVIEW_ONLY}
    hidden = set() if review else set(reviews)
    entries = variant_entries(pattern_id)
    if entries:
        backbone = [(a, b) for a, b in edges(mermaid) if a not in reviews and b not in reviews]
        chosen = entries.get(variant or "") or next(iter(entries.values()))
        mine = _reachable(backbone, chosen)
        for entry in entries.values():
            if entry != chosen:
                hidden |= _reachable(backbone, entry) - mine
    return drop_nodes(mermaid, hidden)


def pattern_mermaid(pattern) -> str:
    """The compiled graph's Mermaid text; models are not called, so this is cheap."""
    from core.patterns import compile_pattern

    text = compile_pattern(pattern).get_graph().draw_mermaid()
    # Streamlit renders labels as plain text, so the HTML around start/end would show literally
    return text.replace("<p>__start__</p>", "start").replace("<p>__end__</p>", "end")


def checked_path(path: list[str], finished: bool) -> list[str]:
    """The path with the claim check put back where it ran (the runner leaves ``verify`` out of a run's path): before
    each answer review, and last when the run ended on its answer (not on a review that ended it)."""
    out = []
    for node in path:
        if node == REVIEW:
            out.append(VERIFY)
        out.append(node)
    if finished and out and not out[-1].startswith(REVIEW_PREFIX):
        out.append(VERIFY)
    return out


def highlight(mermaid: str, path: list[str], paused_at: str | None = None, finished: bool = True) -> str:
    """Add styles that mark the nodes and edges a run visited (and the node it paused at)."""
    if not path and not paused_at:
        return mermaid
    defined = node_ids(mermaid)
    if mermaid_id(VERIFY) in defined:  # a graph with the shared tail (every pattern's, compiled by the registry)
        path = checked_path(path, finished and not paused_at)
    walk = ["__start__", *path] + (["__end__"] if finished and not paused_at else [])
    lines = mermaid.rstrip("\n").split("\n")
    visited = [mermaid_id(n) for n in dict.fromkeys(walk) if mermaid_id(n) in defined]
    steps = {(mermaid_id(a), mermaid_id(b)) for a, b in zip(walk, walk[1:])}
    if paused_at:
        steps.add((mermaid_id(walk[-1]), mermaid_id(paused_at)))
    links = [m.groups() for line in lines if (m := _EDGE.match(line))]  # linkStyle counts links in order
    extra = [VISITED, PAUSED]
    paused_id = mermaid_id(paused_at) if paused_at else None
    marked = [n for n in visited if n != paused_id]
    if marked:
        extra.append(f"class {','.join(marked)} visited")
    if paused_id and paused_id in defined:
        extra.append(f"class {paused_id} paused")
    used = [str(i) for i, pair in enumerate(links) if pair in steps]
    if used:
        extra.append(f"linkStyle {','.join(used)} {VISITED_LINK}")
    return "\n".join(lines + ["\t" + e for e in extra]) + "\n"


ORIGINAL_ONLY = "classDef original fill:#d9d9d9,stroke:#636363,stroke-width:2px,stroke-dasharray:4 2,color:#222"
FORK_ONLY = "classDef forked fill:#a1d99b,stroke:#238b45,stroke-width:3px,color:#222"
ORIGINAL_LINK = "stroke:#969696,stroke-width:2px,stroke-dasharray:4 2"
FORK_LINK = "stroke:#238b45,stroke-width:3px"


def highlight_pair(mermaid: str, original: list[str], fork: list[str], ended: tuple[bool, bool] = (True, True)) -> str:
    """Two runs on one diagram: what both visited, what only the original did (grey, dashed), only the fork (green).

    ``ended`` says for each run whether it reached the end (a paused or failed run stops on its path)."""
    lines = mermaid.rstrip("\n").split("\n")
    defined = node_ids(mermaid)

    def walk(path: list[str], reached_end: bool) -> tuple[set, set]:
        full = ["__start__", *path] + (["__end__"] if reached_end else [])
        return ({mermaid_id(n) for n in full if mermaid_id(n) in defined},
                {(mermaid_id(a), mermaid_id(b)) for a, b in zip(full, full[1:])})

    (nodes_a, edges_a), (nodes_b, edges_b) = walk(original, ended[0]), walk(fork, ended[1])
    extra = [VISITED, ORIGINAL_ONLY, FORK_ONLY]
    for name, ids in (("visited", nodes_a & nodes_b), ("original", nodes_a - nodes_b), ("forked", nodes_b - nodes_a)):
        if ids:
            extra.append(f"class {','.join(sorted(ids))} {name}")
    links = [m.groups() for line in lines if (m := _EDGE.match(line))]
    for style, wanted in ((VISITED_LINK, edges_a & edges_b), (ORIGINAL_LINK, edges_a - edges_b), (FORK_LINK, edges_b - edges_a)):
        used = [str(i) for i, pair in enumerate(links) if pair in wanted]
        if used:
            extra.append(f"linkStyle {','.join(used)} {style}")
    return "\n".join(lines + ["\t" + e for e in extra]) + "\n"
