"""The Evaluation page: saved evaluation reports as tables and charts, and a form to run a new one."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from core.config import Settings
from core.evaluate import evaluate, load_evalset, save, saved_reports, spread
from core.patterns import pattern_ids
from ui.i18n import t
from ui.pages import pattern_title
from ui.sidebar import sidebar
from ui.state import bound, ensure_samples

SUMMARY_KEYS = ("questions", "route_accuracy", "source_hit_rate", "key_fact_rate", "correct_decline_rate",
                "mean_llm_calls", "mean_tokens", "mean_seconds", "errors")
CHART_KEYS = ("key_fact_rate", "route_accuracy")
ITEM_COLUMNS = ("id", "category", "route_ok", "source_hit", "fact_rate", "declined_ok", "llm_calls", "tokens", "ms",
                "termination_reason", "searched", "error", "answer")
SHOWN_FIRST = 5  # reports selected when the page opens, newest first


def evaluation_page() -> None:
    st.set_page_config(page_title=t("eval_title"), page_icon="📊", layout="wide")
    settings, _ = sidebar(None)
    st.title(t("eval_title"))
    st.caption(t("eval_intro"))
    st.info(t("eval_demo"), icon="ℹ️")
    state = st.session_state.setdefault("evaluation", {"reports": None})
    saved = st.session_state.pop("eval_saved", None)
    if saved:
        st.success(t("eval_saved", file=saved))
    reports = saved_reports(settings)
    if reports:
        _reports(reports, state)
    else:
        st.info(t("no_reports"))
    _start(settings, state)


def report_labels(reports: list[dict]) -> dict[str, str]:
    """file -> a short label (date, provider/model); a repeated label gets a number."""
    labels: dict[str, str] = {}
    for report in reversed(reports):  # oldest first, so the numbering follows time
        label = f"{report.get('date', '?')} · {report.get('provider', '?')}/{report.get('model', '?')}"
        n = sum(1 for seen in labels.values() if seen == label or seen.startswith(label + " #"))
        labels[report["file"]] = f"{label} #{n + 1}" if n else label
    return {r["file"]: labels[r["file"]] for r in reports}


def summary_frame(reports: list[dict], labels: dict[str, str]) -> pd.DataFrame:
    """One row per (report, pattern) with its summary metrics."""
    rows = [{"evaluation": labels[r["file"]], "provider": r.get("provider"), "model": r.get("model"), "pattern": name,
             **{key: data["summary"].get(key) for key in SUMMARY_KEYS}}
            for r in reports for name, data in (r.get("patterns") or {}).items()]
    return pd.DataFrame(rows, columns=["evaluation", "provider", "model", "pattern", *SUMMARY_KEYS])


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
    st.caption(f"{t('terminations')}: " + ", ".join(f"{k} {v}" for k, v in sorted(terminations.items())))
    st.dataframe(items_frame(data["items"]), hide_index=True, width="stretch")


def _start(settings: Settings, state: dict) -> None:
    """A small form that runs the question set (or part of it) and saves the report."""
    items = load_evalset()
    categories = sorted({item["category"] for item in items})
    st.subheader(t("eval_start"))
    st.caption(t("eval_start_help"))
    with st.form("eval_form", enter_to_submit=False):  # only the button starts a run (Enter in N did too)
        patterns = st.multiselect(t("patterns"), pattern_ids(), default=pattern_ids()[:1], format_func=pattern_title,
                                  key="eval_patterns")
        left, right = st.columns(2)
        limit = left.number_input(t("eval_limit"), min_value=1, max_value=len(items), value=5, key="eval_limit")
        category = right.selectbox(t("category"), ["", *categories], key="eval_category",
                                   format_func=lambda c: c or t("all_categories"))
        submitted = st.form_submit_button(t("eval_run"), type="primary", icon="▶️")
    if not submitted:
        return
    if not patterns:
        st.error(t("no_patterns"), icon="⚠️")
        return
    if not ensure_samples(settings):
        return
    chosen = spread([item for item in items if not category or item["category"] == category], int(limit))
    bar = st.progress(0.0, text=t("eval_running"))
    try:
        report = evaluate(settings, patterns, chosen, progress=lambda done, total, label: bar.progress(
            done / total, text=f"{t('eval_running')} {label} ({done}/{total})"))
    except Exception as exc:  # e.g. a provider that cannot be resolved: nothing saved, the form keeps its values
        bar.empty()
        st.error(t("eval_failed", error=exc), icon="⚠️")
        return
    path = save(report, settings)
    st.session_state["eval_saved"] = path.name
    state["reports"] = [path.name, *(state["reports"] or [])]  # the new report joins the comparison
    st.rerun()
