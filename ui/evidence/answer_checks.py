"""Under an answer: the outcome badge, why the run stopped, citation and cut-off notes (chat, Compare, What if?)."""

from __future__ import annotations

import streamlit as st

from core.run.outcome import outcome_tone, summary
from core.studio.render import plain_markdown, safe_markdown
from ui.evidence.claim_marks import claim_marks
from ui.i18n import core_text, outcome_text, t, termination_label

TONES = {"good": ("green", "✅"), "neutral": ("gray", "ℹ️"), "warning": ("orange", "⚠️"), "error": ("red", "⛔")}
NO_CITATION_NOTE = {"declined", "rejected", "error", "paused"}  # no answer to hold citations


def answer_checks(result: dict) -> None:
    """Under an answer: an outcome badge that claims only what was checked, why the run stopped,
    whether its citation markers point at listed sources, whether the answer was cut off, and the
    claim check of each sentence."""
    if result.get("interrupted"):
        st.badge(outcome_text("paused"), icon="⏸️", color="blue")
        return
    checks = summary(result)
    status = checks["status"]
    color, icon = TONES[outcome_tone(status)]
    message = safe_markdown(core_text(result.get("termination_message") or ""))  # may quote model text
    st.badge(outcome_text(status), icon=icon, color=color, help=message or None)
    if not result.get("error"):
        stopped = f"{t('stopped')}: {termination_label(result.get('termination_reason', ''))}"
        st.caption(f"{stopped} — {message}" if message else stopped)  # md-safe: message went through safe_markdown
    citations = checks.get("citations")
    if citations and status not in NO_CITATION_NOTE:
        if citations["status"] == "unknown":
            st.warning(t("citations_unknown", markers=plain_markdown(", ".join(citations["unknown"])),  # the model's text
                         n=citations["listed"]), icon="⚠️")  # md-safe: markers plain, n an int
        elif citations["status"] == "ok":
            st.caption(t("citations_ok", markers=plain_markdown(", ".join(citations["cited"]))))
        elif citations["listed"]:
            st.caption(t("citations_none"))
    for node, cut in (checks.get("truncated") or {}).items():
        if cut["cut_off"] == cut["calls"]:
            st.warning(t("truncated"), icon="✂️")
        else:
            st.warning(t("truncated_some", cut=cut["cut_off"], calls=cut["calls"], node=node), icon="✂️")  # md-safe: ints, node
    claim_marks(result)
