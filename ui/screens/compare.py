"""The Compare page: one question through several patterns at once, one column per pattern.

``stream_compare`` runs each pattern in its own worker thread; its merged event stream is consumed
here, in the script thread, so every ``st.*`` call stays in the thread that owns the ScriptRunContext.
A finished comparison is saved by core and shown again from disk, the same way as a reopened one.
"""

from __future__ import annotations

import re
import time

import altair as alt
import pandas as pd
import streamlit as st

from core.config import Settings
from core.patterns import all_patterns, pattern_ids
from core.run.runner import RunInputError, check_question
from core.studio.compare import is_running, list_comparisons, load_comparison, metrics_rows, stream_compare
from core.studio.export import comparison_to_json, comparison_to_markdown
from core.studio.render import plain_markdown, safe_markdown, source_links
from ui.evidence.answer_checks import answer_checks
from ui.evidence.graph_view import graph_diagram
from ui.evidence.sources import sources_panel
from ui.i18n import t, termination_label
from ui.run.live import REDRAW_SECONDS, describe, progress_label
from ui.run.trace_panel import trace_panel
from ui.shell.page_index import page_for, pattern_title
from ui.shell.sidebar import sidebar
from ui.shell.state import bound, ensure_samples

PER_ROW = 3  # columns per row: wider columns keep each trace table readable
SLOW_LLM_CALLS = 20  # a run that may make more calls takes minutes on the embedded model
_HEADING = re.compile(r"^#{1,4}(?=\s)", re.MULTILINE)


def slow_patterns(settings: Settings) -> dict[str, int]:
    """Patterns that may make more than SLOW_LLM_CALLS model calls with these settings -> their bound."""
    bounds = {p.id: p.max_llm_calls(settings) for p in all_patterns()}
    return {pid: n for pid, n in bounds.items() if n > SLOW_LLM_CALLS}


def compare_page() -> None:
    st.set_page_config(page_title=t("compare_title"), page_icon="⚖️", layout="wide")
    settings, _ = sidebar(None)
    st.title(t("compare_title"))
    st.caption(t("compare_intro") + " " + t("no_answer_review_here"))
    if not ensure_samples(settings):
        return
    # the form lives in session state: a refused question or a page switch loses nothing
    slow = slow_patterns(settings)  # pre-selected: the fast ones; the slow ones are named, to add by hand
    form = st.session_state.setdefault("compare", {"question": "", "open": None,
                                                   "patterns": [p for p in pattern_ids() if p not in slow]})
    question = bound(st.text_area, "question", t("question"), store=form, key="cmp_question", height=80)
    patterns = bound(st.multiselect, "patterns", t("patterns"), store=form, key="cmp_patterns",
                     options=pattern_ids(), format_func=pattern_title)
    if slow:
        st.caption(t("slow_patterns", slow=  # md-safe: registry titles and numbers
                     ", ".join(f"{pattern_title(p)} ({t('slow_calls', n=n)})"
                                                     for p, n in slow.items())))
    if st.button(t("compare_run"), key="cmp_run", type="primary", icon="⚖️"):
        problem = input_problem(question, patterns, settings)
        if problem:
            st.error(problem, icon="⚠️")  # md-safe: input_problem's own messages
        else:
            try:
                _run_live(question, patterns, settings, form)
            except RunInputError as exc:  # too many runs in flight: core's line names the limit and its setting
                st.error(plain_markdown(str(exc)), icon="⚠️")
                return
            st.rerun()
    _past(settings, form)


def input_problem(question: str, patterns: list[str], settings: Settings) -> str | None:
    """The one thing wrong with the form, or None."""
    if not (question or "").strip():
        return t("empty_question")
    if not patterns:
        return t("no_patterns")
    try:
        check_question(question, settings)
    except RunInputError as exc:  # too long: core's message says the limit
        return str(exc)
    return None


