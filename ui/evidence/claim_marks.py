"""Each sentence of an answer with its mark from the claim check, and the quoted evidence one click away."""

from __future__ import annotations

import streamlit as st

from core.run.outcome import disagreement
from core.studio.render import plain_markdown
from ui.i18n import core_text, t

MARKS = {"supported": "✅", "unsupported": "⚠️", "unchecked": "❔", "no_claim": "💬"}


def claim_summary(support: dict) -> str:
    """"3 of 4 claims supported · 1 unsupported" in the UI language."""
    parts = [t("claims_line", supported=support["supported"], claims=support["claims"])]
    parts += [t(f"claims_{k}", n=support[k]) for k in ("unsupported", "unchecked") if support.get(k)]
    return " · ".join(parts)


def claim_marks(result: dict) -> None:
    """The claim check under an answer: a summary line, then each sentence with its mark and evidence."""
    support, claims = result.get("claim_support") or {}, result.get("claims") or []
    if not claims:
        return
    tone = "orange" if support.get("unsupported") else "green" if support.get("supported") == support.get("claims") \
        else "gray"
    st.badge(claim_summary(support) if support.get("claims") else t("verdict_no_claim"), icon="🔎", color=tone,
             help=t("claims_help"))
    if disagreement(result):
        st.caption(t("claims_disagree", n=support["unsupported"]))  # md-safe: a number
    for claim in claims:
        _claim(claim)


def _claim(claim: dict) -> None:
    verdict = claim.get("verdict", "unchecked")
    text = plain_markdown(claim.get("text", ""))  # the model's sentence: shown as written
    if verdict == "no_claim":
        st.caption(f"{MARKS[verdict]} {text}")  # md-safe: plain
        return
    shown = f":orange-background[{text}]" if verdict == "unsupported" else text
    with st.expander(f"{MARKS.get(verdict, '❔')} {shown}"):  # md-safe: the sentence went through plain_markdown
        st.markdown(f"**{t('verdict_' + verdict)}** — {plain_markdown(core_text(claim.get('reason') or ''))}")
        evidence = claim.get("evidence") or []
        if not evidence:
            st.caption(t("claims_no_evidence"))
        for item in evidence:
            st.caption(plain_markdown(f"{t('claims_evidence')}: {item.get('source', '?')} · {item.get('chunk', '')}"))
            st.text(item.get("quote", ""))
        st.caption(t("claims_checked_by", how=plain_markdown(str(claim.get("checked_by") or "-"))))


def claims_cost(cost: dict) -> str:
    """What the claim check cost, apart from the pattern: calls, tokens, milliseconds."""
    return t("claims_cost", calls=int(cost.get("llm_calls", 0)), tokens=int(cost.get("tokens", 0)),
             ms=int(cost.get("ms", 0)))
