"""The Evaluation page's "Which pattern for my documents?": generate a question set, advise on a pattern."""

from __future__ import annotations

import re
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from core.config import Settings
from core.studio import advise
from core.studio.question_gen import Generated, generate
from core.studio.question_set import (
    QuestionSetError,
    count_problem,
    dump_question_set,
    load_saved_question_set,
    save_question_set,
    saved_question_sets,
)
from core.studio.recommend import markdown_report
from core.studio.render import plain_markdown
from ui.evidence.chart_export import chart_png
from ui.i18n import STRINGS, t
from ui.shell.page_index import page_for, pattern_title

RING = "#d62728"  # the recommended point's ring on the frontier
EDIT_COLUMNS = ["id", "question", "kind", "lang", "facts", "sources", "answerable"]


def generate_section(settings: Settings, kb) -> None:
    """Pick collections and a count, watch the progress (Stop keeps what was written), edit, save, download."""
    st.subheader(t("gen_title"))
    st.caption(t("gen_help"))
    state = st.session_state.setdefault("question_gen", {"done": None, "running": False, "generation": 0})
    if state.get("running"):  # the run that was writing ended without finishing: Stop (or a rerun) cut it short
        state["running"] = False
        state["done"].stopped = True
    left, right = st.columns([3, 1])
    chosen = left.multiselect(t("gen_collections"), kb.names(), key="gen_collections", placeholder=t("choose_options"))
    count = right.number_input(t("gen_count"), min_value=1, max_value=100, value=10, key="gen_count")
    if st.button(t("gen_run"), key="gen_run", icon="✍️"):
        if not chosen:
            st.error(t("gen_none"), icon="⚠️")
        elif count_problem(int(count), settings):  # RAG_MAX_SET_QUESTIONS: before the model is loaded
            st.error(plain_markdown(count_problem(int(count), settings)), icon="⚠️")
        else:
            _write(settings, kb, chosen, int(count), state)
    done: Generated | None = state["done"]
    if done is None:
        return
    summary = done.summary()
    dropped = ", ".join(f"{k} {v}" for k, v in sorted(summary["dropped"].items())) or "-"
    st.caption(t("gen_done", kept=int(summary["kept"]), attempts=int(summary["attempts"]),
                 seconds=round(summary["seconds"]), calls=int(summary["model_calls"]),
                 per_kept=plain_markdown(str(summary["calls_per_kept"] or "-")), bound=int(summary["call_bound"]),
                 dropped=plain_markdown(dropped)))
    if done.stopped:
        st.info(t("gen_stopped"), icon="⏹️")
    _edit(settings, kb, done, state.get("generation", 0))


def _write(settings: Settings, kb, chosen: list[str], count: int, state: dict) -> None:
    """Generate in this script run; a click on Stop reruns the page, and the questions kept so far stay."""
    from core.llm.models import get_chat_model

    state["done"], state["running"], state["saved"] = Generated(), True, None
    state["generation"] = state.get("generation", 0) + 1  # a new set gets a new editor: old edits do not carry over
    stop = st.empty()
    stop.button(t("gen_stop"), key="gen_stop", icon="⏹️")  # any click ends this run; what was kept is in state
    bar = st.progress(0.0, text=t("gen_running", kept=0, wanted=int(count)))
    log, lines = st.empty(), []

    def progress(kept: int, wanted: int, line: str, left: float | None) -> None:
        running = t("gen_running", kept=int(kept), wanted=int(wanted))
        bar.progress(min(1.0, kept / wanted),  # md-safe: t() of numbers
                     text=f"{running} · {t('gen_eta', seconds=int(left))}" if left else running)
        lines.append(line)  # one line per question written: kept, or dropped and why (a code block: no Markdown)
        log.code("\n".join(lines[-8:]), language=None, wrap_lines=True)

    try:
        generate(kb, get_chat_model(settings), chosen, count, progress=progress, k=settings.k, into=state["done"])
    except ValueError as exc:  # a collection without chunks
        st.error(plain_markdown(str(exc)), icon="⚠️")
    state["running"] = False
    stop.empty()
    bar.empty()


