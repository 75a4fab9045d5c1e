"""The Evaluation page: saved evaluation reports as tables and charts, and a form to run a new one."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from core.config import Settings
from core.patterns import pattern_ids
from core.studio.evaluate import evaluate, save, saved_reports
from core.studio.question_set import (
    BUILTIN,
    QuestionSetError,
    load_question_set,
    parse_question_set,
    runs_problem,
    spread,
    unknown_sources,
)
from core.studio.render import plain_markdown
from ui.evidence.chart_export import chart_png
from ui.i18n import t
from ui.shell.page_index import pattern_title
from ui.shell.sidebar import sidebar
from ui.shell.state import bound, ensure_samples

SUMMARY_KEYS = ("questions", "route_accuracy", "source_hit_rate", "key_fact_rate", "coverage", "faithfulness",
                "correct_decline_rate",
                "answered_rate", "language_match_rate", "step_parse_rate", "mean_llm_calls", "mean_tokens",
                "mean_seconds", "errors", "kind_accuracy")
CHART_KEYS = ("key_fact_rate", "faithfulness", "route_accuracy")
SCORES = ("key_fact_rate", "coverage", "faithfulness", "route_accuracy", "source_hit_rate", "correct_decline_rate",
          "answered_rate", "language_match_rate", "step_parse_rate", "kind_accuracy")
COSTS = ("mean_llm_calls", "mean_tokens", "mean_seconds")
ITEM_COLUMNS = ("id", "category", "route_ok", "source_hit", "fact_rate", "faithfulness", "claims_unsupported",
                "declined_ok", "answered", "language_ok",
                "llm_calls", "tokens", "ms", "termination_reason", "searched", "read_kind", "routed", "error", "answer")
SHOWN_FIRST = 5  # reports selected when the page opens, newest first


def evaluation_page() -> None:
    st.set_page_config(page_title=t("eval_title"), page_icon="📊", layout="wide")
    settings, _ = sidebar(None)
    st.title(t("eval_title"))
    st.caption(t("eval_intro") + " " + t("no_answer_review_here"))
    st.info(t("eval_demo"), icon="ℹ️")
    state = st.session_state.setdefault("evaluation", {"reports": None})
    saved = st.session_state.pop("eval_saved", None)
    if saved:
        st.success(t("eval_saved", file=plain_markdown(str(saved))))
    reports = saved_reports(settings)
    if reports:
        _reports(reports, state)
    else:
        st.info(t("no_reports"))
    _start(settings, state)
    _which_pattern(settings)


def _which_pattern(settings: Settings) -> None:
    """Generate a question set from the collections, and advise on a pattern (ui.screens.advise)."""
    from core.knowledge.base import KnowledgeBase
    from ui.screens.advise import advise_section, generate_section

    st.divider()
    try:
        kb = KnowledgeBase(settings)
    except ValueError as exc:  # e.g. OpenAI embeddings without a key
        st.error(plain_markdown(str(exc)), icon="⚠️")
        return
    generate_section(settings, kb)
    st.divider()
    advise_section(settings, kb)


def report_labels(reports: list[dict]) -> dict[str, str]:
    """file -> a short label (date, provider/model); a repeated label gets a number."""
    labels: dict[str, str] = {}
    for report in reversed(reports):  # oldest first, so the numbering follows time
        label = (f"{report.get('date', '?')} · {report.get('set', 'builtin.jsonl')} · "
                 f"{report.get('provider', '?')}/{report.get('model', '?')}")
        n = sum(1 for seen in labels.values() if seen == label or seen.startswith(label + " #"))
        labels[report["file"]] = f"{label} #{n + 1}" if n else label
    return {r["file"]: labels[r["file"]] for r in reports}


def summary_frame(reports: list[dict], labels: dict[str, str]) -> pd.DataFrame:
    """One row per (report, pattern) with its summary metrics."""
    rows = [{"evaluation": labels[r["file"]], "set": r.get("set", "builtin.jsonl"), "provider": r.get("provider"),
             "model": r.get("model"), "pattern": name, **{key: data["summary"].get(key) for key in SUMMARY_KEYS}}
            for r in reports for name, data in (r.get("patterns") or {}).items()]
    return pd.DataFrame(rows, columns=["evaluation", "set", "provider", "model", "pattern", *SUMMARY_KEYS])


def items_frame(items: list[dict]) -> pd.DataFrame:
    """Per-question scores; the searched stores become text (Arrow wants one type per column)."""
    rows = [{**{c: item.get(c) for c in ITEM_COLUMNS}, "searched": ", ".join(item.get("searched") or [])}
            for item in items]
    return pd.DataFrame(rows, columns=list(ITEM_COLUMNS))


def scores_chart(summary: pd.DataFrame) -> alt.FacetChart:
    """Key-fact rate and route accuracy per pattern, one bar per selected evaluation."""
    long = summary.melt(id_vars=["evaluation", "pattern"], value_vars=list(CHART_KEYS), var_name="metric").dropna()
    return alt.Chart(long, width=320, height=220).mark_bar().encode(
        x=alt.X("pattern:N", sort=None, title=None, axis=alt.Axis(labelAngle=-40, labelOverlap=False)),
        xOffset="evaluation:N",
        y=alt.Y("value:Q", scale=alt.Scale(domain=[0, 1]), title=None),
        color=alt.Color("evaluation:N", legend=alt.Legend(orient="bottom", title=None, labelLimit=400)),
        tooltip=["evaluation", "pattern", "metric", alt.Tooltip("value:Q", format=".2f")],
    ).facet(column=alt.Column("metric:N", title=None, sort=list(CHART_KEYS)))


def frontier_chart(summary: pd.DataFrame, score: str, cost: str) -> alt.Chart:
    """Each pattern's score against its cost per question: the quality/cost frontier, labelled with set and model."""
    runs = sorted({f"{r.set} · {r.provider}/{r.model}" for r in summary.itertuples()})
    data = summary.dropna(subset=[score, cost])
    base = alt.Chart(data, width=640, height=340)
    points = base.mark_point(size=90, filled=True).encode(
        x=alt.X(f"{cost}:Q", title=cost), y=alt.Y(f"{score}:Q", scale=alt.Scale(domain=[0, 1]), title=score),
        color=alt.Color("pattern:N", legend=alt.Legend(orient="right")),
        shape=alt.Shape("evaluation:N", legend=alt.Legend(orient="bottom", labelLimit=500, title=None)),
        tooltip=["evaluation", "set", "provider", "model", "pattern", alt.Tooltip(f"{score}:Q", format=".2f"),
                 alt.Tooltip(f"{cost}:Q", format=".2f")])
    labels = base.mark_text(align="left", dx=7, dy=-7, fontSize=11).encode(
        x=f"{cost}:Q", y=f"{score}:Q", text="pattern:N")
    return (points + labels).properties(title=alt.TitleParams(f"{score} vs {cost}", subtitle=runs or ["-"], anchor="start"))


