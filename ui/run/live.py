"""Show a run while it happens: the node just finished, the decisions so far, the answer streaming.

The runner's events are consumed here, in the script thread: every ``st.*`` call happens in the
thread that owns the ScriptRunContext.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import streamlit as st

from core.run.outcome import outcome
from core.studio.render import plain_markdown, safe_markdown
from ui.i18n import STRINGS, outcome_text, t
from ui.run.trace_panel import cell

REDRAW_SECONDS = 0.2  # a streamed answer is re-checked and redrawn at most this often


def describe(event: dict) -> str:
    """One line for a trace event, worded like the trace table: node, what was decided, about what, and why."""
    parts = [f"**{event.get('node', '?')}**", cell(event, "kind")]
    if event.get("grader"):
        parts.append(f"`{event['grader']}`")
    decided = plain_markdown(" ".join(text for k in ("target", "verdict") if (text := cell(event, k))))
    score = cell(event, "score")
    if decided:
        parts.append(f"{decided} ({score})" if score and score not in decided else decided)
    line = " · ".join(parts)
    if event.get("reason"):  # a model's words: shown as plain text
        line += f" — {plain_markdown(cell(event, 'reason')[:160])}"
    return line


def progress_label(event: dict) -> str:
    """The status label while a long step runs, e.g. a graph extraction counting its chunks."""
    key = f"progress_{event.get('step', '')}"
    return t(key if key in STRINGS else "progress", node=event.get("node", "?"), step=event.get("step", ""),
             subject=event.get("subject", ""), done=event.get("done", 0), total=event.get("total", 0))


class _Pushback:
    """An iterator that can put one item back (the event that ended a token run)."""

    def __init__(self, events: Iterator[dict]):
        self.events = iter(events)
        self.held: list[dict] = []

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        return self.held.pop() if self.held else next(self.events)

    def push(self, item: dict) -> None:
        self.held.append(item)


def _tokens(first: dict, events: _Pushback) -> Iterator[str]:
    """Answer tokens until the first non-token event, which is handed back to the main loop."""
    yield first["text"]
    for event in events:
        if event["type"] != "token":
            events.push(event)
            return
        yield event["text"]


def _stream_answer(tokens: Iterator[str]) -> None:
    """The answer as it streams, made safe as a whole (st.write_stream would render raw Markdown).

    Checking means parsing the whole text, so it is redrawn at most every REDRAW_SECONDS, and at the end.
    """
    slot, text, drawn = st.empty(), "", 0.0
    for token in tokens:
        text += token
        if time.monotonic() - drawn >= REDRAW_SECONDS:
            slot.markdown(safe_markdown(text))
            drawn = time.monotonic()
    slot.markdown(safe_markdown(text))


def run_live(events: Iterator[dict], on_start=None) -> dict | None:
    """Render the events of one run; return the final ``done`` / ``error`` event.

    ``RunInputError`` from the runner (an empty or huge question) propagates to the caller, which
    keeps the question. Each new answer generation replaces the streamed text (Self-RAG regenerates).
    """
    status = st.status(t("running"), expanded=True)
    answer_slot = st.empty()
    stream = _Pushback(events)
    final = None
    generations = 0
    for event in stream:
        kind = event["type"]
        if kind == "start" and on_start:
            on_start(event["thread_id"])
        elif kind == "node":
            status.update(label=t("after_node", node=event["node"]), expanded=True)  # md-safe: our node; None collapses
            if not event.get("namespace"):
                status.markdown(f"✓ `{event['node']}`")  # md-safe: our node names
        elif kind == "trace":
            status.markdown(describe(event["event"]))
        elif kind == "progress":
            status.update(label=progress_label(event), expanded=True)  # md-safe: node, collection id, numbers
        elif kind == "queued":
            status.update(label=t("queued", place=event["place"], running=event["running"]), expanded=True)  # md-safe: ints
        elif kind == "token":
            generations += 1
            with answer_slot.container(key=f"live_answer_{generations}"):  # the key: a hook for browser tests
                _stream_answer(_tokens(event, stream))
        elif kind in ("done", "error"):
            final = event
    result = (final or {}).get("result") or {}
    if result.get("decoding"):  # the sidebar shows the last run's prompt-lookup acceptance
        st.session_state["last_decoding"] = result["decoding"]
    if result.get("error"):
        status.update(label=t("run_failed"), state="error", expanded=False)
    elif result.get("interrupted"):
        status.update(label=t("run_paused"), state="complete", expanded=True)
    else:
        status.update(label=t("run_done", reason=outcome_text(outcome(result))), state="complete", expanded=False)
    return final