def _grid(patterns: list[str]) -> dict:
    """pattern id -> its column; rows of PER_ROW keep every column the same width."""
    width = min(PER_ROW, len(patterns))
    cells = {}
    for start in range(0, len(patterns), width):
        for pattern_id, column in zip(patterns[start:start + width], st.columns(width, border=True)):
            cells[pattern_id] = column
    return cells


class _LiveColumn:
    """One pattern's column while its run goes: the node and decisions so far, the answer as it streams."""

    def __init__(self, column, pattern_id: str):
        with column:
            st.markdown(f"#### {pattern_title(pattern_id)}")
            self.status = st.status(t("waiting"), expanded=True)
            self.answer = st.empty()
            self.figures = st.empty()
        self.text = ""
        self.streaming = False
        self.drawn = 0.0

    def show(self, event: dict) -> None:
        kind = event["type"]
        if kind == "token":
            if not self.streaming:  # a new generation replaces the last one (Self-RAG regenerates)
                self.text = ""
            self.streaming = True
            self.text += event["text"]
            if time.monotonic() - self.drawn >= REDRAW_SECONDS:  # checking parses the whole text: not on every token
                self.answer.markdown(column_markdown(safe_markdown(self.text)))
                self.drawn = time.monotonic()
            return
        if self.streaming:  # the generation ended: show all of it
            self.answer.markdown(column_markdown(safe_markdown(self.text)))
        self.streaming = False
        if kind == "progress":
            self.status.update(label=progress_label(event), expanded=True)  # md-safe: node, collection id, numbers
        elif kind == "queued":  # more runs than the server runs at once: this column waits its turn
            self.status.update(label=t("queued", place=event["place"], running=event["running"]), expanded=True)  # md-safe: ints
        elif kind == "node":
            self.status.update(label=t("after_node", node=event["node"]), expanded=True)  # md-safe: our node names
            if not event.get("namespace"):
                self.status.markdown(f"✓ `{event['node']}`")  # md-safe: our node names
        elif kind == "trace":
            self.status.markdown(describe(event["event"]))
        elif kind in ("done", "error"):
            self.finish(event["result"])

    def finish(self, result: dict) -> None:
        if result.get("error"):
            self.status.update(label=t("run_failed"), state="error", expanded=False)
            self.answer.error(safe_markdown(result["error"]), icon="⚠️")
        else:
            reason = termination_label(result.get("termination_reason", ""))
            self.status.update(label=t("run_done", reason=reason), state="complete", expanded=False)  # md-safe: our labels
            self.answer.markdown(column_markdown(safe_markdown(result.get("answer") or result.get("termination_message") or "",
                                                               source_links(result))))
        self.figures.caption(run_figures(result))


def _run_live(question: str, patterns: list[str], settings: Settings, form: dict) -> None:
    """Run the comparison, filling each column as events arrive.

    The saved comparison is the open one from its first event on: if the user leaves the page
    mid-run, coming back shows it (still running, or finished) instead of an empty form.
    """
    columns = {pattern_id: _LiveColumn(cell, pattern_id) for pattern_id, cell in _grid(patterns).items()}
    for event in stream_compare(question, patterns, settings):
        if event["type"] in ("comparing", "compared"):
            form["open"] = event["comparison"]["id"]
        else:
            columns[event["pattern"]].show(event)


def column_markdown(answer: str) -> str:
    """An answer for a narrow column: its headings shrink to h5, so a '# title' does not dwarf the column."""
    return _HEADING.sub("#####", answer)


def run_figures(result: dict) -> str:
    return t("run_figures", calls=result.get("llm_calls", 0), tokens=result.get("tokens", 0),
             seconds=round(result.get("ms", 0) / 1000, 2))