def _frontier(summary: pd.DataFrame) -> None:
    st.subheader(t("frontier"))
    st.caption(t("frontier_help"))
    left, right = st.columns(2)
    score = left.selectbox(t("score_axis"), SCORES, key="eval_score_axis")
    cost = right.selectbox(t("cost_axis"), COSTS, key="eval_cost_axis")
    chart = frontier_chart(summary, score, cost)
    st.altair_chart(chart)
    left, right = st.columns(2)
    left.download_button(t("download_csv"), summary.to_csv(index=False).encode("utf-8"), "evaluation-summary.csv",
                         "text/csv", key="eval_csv", icon="⬇️")
    if right.button(t("download_png"), key="eval_png_make"):
        st.session_state["eval_png_made"] = chart_png(chart)  # not "eval_png": that is the download button's key
    if st.session_state.get("eval_png_made"):
        right.download_button(t("download_png"), st.session_state["eval_png_made"], f"evaluation-{score}-{cost}.png",
                              "image/png", key="eval_png", icon="🖼️")


def _reports(reports: list[dict], state: dict) -> None:
    labels = report_labels(reports)
    files = list(labels)
    if state["reports"] is None:
        state["reports"] = files[:SHOWN_FIRST]
    state["reports"] = [f for f in state["reports"] if f in labels]  # a deleted file drops out
    chosen = bound(st.multiselect, "reports", t("reports"), store=state, key="eval_reports", options=files,
                   format_func=labels.get)
    if not chosen:
        st.warning(t("choose_reports"))
        return
    selected = [r for r in reports if r["file"] in chosen]
    summary = summary_frame(selected, labels)
    st.subheader(t("eval_summary"))
    st.dataframe(summary, hide_index=True, width="stretch")
    _frontier(summary)
    st.subheader(t("eval_chart"))
    st.altair_chart(scores_chart(summary), alt=t("eval_chart"))
    st.subheader(t("drill_down"))
    left, right = st.columns(2)
    file = left.selectbox(t("report"), chosen, format_func=labels.get, key="eval_drill_report")
    report = next(r for r in selected if r["file"] == file)
    names = list(report.get("patterns") or {})
    if not names:
        return
    pattern = right.selectbox(t("pattern"), names, format_func=pattern_title, key=f"eval_drill_pattern_{file}")
    data = report["patterns"][pattern]
    terminations = data["summary"].get("terminations") or {}
    st.caption(f"{t('terminations')}: " + plain_markdown(", ".join(f"{k} {v}" for k, v in sorted(terminations.items()))))
    st.dataframe(items_frame(data["items"]), hide_index=True, width="stretch")


