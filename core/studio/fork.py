"""What if? Fork a run at one of its steps, change what that step decided, and run on; or replay it.

A fork never touches the original thread. Its checkpoint chain up to the fork point is copied into a
new thread (origin ``fork``, with a record pointing at its parent), the change is written there with
``update_state(..., as_node=<the step's node>)`` and the graph continues from it through the runner,
so a fork streams, pauses for review, fails and is stored exactly like any run. A fork of a fork is
the same operation on the fork's thread.
"""

from __future__ import annotations

import json
import typing
import uuid
from collections.abc import Iterator

from core.config import Settings
from core.llm.thresholds import parse_overrides
from core.patterns.tools import with_calls
from core.run.runner import room_problem, stream_run
from core.runtime.context import RunContext, make_context, with_run
from core.runtime.trace import event
from core.store.checkpoint import get_checkpointer
from core.store.fork_store import ForkStore
from core.store.history import turn_message_id
from core.store.threads import get_registry
from core.studio.step_fields import FieldError, coerce, doc_id, schema_fields
from core.studio.steps import (
    WHAT_IF_CHANGES,
    WHAT_IF_NODE,
    StepsError,
    checkpoint_id,
    plain,
    read_turn,
    run_turns,
    step_nodes,
    step_record,
)


class ForkError(ValueError):
    """A fork that cannot be made as asked; the message says what can be done instead."""


def stream_fork(settings: Settings, thread_id: str, step: int, changes: dict | None = None, turn: int | None = None,
                ctx: RunContext | None = None, thresholds: str | None = None) -> Iterator[dict]:
    """Fork ``thread_id``'s turn at ``step`` with ``changes`` ({field: value}); none = replay from that step.

    ``thresholds`` ("relevance=0.9,crag=0.2:0.7", as RAG_GRADER_THRESHOLDS) become the fork run's
    ``grader_thresholds``: its graders decide with them from the fork point on. None keeps the settings' own.
    Returns the runner's events (``start`` … ``done`` / ``error``); the result carries ``forked_from``.
    Not a generator: the fork is checked and its thread written on the call, so ``ForkError`` comes before
    any event (and before anything is written).
    """
    if thresholds is not None:
        try:
            parse_overrides(thresholds)
        except ValueError as exc:
            raise ForkError(f"Thresholds: {exc}") from None
        thresholds = thresholds.strip()
        settings = settings.with_(grader_thresholds=thresholds)
    problem = room_problem(settings)  # before the fork's thread is written: a refused fork leaves nothing behind
    if problem:
        raise ForkError(problem)
    registry = get_registry(settings)
    parent = registry.get(thread_id or "")
    if parent and parent["status"] == "running":
        raise ForkError(f"Thread {thread_id} is still running: fork it when the run has finished or paused.")
    try:
        raw = read_turn(settings, thread_id, turn)
    except StepsError as exc:
        raise ForkError(str(exc)) from None
    graph, snaps = raw["graph"], raw["snapshots"][1:]
    plan = _plan(graph, snaps, step, changes or {}, settings.max_question_chars)
    question = snaps[0].values.get("question", "")
    new_id = uuid.uuid4().hex[:12]
    forked_from = {"thread": thread_id, "turn": raw["turn"], "step": step, "node": plan["node"],
                   "checkpoint_id": checkpoint_id(plan["base"]), "changes": plan["shown"],
                   "replay": not plan["update"] and thresholds is None,
                   **({"thresholds": thresholds} if thresholds is not None else {})}
    try:
        copied = _copy_thread(settings, graph, thread_id, new_id, plan["base"])
        runs_before = _copy_runs(settings, thread_id, new_id, raw["turn"], raw["pattern"].id, question)
        if plan["update"]:
            _apply(graph, new_id, plan, reading_context(settings))
    except Exception:  # leave nothing half-made behind
        registry.discard(new_id, get_checkpointer(settings))
        raise
    ForkStore.of(settings).add(new_id, forked_from, runs_before, copied)
    return stream_run(raw["pattern"].id, question, settings, thread_id=new_id, ctx=ctx, origin="fork",
                      continue_from={"path": plan["path"], "forked_from": forked_from,
                                     "message_id": _turn_message(plan["base"])})