def _past(settings: Settings, form: dict) -> None:
    """The selectbox of saved comparisons and the chosen one (the one just run, after a run)."""
    past = list_comparisons(settings)
    if not past:
        return
    labels = {c["id"]: f"{'⏳ ' if c['running'] else ''}{c['date']} · {c['question']} · "
                       f"{len(c['patterns'] or [])} {t('patterns').lower()}" for c in past}
    if form["open"] not in labels:
        form["open"] = None
    st.divider()
    chosen = bound(st.selectbox, "open", t("past_comparisons"), store=form, key="cmp_open", options=list(labels),
                   format_func=labels.get, placeholder=t("choose_comparison"))
    if chosen is None:
        return
    try:
        record = load_comparison(settings, chosen)
    except (KeyError, OSError, ValueError) as exc:  # deleted or half-written meanwhile
        st.error(t("comparison_broken", error=plain_markdown(str(exc))), icon="⚠️")
        return
    comparison_view(record, settings)


def comparison_view(record: dict, settings: Settings) -> None:
    """A finished comparison: a column per pattern, the metrics table, the chart, the exports."""
    st.subheader(safe_markdown(record.get("question", "")))
    st.caption(plain_markdown(f"{record.get('date', '')} · {record.get('id', '')}"))  # read back from a file
    running = is_running(record)
    if running:  # the page that started it was left; its workers still save each run as it ends
        st.info(t("comparison_running"), icon="⏳")
        if st.button(t("refresh"), key="cmp_refresh", icon="🔄"):
            st.rerun()
    results = record.get("results") or {}
    for pattern_id, cell in _grid(list(results)).items():
        with cell:
            _result_column(pattern_id, results[pattern_id], running)
    rows = metrics_rows(record)
    st.markdown(f"**{t('metrics')}**")
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    for cell, chart in zip(st.columns(2), metrics_charts(rows)):
        cell.altair_chart(chart, width="stretch")
    name = f"comparison-{record.get('id', '')}"
    col_json, col_md = st.columns(2)
    col_json.download_button(t("export_json"), comparison_to_json(record, settings), file_name=f"{name}.json",
                             mime="application/json", key="cmp_export_json", on_click="ignore")
    col_md.download_button(t("export_md"), comparison_to_markdown(record, settings), file_name=f"{name}.md",
                           mime="text/markdown", key="cmp_export_md", on_click="ignore")


def _result_column(pattern_id: str, result: dict, running: bool = False) -> None:
    st.markdown(f"#### {pattern_title(pattern_id)}")
    if not result:
        if running:
            st.info(t("still_running"), icon="⏳")
        else:
            st.warning(t("no_result"))
        return
    if result.get("error"):
        st.error(safe_markdown(result["error"]), icon="⚠️")
    else:
        st.markdown(column_markdown(safe_markdown(result.get("answer") or result.get("termination_message") or "",
                                                  source_links(result))))
    answer_checks(result)
    st.caption(run_figures(result))
    page = page_for(pattern_id)
    if page and result.get("thread_id"):  # follow up on this answer: the thread becomes a chat
        st.page_link(page, label=t("continue_chat"), icon="💬", query_params={"thread": result["thread_id"]})
    sources = result.get("sources") or []
    tab_sources, tab_trace, tab_graph = st.tabs([f"{t('cited_sources')} ({len(sources)})", t("trace"), t("graph")])
    with tab_sources:
        sources_panel(sources)
    with tab_trace:
        trace_panel(result)
    with tab_graph:
        graph_diagram(pattern_id, result)


def metrics_charts(rows: list[dict]) -> tuple[alt.Chart, alt.Chart]:
    """Wall time and LLM calls per pattern: two bar charts, each with its own scale."""
    data = pd.DataFrame(rows)

    def bars(field: str, title: str) -> alt.Chart:
        return alt.Chart(data, title=title, height=240).mark_bar().encode(
            x=alt.X("pattern:N", sort=None, title=None, axis=alt.Axis(labelAngle=-40, labelOverlap=False)),
            y=alt.Y(f"{field}:Q", title=None),
            color=alt.Color("pattern:N", legend=None),
            tooltip=["pattern", field],
        )

    return bars("seconds", t("wall_time")), bars("llm_calls", t("llm_calls"))
