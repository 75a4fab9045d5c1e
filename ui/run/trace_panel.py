"""The trace of one run: verdict table, retry/rewrite reasons, budgets, usage per node."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.llm.verdicts import probability_text
from core.runtime.trace import budgets, other_counters, target_text
from core.studio.export import TRACE_COLUMNS
from core.studio.render import plain_markdown
from ui.evidence.claim_marks import claims_cost
from ui.i18n import core_text, kind_label, t, termination_label


def verdict_frame(trace: list[dict]) -> pd.DataFrame:
    """One row per trace event, in words: targets as "source · chunk N", empty cells blank (all text columns)."""
    rows = [[cell(e, c) for c in TRACE_COLUMNS] for e in trace]
    return pd.DataFrame(rows, columns=[t(f"col_{c}") for c in TRACE_COLUMNS])


def cell(event: dict, column: str) -> str:
    """The text of one trace cell."""
    value = event.get(column)
    if value is None or value == "":
        return ""
    if column == "p":
        return probability_text(event)
    if column == "score":
        return _score(value)
    if column == "kind":
        return kind_label(str(value))
    if column == "target":
        return core_text(target_text(value))
    if column == "verdict" and event.get("kind") == "stop":
        return termination_label(str(value))
    if column in ("verdict", "reason"):
        return core_text(value)
    return str(value)


def _score(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def budget_line(counters: dict) -> str:
    """Budgets as "2 of 2 regenerations used", then any other counter as "name value"."""
    parts = [t("budget_used", used=used, limit=limit, what=t(f"budget_{what}")) for what, used, limit in budgets(counters)]
    parts += [f"{k.replace('_', ' ')} {v}" for k, v in other_counters(counters).items()]
    return " · ".join(parts)


def usage_frame(usage: dict) -> pd.DataFrame:
    """Calls, tokens and time per node; drafted and accepted tokens too where prompt lookup ran (embedded model)."""
    columns = [("llm_calls", "llm_calls"), ("tokens", "tokens"), ("ms", "ms")]
    if any("drafted" in s for s in (usage or {}).values()):
        columns += [("drafted", "lookup_drafted"), ("accepted", "lookup_accepted")]
    rows = [{t("col_node"): node, **{t(label): s.get(key, 0) for key, label in columns}}
            for node, s in (usage or {}).items()]
    return pd.DataFrame(rows, columns=[t("col_node"), *(t(label) for _key, label in columns)])


def decoding_line(decoding: dict) -> str:
    """The run's writing speed and prompt-lookup acceptance in one line ('' when the model reports neither)."""
    if not decoding or not decoding.get("decode_tokens_per_s"):
        return ""
    line = t("decoding_speed", n=decoding["decode_tokens"], rate=decoding["decode_tokens_per_s"])
    if decoding.get("drafted"):
        line += " · " + t("lookup_accepted_line", accepted=decoding["accepted"], drafted=decoding["drafted"],
                          pct=round(100 * decoding["accepted"] / decoding["drafted"]))
    return line


def trace_panel(result: dict) -> None:
    trace = result.get("trace") or []
    st.markdown(f"**{t('path')}:** " + " → ".join(f"`{n}`" for n in result.get("path") or []))  # md-safe: our nodes
    cols = st.columns(3)
    cols[0].metric(t("llm_calls"), result.get("llm_calls", 0))
    cols[1].metric(t("tokens"), result.get("tokens", 0))
    cols[2].metric(t("ms"), result.get("ms", 0))
    if decoding_line(result.get("decoding") or {}):
        st.caption(decoding_line(result["decoding"]))  # md-safe: t() of numbers
    cost = result.get("verification")
    if cost:  # the claim check's own cost, apart from the pattern's
        st.caption(claims_cost(cost))
    st.markdown(f"**{t('verdicts')}**")
    if trace:
        st.dataframe(verdict_frame(trace), hide_index=True, width="stretch")
    else:
        st.caption(t("no_trace"))
    loops = [e for e in trace if e.get("kind") in ("retry", "rewrite")]
    if loops:
        st.markdown(f"**{t('reasons')}**")
        st.markdown("\n".join(f"{i}. `{e.get('node')}` {kind_label(e.get('kind', ''))}: "  # md-safe: reasons go plain
                               f"{plain_markdown(core_text(e.get('reason') or e.get('verdict') or ''))}"
                               for i, e in enumerate(loops, 1)))
    counters = {}
    for e in trace:  # the last value of each counter is the one the run ended with
        counters.update(e.get("counters") or {})
    if counters:
        st.markdown(f"**{t('counters')}:** " + budget_line(counters))
    if result.get("usage"):
        st.markdown(f"**{t('usage')}**")
        st.dataframe(usage_frame(result["usage"]), hide_index=True, width="stretch")