def _edit(settings: Settings, kb, done: Generated, generation: int) -> None:
    rows = [{**{c: item.get(c) for c in EDIT_COLUMNS}, "facts": " | ".join(item["facts"]),
             "sources": ", ".join(item["sources"])} for item in done.items]
    st.caption(t("gen_table"))
    edited = st.data_editor(pd.DataFrame(rows, columns=EDIT_COLUMNS), num_rows="dynamic", hide_index=True,
                            width="stretch", key=f"gen_editor_{generation}")
    by_id = {item["id"]: item for item in done.items}
    with_chunks = [i for i in done.items if any(p.get("chunk_id") for p in i.get("provenance") or [])]
    if with_chunks:
        pick = st.selectbox(t("gen_chunk"), [i["id"] for i in with_chunks], key="gen_chunk_pick")
        for where in by_id[pick]["provenance"]:
            st.caption(plain_markdown(f"{where['collection']} · {where['file']} · {where['chunk_id']}"))
            st.code(_chunk_text(kb, where), language=None, wrap_lines=True)
    items = _items(edited, by_id)
    text = dump_question_set(items)
    left, right = st.columns(2)
    name = left.text_input(t("gen_set_name"), value="my-questions", key="gen_set_name")
    state = st.session_state["question_gen"]
    if left.button(t("gen_save"), key="gen_save", icon="💾"):
        try:
            state["saved"] = (save_question_set(settings, name, items), text)
        except QuestionSetError as exc:
            st.error(t("gen_invalid", error=plain_markdown(str(exc))), icon="⚠️")
    saved = state.get("saved")
    if saved and saved[1] == text:  # the confirmation outlives the next rerun while the table is what was saved
        st.success(t("gen_saved", file=plain_markdown(saved[0])))
    right.download_button(t("gen_download"), text.encode("utf-8"), "questions.jsonl", "application/jsonl",
                          key="gen_download", icon="⬇️")


def _chunk_text(kb, where: dict) -> str:
    chunks = kb.chunks(where["collection"], source=where["file"] or None, limit=None)
    return next((c.page_content for c in chunks if c.id == where["chunk_id"]), "")


def _items(edited: pd.DataFrame, by_id: dict) -> list[dict]:
    """The edited table as set items: a kept row keeps its provenance, a new row gets an id and kind."""
    items = []
    for n, row in enumerate(edited.to_dict("records"), 1):
        question = _cell_text(row.get("question"))
        if not question:
            continue
        old = by_id.get(_cell_text(row.get("id"))) or {}
        facts = [f.strip() for f in _cell_text(row.get("facts")).split("|") if f.strip()]
        sources = [s.strip() for s in _cell_text(row.get("sources")).split(",") if s.strip()]
        kind = _cell_text(row.get("kind")) or old.get("kind") or "single"
        answerable = row.get("answerable")
        items.append({**old, "id": _cell_text(row.get("id")) or f"e{n:03d}", "question": question, "facts": facts,
                      "sources": sources, "answerable": True if _blank(answerable) else bool(answerable),
                      "kind": kind, "category": kind, "lang": _cell_text(row.get("lang"))})
    return items


def _blank(value) -> bool:
    """An empty cell: a row added in the editor holds None (or NaN) where nothing was typed."""
    return value is None or (isinstance(value, float) and value != value)


def _cell_text(value) -> str:
    return "" if _blank(value) else str(value).strip()


