"""The trace of one run: verdict table, retry/rewrite reasons, counters, usage per node, why it stopped."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.export import TRACE_COLUMNS
from core.render import plain_markdown, safe_markdown
from ui.i18n import t, termination_label

GOOD = {"accepted", "answered", "direct_answer"}
NEUTRAL = {"user_rejected"}


def termination_badge(result: dict) -> None:
    """The reason the run stopped, as a coloured badge with the run's own sentence next to it."""
    reason = result.get("termination_reason") or ""
    if result.get("interrupted"):
        st.badge(t("run_paused"), icon="⏸️", color="blue")
        return
    color = "green" if reason in GOOD else "gray" if reason in NEUTRAL else "red" if reason == "error" else "orange"
    icon = "✅" if reason in GOOD else "⛔" if reason == "error" else "⚠️"
    st.badge(f"{t('stopped')}: {termination_label(reason)}", icon=icon, color=color,
             help=safe_markdown(result.get("termination_message") or "") or None)
    if result.get("termination_message") and not result.get("error"):
        st.caption(safe_markdown(result["termination_message"]))


def verdict_frame(trace: list[dict]) -> pd.DataFrame:
    """One row per trace event; cells are text except the numeric score (Arrow needs one type per column)."""
    rows = [{c: _score(e.get(c)) if c == "score" else _text(e.get(c)) for c in TRACE_COLUMNS} for e in trace]
    return pd.DataFrame(rows, columns=list(TRACE_COLUMNS))


def _score(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value) -> str:
    return "" if value is None else str(value)


def usage_frame(usage: dict) -> pd.DataFrame:
    rows = [{"node": node, t("llm_calls"): s.get("llm_calls", 0), t("tokens"): s.get("tokens", 0),
             t("ms"): s.get("ms", 0)} for node, s in (usage or {}).items()]
    return pd.DataFrame(rows, columns=["node", t("llm_calls"), t("tokens"), t("ms")])


def trace_panel(result: dict) -> None:
    trace = result.get("trace") or []
    st.markdown(f"**{t('path')}:** " + " → ".join(f"`{n}`" for n in result.get("path") or []))
    cols = st.columns(3)
    cols[0].metric(t("llm_calls"), result.get("llm_calls", 0))
    cols[1].metric(t("tokens"), result.get("tokens", 0))
    cols[2].metric(t("ms"), result.get("ms", 0))
    st.markdown(f"**{t('verdicts')}**")
    if trace:
        st.dataframe(verdict_frame(trace), hide_index=True, width="stretch")
    else:
        st.caption(t("no_trace"))
    loops = [e for e in trace if e.get("kind") in ("retry", "rewrite")]
    if loops:
        st.markdown(f"**{t('reasons')}**")
        st.markdown("\n".join(f"{i}. `{e.get('node')}` {e.get('kind')}: "  # reasons are model text: plain
                               f"{plain_markdown(e.get('reason') or e.get('verdict') or '')}"
                               for i, e in enumerate(loops, 1)))
    counters = {}
    for e in trace:  # the last value of each counter is the one the run ended with
        counters.update(e.get("counters") or {})
    if counters:
        st.markdown(f"**{t('counters')}:** " + ", ".join(f"{k} = {v}" for k, v in counters.items()))
    if result.get("usage"):
        st.markdown(f"**{t('usage')}**")
        st.dataframe(usage_frame(result["usage"]), hide_index=True, width="stretch")
