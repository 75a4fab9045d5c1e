"""What if? A run's steps, a form to change what one step decided (or run it again), and the forks beside it."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from core.config import Settings
from core.run.runner import RunInputError
from core.store.fork_store import forks_of
from core.studio.diagram import highlight_pair
from core.studio.fork import ForkError, stream_fork
from core.studio.fork_diff import compare_runs
from core.studio.render import plain_markdown, safe_markdown, source_links
from core.studio.steps import StepsError, locate_turn, turn_steps
from ui.evidence.answer_checks import answer_checks
from ui.evidence.graph_view import mermaid_text
from ui.evidence.sources import source_label
from ui.i18n import t
from ui.run.live import run_live
from ui.shell.page_index import page_for

PER_ROW = 3


def whatif_panel(result: dict, settings: Settings, key: str) -> None:
    """Behind a toggle (reading the checkpoints costs a little): the steps, the fork form, the forks."""
    if not result.get("thread_id") or not st.toggle(t("whatif"), key=f"{key}_whatif", help=t("whatif_help")):
        return
    try:
        turn = locate_turn(settings, result)
        steps = turn_steps(settings, result["thread_id"], turn) if turn is not None else None
    except StepsError as exc:
        st.warning(plain_markdown(str(exc)), icon="⚠️")
        return
    if not steps or not steps["steps"]:
        st.caption(t("wi_no_steps"))
        return
    st.dataframe(steps_frame(steps["steps"]), hide_index=True, width="stretch")
    _form(steps, settings, f"{key}_wi")
    _forks(result, steps, settings, f"{key}_wi")


def steps_frame(steps: list[dict]) -> pd.DataFrame:
    rows = [{t("wi_step"): s["n"], t("wi_node"): ("✎ " if s["changed_by_user"] else "") + s["node"],
             t("wi_wrote"): _wrote(s), t("wi_decided"): _decided(s), t("wi_can_change"): ", ".join(s["editable"])}
            for s in steps]
    return pd.DataFrame(rows)


def _wrote(step: dict) -> str:
    if step["status"] != "done":
        return f"[{step['status']}] {step['error']}".strip()
    parts = []
    for field, value in step["wrote"].items():
        if field in ("messages", "sources", "best", "trace"):
            continue
        if isinstance(value, list) and value and isinstance(value[0], dict) and "id" in value[0]:
            parts.append(f"{field}: {len(value)} ({', '.join(str(d.get('source')) for d in value)})")
        else:
            parts.append(f"{field} = {json.dumps(value, ensure_ascii=False)[:80]}")
    return " · ".join(parts)


def _decided(step: dict) -> str:
    return " · ".join(f"{e.get('grader') or e['kind']}: {e.get('verdict', '')}" for e in step["events"]
                      if e.get("kind") in ("route", "verdict", "rewrite", "error", "info"))


# ---------------------------------------------------------------- the form


def _form(steps: dict, settings: Settings, key: str) -> None:
    by_n = {s["n"]: s for s in steps["steps"]}
    # start on the first decision (a field with known values: a route, a verdict), else the first change
    decisions = [n for n, s in by_n.items() if any("choices" in f for f in s["editable"].values())]
    editable = decisions + [n for n, s in by_n.items() if s["editable"]]
    labels = {n: f"{n} · {s['node']}" + (" ✎" if s["editable"] else "") for n, s in by_n.items()}
    default = list(by_n).index(editable[0]) if editable else 0
    n = st.selectbox(t("wi_pick"), list(by_n), index=default, format_func=labels.get, key=f"{key}_pick")
    step = by_n[n]
    typed = st.text_input(t("wi_thresholds"), value=settings.grader_thresholds, key=f"{key}_thresholds",
                          help=t("wi_thresholds_help"), placeholder="relevance=0.9, crag=0.2:0.7")
    thresholds = typed.strip() if typed.strip() != settings.grader_thresholds.strip() else None  # None: the session's
    with st.form(key=f"{key}_form_{n}"):
        values = {field: _widget(field, spec, f"{key}_{n}_{field}") for field, spec in step["editable"].items()}
        if not step["editable"]:
            st.caption(t("wi_nothing"))
        change = st.form_submit_button(t("wi_fork"), type="primary", icon="🔀", disabled=not step["editable"])
    replay = st.button(t("wi_replay"), help=t("wi_replay_help"), key=f"{key}_replay_{n}", icon="🔁")
    if not (change or replay):
        return
    changes = {} if replay else {f: v for f, v in values.items() if v != _shown_value(step["editable"][f])}
    if change and not changes and thresholds is None:
        st.warning(t("wi_unchanged"), icon="⚠️")
        return
    try:
        events = stream_fork(settings, steps["thread_id"], n, changes, turn=steps["turn"], thresholds=thresholds)
    except ForkError as exc:
        st.error(plain_markdown(str(exc)), icon="⚠️")
        return
    try:
        run_live(events)
    except RunInputError as exc:  # another run of this visitor took the last place meanwhile
        st.error(plain_markdown(str(exc)), icon="⚠️")
        return
    st.rerun()


def _shown_value(spec: dict):
    """The current value in the form's own terms (what the widget starts with)."""
    if spec["kind"] == "tool_calls":
        return _calls_text(spec["value"])
    return spec["value"]


def _calls_text(calls: list[dict]) -> str:
    return json.dumps([{"name": c["name"], "args": c["args"]} for c in calls], ensure_ascii=False, indent=1)