def advise_section(settings: Settings, kb) -> None:
    """Start an advice on a saved set (in the background), then show any advice: progress, recommendation, tables."""
    from core.patterns import pattern_ids

    st.subheader(t("advise_title"))
    st.caption(t("advise_help"))
    sets = saved_question_sets(settings)
    if not sets:
        st.info(t("advise_no_sets"))
    else:
        set_file = st.selectbox(t("advise_set"), sets, key="advise_set")
        items = load_saved_question_set(settings, set_file)
        undescribed = advise.undescribed(kb, items)
        if undescribed:
            st.warning(t("advise_undescribed", names=plain_markdown(", ".join(undescribed))), icon="🏷️")
        budget = st.number_input(t("advise_budget"), min_value=0, max_value=24 * 60, value=0, key="advise_budget")
        estimates = advise.estimate(settings, pattern_ids(), len(items))
        fits, _left = advise.fit_budget(estimates, budget * 60) if budget else (pattern_ids(), [])
        measured = {p: s for p, s in estimates.items() if s is not None}
        st.caption(t("advise_estimates", figures=plain_markdown(", ".join(f"{p} ~{s:.0f} s" for p, s in measured.items())))
                   if measured else t("advise_unmeasured"))
        patterns = st.multiselect(t("patterns"), pattern_ids(), default=fits, format_func=pattern_title,
                                  placeholder=t("choose_options"),
                                  key=f"advise_patterns_{budget}")
        if st.button(t("advise_run"), key="advise_run", type="primary", icon="🧭") and patterns:
            _start_advice(settings, items, patterns, set_file)
    _shown_advice(settings)


def _start_advice(settings: Settings, items: list[dict], patterns: list[str], set_file: str, runs: str = "") -> bool:
    """Start an advice in the background; past RAG_MAX_SET_RUNS one line says so and nothing is written."""
    try:
        st.session_state["advice_id"] = advise.start(settings, items, patterns, set_file, runs=runs)
    except QuestionSetError as exc:
        st.error(plain_markdown(str(exc)), icon="⚠️")
        return False
    return True


def _status(status: str) -> str:
    """An advice's status in the UI language (one written by a newer version: as it is)."""
    key = f"advice_{status}"
    return t(key) if key in STRINGS else str(status)


def _shown_advice(settings: Settings) -> None:
    records = advise.list_advice(settings)
    if not records:
        return
    ids = [r["id"] for r in records]
    labels = {r["id"]: f"{r['date']} · {r.get('set', '?')} · {_status(r['status'])}" for r in records}
    current = st.session_state.get("advice_id")
    advice_id = st.selectbox(t("advise_past"), ids, index=ids.index(current) if current in ids else 0,
                             format_func=labels.get, key="advise_pick")
    record = advise.load_advice(settings, advice_id)
    progress = record.get("progress") or {}
    st.caption(t("advise_status", status=plain_markdown(_status(record["status"]))) + " · "
               + t("advise_progress", done=int(progress.get("done", 0)), total=int(progress.get("total", 0))))
    left, right = st.columns(2)
    if record["status"] == "running":
        left.button(t("refresh"), key="advise_refresh", icon="🔄")
        if right.button(t("gen_stop"), key="advise_stop", icon="⏹️"):
            advise.stop(advice_id)
    elif record["status"] in ("stopped", "interrupted", "failed") and left.button(t("advise_continue"),
                                                                                  key="advise_continue", icon="▶️"):
        if _start_advice(settings, record["items"], record["patterns"], record["set"], record.get("runs", "")):
            st.rerun()
    if record.get("error"):
        st.warning(plain_markdown(record["error"]), icon="⚠️")
    report = record.get("report") or advise.report(
        settings, record["items"], record["patterns"],
        advise.run_store(settings, record["items"], record.get("runs", "")).load(), record["set"])
    _report(report)


def _report(report: dict) -> None:
    rec = report["recommendation"]
    if rec["pattern"]:
        st.success(t("advise_recommended", pattern=pattern_title(rec["pattern"])), icon="🧭")
    for reason in rec["reasons"]:
        st.markdown("- " + plain_markdown(reason))
    with st.expander(t("advise_rule")):
        st.markdown(plain_markdown(rec["rule"]))
    rows = [{"pattern": p, **{k: v for k, v in row.items() if k not in ("kinds", "terminations", "routed")}}
            for p, row in report["patterns"].items()]
    if not rows:
        return
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.subheader(t("advise_frontier"))
    chart = frontier(rows, rec["pattern"])
    st.altair_chart(chart)
    st.subheader(t("advise_questions"))
    table = question_frame(report)
    links = {c: st.column_config.LinkColumn(c, display_text="trace") for c in table.columns if c.endswith(" trace")}
    st.container(key="advise_question_table").dataframe(table, hide_index=True, width="stretch", column_config=links)
    _downloads(report, table, chart)


