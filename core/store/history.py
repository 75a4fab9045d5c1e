"""Reading threads back: a thread's turns with their runs, and the threads waiting for a review.

Cheap on long histories: the latest checkpoint is read with one ``get_tuple`` (never the whole
history), and waiting threads come from the registry.
"""

from __future__ import annotations

from core.config import Settings
from core.store.checkpoint import interrupts_of, latest
from core.store.threads import get_registry


def turn_message_id(run_id: int) -> str:
    """The id of a turn's question message in the checkpoint: it names the run that answered it."""
    return f"run-{run_id}"


def thread_history(settings: Settings, thread_id: str) -> list[dict]:
    """The conversation of a thread as turns, rebuilt from the checkpointer (survives restarts).

    Each turn: {"question", "answer", "result", "status", "run_id"}; ``result`` is the stored record of the run
    that answered that question (matched by id, so an abandoned run never shifts the later turns),
    None while it runs. The last turn has ``interrupt`` when the thread waits for a review.
    """
    item = latest(settings, thread_id)
    if item is None:
        return []
    runs = get_registry(settings).runs(thread_id)
    # a fork's runs answer messages copied from its parent thread: their records name those messages
    by_message = {(r["result"] or {}).get("message_id") or turn_message_id(r["id"]): r for r in runs}
    # runs recorded before turns carried their run id: matched in order, as they always were
    legacy = [r for r in runs if r["status"] != "running" and "run_id" not in (r["result"] or {})]
    turns: list[dict] = []
    for message in item.checkpoint["channel_values"].get("messages", []):
        if message.type == "human":
            record = by_message.get(message.id or "")
            if record is None and legacy and not str(message.id or "").startswith("run-"):
                record = legacy.pop(0)
            turns.append({"question": message.content, "answer": "", "run_id": record["id"] if record else None,
                          "status": record["status"] if record else None,
                          "result": record["result"] if record and record["status"] != "running" else None})
        elif message.type == "ai" and turns and not message.tool_calls:
            turns[-1]["answer"] = message.content
    waiting = interrupts_of(item)
    if turns and waiting:
        turns[-1]["interrupt"] = waiting[0]
    return turns


def pending_reviews(settings: Settings) -> list[dict]:
    """Every thread paused at an interrupt, oldest first, with what it waits for."""
    out = []
    for thread in get_registry(settings).list(status="waiting"):
        item = latest(settings, thread["thread_id"])
        waiting = interrupts_of(item)
        if not waiting:
            continue
        values = item.checkpoint["channel_values"]
        out.append({
            "thread_id": thread["thread_id"],
            "pattern": thread["pattern"],
            "title": thread["title"],
            "paused_at": item.checkpoint.get("ts", ""),
            "question": values.get("standalone_question") or values.get("question", ""),
            "interrupt": waiting[0],
        })
    return sorted(out, key=lambda r: r["paused_at"])
