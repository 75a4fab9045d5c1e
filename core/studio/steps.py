"""A turn's checkpoints as steps: which node ran, what it wrote, and what may be changed there.

Every super-step of a run leaves a checkpoint (``get_state_history``). A turn is the stretch of the
thread's checkpoint chain from one ``input`` checkpoint to the next. Step 0 is the question arriving;
step N is the checkpoint after the node(s) of super-step N. What a step's node wrote comes from the
task results stored with the checkpoint before it; which of those fields can be changed comes from
the pattern's state schema (``core.studio.step_fields``).
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from core.config import Settings
from core.patterns import compile_pattern, get_pattern
from core.store.checkpoint import get_checkpointer
from core.store.threads import get_registry
from core.studio.step_fields import editable_fields, summarise_documents

WHAT_IF_NODE = "what_if_node"  # checkpoint metadata of a fork's changed step: the node it stands for
WHAT_IF_CHANGES = "what_if_changes"  # ... and the changes, as JSON text


class StepsError(ValueError):
    """The steps asked for do not exist (unknown thread, turn or step); the message says what does."""


def open_graph(settings: Settings, thread_id: str):
    """(pattern, compiled graph on the shared checkpointer) of a registered thread."""
    thread = get_registry(settings).get(thread_id or "")
    if not thread:
        raise StepsError(f"Unknown thread {thread_id!r}: `python -m core threads` lists them.")
    try:
        pattern = get_pattern(thread["pattern"])
    except KeyError as exc:
        raise StepsError(str(exc)) from None
    graph = compile_pattern(pattern, get_checkpointer(settings))
    return pattern, graph


def chain(graph, thread_id: str) -> list:
    """The thread's snapshots from the first to the newest, along parent links from the newest."""
    history = list(graph.get_state_history({"configurable": {"thread_id": thread_id}}))
    if not history:
        return []
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    out, snap = [], history[0]
    while snap is not None:
        out.append(snap)
        parent = (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        snap = by_id.get(parent)
    return out[::-1]


def split_turns(snapshots: list) -> list[list]:
    """Each turn's snapshots, starting at its ``input`` checkpoint (a resumed run stays in its turn)."""
    turns: list[list] = []
    for snap in snapshots:
        if snap.metadata.get("source") == "input" or not turns:
            turns.append([])
        turns[-1].append(snap)
    return turns


def checkpoint_id(snap) -> str:
    return snap.config["configurable"]["checkpoint_id"]


def read_turn(settings: Settings, thread_id: str, turn: int | None = None) -> dict:
    """The raw material of one turn: pattern, graph, its snapshots and its index (default: the last turn)."""
    pattern, graph = open_graph(settings, thread_id)
    turns = split_turns(chain(graph, thread_id))
    if not turns:
        raise StepsError(f"Thread {thread_id} has no recorded steps (its run ended before the graph started).")
    index = len(turns) - 1 if turn is None else turn
    if not 0 <= index < len(turns):
        raise StepsError(f"Thread {thread_id} has {len(turns)} turn(s), numbered 0 to {len(turns) - 1}; got {turn}.")
    return {"pattern": pattern, "graph": graph, "snapshots": turns[index], "turn": index, "turns": len(turns)}


def turn_steps(settings: Settings, thread_id: str, turn: int | None = None) -> dict:
    """One turn as step records (JSON-safe), oldest first; the last may be a pause or a failure."""
    raw = read_turn(settings, thread_id, turn)
    snaps = raw["snapshots"][1:]  # from step 0: the checkpoint after the input was applied
    steps = [step_record(raw["graph"], snaps, n) for n in range(len(snaps))]
    if snaps and snaps[-1].next:  # stopped before the end: a pause, an error, or a server stopped mid-run
        steps.append(_stopped_step(snaps[-1], len(snaps)))
    first = snaps[0].values if snaps else {}
    return {"thread_id": thread_id, "pattern": raw["pattern"].id, "turn": raw["turn"], "turns": raw["turns"],
            "question": first.get("question", ""), "steps": steps}


def step_record(graph, snaps: list, n: int) -> dict:
    """Step ``n``: the node(s) that ran, what they wrote, the trace events, and the editable fields."""
    after = snaps[n]
    before = snaps[n - 1] if n else None
    nodes, wrote = _writes(before, after)
    events = [e for e in wrote.get("trace") or [] if isinstance(e, dict)]
    changed = {k: v for k, v in wrote.items() if k != "trace" and (before is None or before.values.get(k) != v)}
    record = {
        "n": n,
        "node": nodes[0] if len(set(nodes)) == 1 else " + ".join(nodes),
        "nodes": nodes,
        "checkpoint_id": checkpoint_id(after),
        "status": "done",
        "changed_by_user": after.metadata.get("source") == "update",
        "wrote": {k: plain(v) for k, v in changed.items()},
        "events": events,
        "next": list(after.next),
        "editable": {},
        "error": "",
    }
    if n and after.next and len(set(nodes)) == 1:  # a finished run's last step has nothing left to change
        record["editable"] = editable_fields(graph, nodes[0], before, after, wrote)
    return record


def _writes(before, after) -> tuple[list[str], dict]:
    """The node names of the step that led to ``after`` and the fields they wrote (merged)."""
    if after.metadata.get("source") == "update":  # a fork's change: the node it stands for, the fields set
        node = after.metadata.get(WHAT_IF_NODE) or "update"
        fields = json.loads(after.metadata.get(WHAT_IF_CHANGES) or "{}")
        wrote = {k: after.values.get(k) for k in fields if k in after.values}
        trace_before = len((before.values if before else {}).get("trace") or [])
        wrote["trace"] = (after.values.get("trace") or [])[trace_before:]
        return [node], wrote
    if before is None:  # step 0: the question arriving
        return ["__start__"], {"question": after.values.get("question", "")}
    nodes, wrote = [], {}
    for task in before.tasks:
        nodes.append(task.name)
        result = task.result if isinstance(task.result, dict) else {}
        for key, value in result.items():
            if isinstance(value, list) and isinstance(wrote.get(key), list):  # parallel tasks: merged lists
                wrote[key] = wrote[key] + value
            else:
                wrote[key] = value
    return nodes or ["?"], wrote


def step_nodes(snaps: list, n: int) -> list[str]:
    """The node(s) of step ``n`` (cheap: no field specs)."""
    return _writes(snaps[n - 1] if n else None, snaps[n])[0]


def _stopped_step(last, n: int) -> dict:
    """The step a run stopped in: paused at an interrupt, failed with an error, or never finished."""
    nodes = [t.name for t in last.tasks] or list(last.next)
    errors = [str(t.error) for t in last.tasks if getattr(t, "error", None)]
    paused = any(getattr(t, "interrupts", None) for t in last.tasks)
    status = "paused" if paused else "failed" if errors else "stopped"
    return {"n": n, "node": " + ".join(nodes), "nodes": nodes, "checkpoint_id": None, "status": status,
            "changed_by_user": False, "wrote": {}, "events": [], "next": list(last.next), "editable": {},
            "error": "; ".join(errors)}


def plain(value: Any) -> Any:
    """A state value as JSON-safe data for display: documents summarised, messages as role and text."""
    if isinstance(value, Document):
        return summarise_documents([value])[0]
    if isinstance(value, BaseMessage):
        return {"role": value.type, "text": str(value.content)[:300]}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def run_turns(settings: Settings, thread_id: str) -> list[tuple[dict, int | None]]:
    """Each finished (or paused, or failed) run record of a thread with the turn it belongs to.

    Runs and turns are matched in order by question: a run that failed before its graph started has a
    record but no checkpoints, so it has no turn (None).
    """
    runs = [r for r in get_registry(settings).runs(thread_id) if r["status"] != "running"]
    _, graph = open_graph(settings, thread_id)
    questions = [t[1].values.get("question") if len(t) > 1 else None for t in split_turns(chain(graph, thread_id))]
    out, turn = [], -1
    for run in runs:
        found = next((j for j in range(turn + 1, len(questions)) if questions[j] == run["question"]), None)
        if found is not None:
            turn = found
        out.append((run, found))
    return out


def locate_turn(settings: Settings, result: dict) -> int | None:
    """The turn a stored run result belongs to; a result shown from elsewhere (a comparison) is matched
    by question to the thread's last run with it. None when its run left no checkpoints."""
    pairs = run_turns(settings, result.get("thread_id") or "")
    exact = [t for r, t in pairs if r["result"] == result]
    if exact:
        return exact[-1]
    same = [t for r, t in pairs if r["question"] == result.get("question")]
    return same[-1] if same else None