def _turn_message(snapshot) -> str | None:
    """The id of the forked turn's question message (copied from the parent): the fork's run answers it."""
    humans = [m for m in snapshot.values.get("messages", []) if getattr(m, "type", "") == "human"]
    return humans[-1].id if humans else None


def fork(settings: Settings, thread_id: str, step: int, changes: dict | None = None, **kwargs) -> dict:
    """Fork and run to the end (or the next pause); the result dict, with ``forked_from``."""
    result: dict = {}
    for item in stream_fork(settings, thread_id, step, changes, **kwargs):
        if item["type"] in ("done", "error"):
            result = item["result"]
    return result


# ---------------------------------------------------------------- planning the fork


def _plan(graph, snaps: list, step: int, changes: dict, max_chars: int) -> dict:
    """Where the fork starts (base checkpoint), what it writes there, and the path up to it."""
    if not snaps:
        raise ForkError("This turn recorded no steps: there is nothing to fork.")
    stopped = bool(snaps[-1].next)  # paused, failed, or cut off: one more step, the one it stopped in
    last = len(snaps) if stopped else len(snaps) - 1
    if not 0 <= step <= last:
        raise ForkError(f"This turn has steps 0 to {last}; got step {step}. `python -m core steps THREAD` lists them.")

    def path_through(k: int) -> list[str]:
        return [n for s in range(1, k + 1) for n in step_nodes(snaps, s)]

    if not changes:  # replay: run the step's node(s) again, from the checkpoint before it
        if step == len(snaps):
            return {"base": snaps[-1], "node": " + ".join(snaps[-1].next), "update": {}, "shown": {},
                    "path": path_through(step - 1)}
        return {"base": snaps[max(step - 1, 0)], "node": " + ".join(step_nodes(snaps, step)), "update": {},
                "shown": {}, "path": path_through(step - 1)}
    if step == len(snaps):
        raise ForkError(f"Step {step} did not finish ({' + '.join(snaps[-1].next)}): nothing it wrote can be changed. "
                        "Replay it (no changes) or change an earlier step.")
    record = step_record(graph, snaps, step)
    editable = record["editable"]
    schema = schema_fields(graph)
    update, shown = {}, {}
    for field, raw in changes.items():
        if field not in schema:
            raise ForkError(f"The {graph.name} state has no field {field!r}. " + _offer(record, graph, snaps))
        if field not in editable:
            raise ForkError(f"{field!r} cannot be changed at step {step} ({record['node']}). "
                            + _offer(record, graph, snaps, field))
        try:
            value = coerce(field, editable[field], raw, snaps[step].values, snaps[step - 1].values, max_chars)
        except FieldError as exc:
            raise ForkError(f"Step {step} ({record['node']}): {exc}") from None
        if plain(value) == plain(snaps[step].values.get(field)):
            continue
        update[field] = value
        shown[field] = _shown(value)
    if not update:
        raise ForkError(f"Nothing changes at step {step}: every value is what the run already had. "
                        "To run the same step again, replay it (no changes).")
    update["trace"] = [event(record["node"], "info", grader="what_if", target=field, verdict=_text(shown[field]),
                             reason=f"changed by the user; was {_text(_shown(snaps[step].values.get(field)))}")
                       for field in shown]
    update.update(_synced_messages(graph, snaps[step].values, update))
    return {"base": snaps[step], "node": record["node"], "update": update, "shown": shown, "path": path_through(step)}


def _offer(record: dict, graph, snaps: list, field: str | None = None) -> str:
    """What can be changed at this step, and where else ``field`` can be."""
    here = ", ".join(record["editable"]) or "nothing"
    text = f"At step {record['n']} ({record['node']}) you can change: {here}."
    if field:
        elsewhere = [f"{s} ({r['node']})" for s in range(1, len(snaps))
                     if field in (r := step_record(graph, snaps, s))["editable"]]
        if elsewhere:
            text += f" {field!r} can be changed at step(s) {', '.join(elsewhere)}."
    return text