def _question_set() -> tuple[str, list[dict]] | None:
    """The built-in set, or an uploaded JSONL set (checked line by line); None after a clear error."""
    upload = st.file_uploader(t("upload_set"), type=["jsonl", "json", "txt"], key="eval_set_file",
                              help=t("upload_set_help"))
    if upload is None:
        st.caption(f"{t('question_set')}: {t('builtin_set')}")
        return BUILTIN.name, load_question_set(BUILTIN)
    try:
        text = upload.getvalue().decode("utf-8-sig")
        items = parse_question_set(text, upload.name)
    except UnicodeDecodeError:
        st.error(f"{plain_markdown(upload.name)}: not UTF-8 text", icon="⚠️")
        return None
    except QuestionSetError as exc:
        st.error(plain_markdown(str(exc)), icon="⚠️")
        return None
    st.caption(f"{t('question_set')}: {plain_markdown(upload.name)} · {len(items)}")
    return upload.name, items


def _timing(settings: Settings) -> str:
    """What a question costs per pattern on this model, as measured by saved runs (never a fixed promise)."""
    from core.studio.advise import measured_seconds

    measured = measured_seconds(settings)["per_pattern"]
    if not measured:
        return t("advise_unmeasured")
    return t("eval_timing", figures=plain_markdown(", ".join(f"{p} ~{s:.0f} s" for p, s in measured.items())))


def _start(settings: Settings, state: dict) -> None:
    """A small form that runs a question set (or part of it) and saves the report."""
    st.subheader(t("eval_start"))
    st.caption(t("eval_start_help", timing=_timing(settings)))  # md-safe: _timing is t() of plain_markdown figures
    chosen_set = _question_set()
    if chosen_set is None:
        return
    set_name, items = chosen_set
    from core.knowledge.base import KnowledgeBase

    try:
        missing = unknown_sources(items, KnowledgeBase(settings).names())
    except ValueError:  # e.g. OpenAI embeddings without a key: the run itself will say so
        missing = []
    if missing:
        st.warning(t("set_unknown_sources", names=plain_markdown(", ".join(missing))))
    categories = sorted({item["category"] for item in items})
    with st.form("eval_form", enter_to_submit=False):  # only the button starts a run (Enter in N did too)
        patterns = st.multiselect(t("patterns"), pattern_ids(), default=pattern_ids()[:1], format_func=pattern_title,
                                  placeholder=t("choose_options"),
                                  key="eval_patterns")
        left, right = st.columns(2)
        limit = left.number_input(t("eval_limit"), min_value=1, max_value=len(items), value=min(5, len(items)),
                                  key=f"eval_limit_{set_name}")
        category = right.selectbox(t("category"), ["", *categories], key=f"eval_category_{set_name}",
                                   format_func=lambda c: c or t("all_categories"))
        submitted = st.form_submit_button(t("eval_run"), type="primary", icon="▶️")
    if not submitted:
        return
    if not patterns:
        st.error(t("no_patterns"), icon="⚠️")
        return
    chosen = spread([item for item in items if not category or item["category"] == category], int(limit))
    problem = runs_problem(len(chosen), len(patterns), settings)
    if problem:  # RAG_MAX_SET_RUNS: before the samples are indexed or a run starts
        st.error(plain_markdown(problem), icon="⚠️")
        return
    if not ensure_samples(settings):
        return
    bar = st.progress(0.0, text=t("eval_running"))
    try:
        report = evaluate(settings, patterns, chosen, set_name=set_name, progress=lambda done, total, label: bar.progress(
            done / total, text=f"{t('eval_running')} {plain_markdown(label)} ({done}/{total})"))  # md-safe: ints
    except Exception as exc:  # e.g. a provider that cannot be resolved: nothing saved, the form keeps its values
        bar.empty()
        st.error(t("eval_failed", error=plain_markdown(str(exc))), icon="⚠️")
        return
    path = save(report, settings)
    st.session_state["eval_saved"] = path.name
    state["reports"] = [path.name, *(state["reports"] or [])]  # the new report joins the comparison
    st.rerun()