def _widget(field: str, spec: dict, key: str):
    kind, value, choices = spec["kind"], spec["value"], spec.get("choices")
    if kind in ("text", "number") and choices:
        index = choices.index(value) if value in choices else None
        return st.radio(field, choices, index=index, horizontal=True, key=key)  # md-safe: a state field name of ours
    if kind == "text":
        widget = st.text_area if len(str(value)) > 60 else st.text_input
        return widget(field, value=str(value), key=key)  # md-safe: a state field name of ours
    if kind == "number":
        return int(st.number_input(field, min_value=0, step=1, value=int(value or 0), key=key))  # md-safe: field name
    if kind == "texts":
        if choices:
            return st.multiselect(field, choices, default=[v for v in value if v in choices], key=key,  # md-safe: field
                                  placeholder=t("choose_options"))
        text = st.text_input(field, value=", ".join(value), key=key)  # md-safe: a state field name of ours
        return [part.strip() for part in text.split(",") if part.strip()]
    if kind == "documents":
        st.markdown(f"**{field}**")  # md-safe: a state field name of ours
        kept = []
        for i, doc in enumerate(spec["candidates"], 1):
            score = f" · {doc['score']:.3f}" if isinstance(doc.get("score"), (int, float)) else ""
            # title, file name and text come from the document: shown as written, never as Markdown
            label = plain_markdown(f"[{i}] {doc.get('title') or doc['source']} — {doc['source']}")
            if st.checkbox(f"{t('wi_keep')}: {label}{score}", value=doc["id"] in value, key=f"{key}_{i}"):  # md-safe: plain
                kept.append(doc["id"])
            st.caption(plain_markdown(" ".join(str(doc.get("text", "")).split())[:200] + " …"))
        return kept
    return st.text_area(field, value=_calls_text(value), key=key, help=t("wi_calls_help"))  # md-safe: field (tool calls)


# ---------------------------------------------------------------- the forks beside the original


def _forks(result: dict, steps: dict, settings: Settings, key: str) -> None:
    forks = forks_of(settings, steps["thread_id"], steps["turn"])
    if not forks:
        return
    st.markdown(f"**{t('wi_forks')}**")
    entries = [None, *forks]
    width = min(PER_ROW, len(entries))  # every row as wide as the first: columns keep one width
    for start in range(0, len(entries), width):
        row = entries[start:start + width]
        for entry, column in zip(row, st.columns(width, border=True)):
            with column:
                _column(result, entry, steps["pattern"])
    done = [f for f in forks if f["result"]]
    if done:
        labels = {f["thread_id"]: _title(f) for f in done}
        chosen = st.selectbox(t("wi_graph_of"), list(labels), index=len(done) - 1, format_func=labels.get,
                              key=f"{key}_graph") if len(done) > 1 else done[0]["thread_id"]
        other = next(f["result"] for f in done if f["thread_id"] == chosen)
        st.caption(t("wi_graph"))
        st.mermaid_chart(highlight_pair(mermaid_text(steps["pattern"]), result.get("path") or [], other.get("path") or [],
                                        ended=(_ended(result), _ended(other))), alt=f"{steps['pattern']} what-if graph")


def _ended(result: dict) -> bool:
    return not result.get("error") and not result.get("interrupted")


def _title(fork: dict) -> str:
    origin = fork["forked_from"]
    return t("wi_replay_at" if origin["replay"] else "wi_fork_at", step=origin["step"], node=origin["node"])


def _column(original: dict, fork: dict | None, pattern: str) -> None:
    """One run: the original (fork None) or a fork, with how it differs from the original."""
    run = original if fork is None else fork["result"]
    st.markdown(f"##### {t('wi_original') if fork is None else _title(fork)}")  # md-safe: step number, our node
    if fork is not None:
        changes = fork["forked_from"]["changes"]
        if changes:
            shown = ", ".join(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in changes.items())
            st.caption(f"{t('wi_changed')}: {plain_markdown(shown)}")  # a visitor's edit, seen by every later viewer
        if "thresholds" in fork["forked_from"]:  # the fork's graders decided with these
            st.caption(f"{t('wi_with_thresholds')}: {plain_markdown(fork['forked_from']['thresholds'] or '–')}")
        if not run:
            st.caption(t("wi_running"))
            return
    diff = compare_runs(original, run)
    if fork is not None and fork["forked_from"]["replay"]:
        same = diff["same"]
        st.badge(t("wi_same" if same else "wi_differs"), icon="✅" if same else "🎲", color="green" if same else "orange")
    answer_checks(run)
    st.markdown(safe_markdown(run.get("answer") or run.get("error") or run.get("termination_message") or "",
                              source_links(run)))  # model text: no images, links only to the run's sources
    cut = diff["path"]["diverges_at"] if fork is not None else len(run.get("path") or [])
    st.markdown(" → ".join(f"**`{n}`**" if i >= cut else f"`{n}`"  # md-safe: node names of our graphs
                           for i, n in enumerate(run.get("path") or [])))
    figures = "wi_figures" if fork is None else "wi_after_fork"
    st.caption(t(figures, calls=run.get("llm_calls", 0), tokens=run.get("tokens", 0),  # md-safe: numbers
                 seconds=round(run.get("ms", 0) / 1000, 2)))
    for src in run.get("sources") or []:  # a web page's title and URL, a file's name: as written
        st.caption(source_label(src))
    if fork is None:
        return
    if diff["decisions"]:
        st.markdown(f"**{t('wi_diff')}**")
        rows = [{"decision": " · ".join(str(r[k]) for k in ("node", "grader", "target") if r[k]),
                 "original": r["original"], "fork": r["fork"]} for r in diff["decisions"]]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    else:
        st.caption(t("wi_no_diff"))
    page = page_for(pattern)
    if page:
        st.page_link(page, label=t("wi_open"), icon="🔀", query_params={"thread": fork["thread_id"]})