def _shown(value):
    """A change as plain data: document ids, tool calls without their ids."""
    if isinstance(value, list) and value and all(hasattr(d, "page_content") for d in value):
        return [doc_id(d) for d in value]
    if isinstance(value, list) and value and all(isinstance(c, dict) and "args" in c for c in value):
        return [{"name": c["name"], "args": c["args"]} for c in value]
    return plain(value)


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _synced_messages(graph, values: dict, update: dict) -> dict:
    """Edited tool calls also change the model message that asked for them (native tool calling)."""
    out = {}
    calls = next((v for v in update.values() if isinstance(v, list) and v and all(
        isinstance(c, dict) and "args" in c and "id" in c for c in v)), None)
    if not calls:
        return out
    ids = {c["id"] for c in calls}
    for field, annotation in schema_fields(graph).items():
        messages = values.get(field)
        if field in update or typing.get_origin(annotation) is typing.Annotated or not isinstance(messages, list) \
                or not messages:  # a reducer would append the message instead of replacing it
            continue
        last = messages[-1]
        if getattr(last, "type", "") == "ai" and {c.get("id") for c in getattr(last, "tool_calls", [])} & ids:
            out[field] = messages[:-1] + [with_calls(last, calls)]
    return out


# ---------------------------------------------------------------- writing the fork's thread


def _copy_thread(settings: Settings, graph, source: str, target: str, base) -> int:
    """Copy the chain of top-level checkpoints up to ``base`` into ``target``; base's own writes stay behind
    (the tasks after it must run again in the fork). Returns the number of checkpoints copied."""
    saver = get_checkpointer(settings)
    tuples = {t.config["configurable"]["checkpoint_id"]: t
              for t in saver.list({"configurable": {"thread_id": source, "checkpoint_ns": ""}})}
    line, cid = [], checkpoint_id(base)
    while cid:  # from the base back to the thread's first checkpoint
        item = tuples[cid]
        line.append(item)
        cid = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    for item in reversed(line):
        parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        conf = {"configurable": {"thread_id": target, "checkpoint_ns": "", "checkpoint_id": parent}}
        # every channel as new: a saver that stores channel blobs separately (Postgres) then copies them all
        saved = saver.put(conf, item.checkpoint, item.metadata, dict(item.checkpoint.get("channel_versions", {})))
        if item is line[0]:
            continue  # the base: its tasks run again in the fork
        by_task: dict[str, list] = {}
        for task_id, channel, value in item.pending_writes or []:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            saver.put_writes(saved, writes, task_id)
    return len(line)


def _copy_runs(settings: Settings, source: str, target: str, turn: int, pattern: str, question: str) -> int:
    """Register the fork's thread with the runs of the turns before the forked one (its conversation so far)."""
    registry = get_registry(settings)
    registry.touch(target, pattern, question, "done", origin="fork")
    earlier = [r for r, t in run_turns(settings, source) if t is not None and t < turn]
    for run in earlier:
        run_id = registry.begin_turn(target, pattern, run["question"], origin="fork")
        message_id = (run["result"] or {}).get("message_id") or turn_message_id(run["id"])
        registry.finish_run(run_id, run["status"], {**(run["result"] or {}), "thread_id": target,
                                                    "run_id": run_id, "message_id": message_id})
    return len(earlier)


def reading_context(settings: Settings) -> RunContext:
    """The run context a fork's routers read while its change is written (their budgets: the settings');
    no model is called, none needs a key."""
    return make_context(settings.with_(provider="embedded", grader_model=""))


def _apply(graph, thread_id: str, plan: dict, ctx: RunContext) -> None:
    """Write the change as the step's node, at the copied base checkpoint; check the graph goes on from it.

    The node's routers run as the change is written (which node comes next): they read ``ctx``.
    """
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id(plan["base"])},
              "metadata": {WHAT_IF_NODE: plan["node"], WHAT_IF_CHANGES: json.dumps(plan["shown"], ensure_ascii=False)}}
    saved = graph.update_state(with_run(config, ctx), plan["update"], as_node=plan["node"])
    if not graph.get_state(saved).next:
        raise ForkError(f"After this change at {plan['node']} the graph has nowhere to go: nothing would run.")