def _downloads(report: dict, table: pd.DataFrame, chart: alt.LayerChart) -> None:
    """Markdown report, per-question CSV, and the frontier as PNG (rendered on demand: it takes a second)."""
    left, middle, right = st.columns(3)
    left.download_button(t("advise_download_md"), markdown_report(report).encode("utf-8"), "advice.md", "text/markdown",
                         key="advise_md", icon="⬇️")
    middle.download_button(t("advise_download_csv"), table.to_csv(index=False).encode("utf-8"), "advice.csv",
                           "text/csv", key="advise_csv", icon="⬇️")
    made = st.session_state.get("advise_png_made") or {}
    if made.get("digest") != _digest(report):
        if right.button(t("advise_make_png"), key="advise_png_make", icon="🖼️"):
            made = st.session_state["advise_png_made"] = {"digest": _digest(report), "png": chart_png(chart)}
            if made["png"] is None:
                right.caption(t("advise_png_failed"))
    if made.get("digest") == _digest(report) and made.get("png"):
        right.download_button(t("download_png"), made["png"], "advice-frontier.png", "image/png", key="advise_png",
                              icon="⬇️")


def _digest(report: dict) -> str:
    """Which report a rendered PNG belongs to: its set, runs finished and recommendation."""
    return f"{report.get('set_digest')}:{report.get('finished_runs')}:{report['recommendation'].get('pattern')}"


def frontier(rows: list[dict], recommended: str | None) -> alt.LayerChart:
    """Quality against seconds per question, one point per pattern; the recommended one circled."""
    data = pd.DataFrame(rows)[["pattern", "quality", "mean_seconds", "mean_llm_calls"]].dropna(subset=["quality"])
    data["recommended"] = data["pattern"] == recommended
    base = alt.Chart(data, width=600, height=320)
    points = base.mark_point(filled=True, size=90).encode(  # dark2 has no red: only the ring is red
        x=alt.X("mean_seconds:Q", title="seconds per question"), y=alt.Y("quality:Q", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("pattern:N", legend=None, scale=alt.Scale(scheme="dark2")),
        tooltip=["pattern", "quality", "mean_seconds", "mean_llm_calls"])
    ring = base.transform_filter(alt.datum.recommended).mark_point(size=600, strokeWidth=3, color=RING, opacity=1).encode(
        x="mean_seconds:Q", y="quality:Q")
    labels = base.mark_text(align="left", dx=8, dy=-8).encode(x="mean_seconds:Q", y="quality:Q", text="pattern:N")
    return points + ring + labels


def trace_url(pattern: str, thread_id: str) -> str | None:
    """The chat page of the pattern, opened on the run's thread (its trace is under the answer)."""
    page = page_for(pattern)
    if not page or not thread_id:
        return None
    return "/" + re.sub(r"^\d+_", "", Path(page).stem) + f"?thread={thread_id}"


def question_frame(report: dict) -> pd.DataFrame:
    """One row per question: its kind, and per pattern the run's quality and a link to its trace."""
    patterns = list(report["patterns"])
    rows = []
    for q in report["questions"]:
        row = {"id": q["id"], "kind": q["kind"], "question": q["question"]}
        for p in patterns:
            cell = q["runs"].get(p) or {}
            row[p] = cell.get("quality")
            if cell.get("routed"):  # Auto: the kind it read and the pattern it ran for this question
                row[f"{p} ran"] = f"{cell.get('read_kind') or '?'} → {cell['routed']}"
            row[f"{p} trace"] = trace_url(p, cell.get("thread_id", ""))
        rows.append(row)
    return pd.DataFrame(rows)
