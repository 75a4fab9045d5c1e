"""Each sentence of an answer with its mark from the claim check, and the quoted evidence one click away."""

from __future__ import annotations

import streamlit as st

from core.run.outcome import disagreement
from core.studio.render import plain_markdown
from ui.i18n import STRINGS, core_text, t

MARKS = {"supported": "✅", "unsupported": "⚠️", "unchecked": "❔", "no_claim": "💬"}
STRINGS.update({
    "claims_title": ("Sentence check", "문장별 확인"),
    "claims_line": ("{supported} of {claims} claims supported", "주장 {claims}개 중 {supported}개 근거 있음"),
    "claims_unsupported": ("{n} unsupported", "{n}개 근거 없음"),
    "claims_unchecked": ("{n} unchecked", "{n}개 확인 안 함"),
    "claims_disagree": ("The pattern's own grader: grounded · claim check: {n} unsupported",
                        "패턴의 자체 평가: 근거 있음 · 문장별 확인: {n}개 근거 없음"),
    "claims_help": ("Every sentence of the answer was checked against the run's documents: numbers, dates and "
                    "names must appear in the passage that supports the sentence, then the model judges the rest. "
                    "The check can miss a claim worded far from its evidence, and the model can be wrong.",
                    "답변의 문장마다 이번 실행의 문서와 대조했습니다. 숫자·날짜·이름은 그 문장을 뒷받침하는 구절에 "
                    "있어야 하고, 나머지는 모델이 판단합니다. 근거와 표현이 크게 다른 주장은 놓칠 수 있고 모델도 "
                    "틀릴 수 있습니다."),
    "verdict_supported": ("supported", "근거 있음"),
    "verdict_unsupported": ("unsupported", "근거 없음"),
    "verdict_unchecked": ("unchecked", "확인 안 함"),
    "verdict_no_claim": ("no claim", "주장 아님"),
    "claims_evidence": ("Evidence", "근거"),
    "claims_no_evidence": ("No passage of the documents supports it.", "이를 뒷받침하는 문서 구절이 없습니다."),
    "claims_checked_by": ("checked by: {how}", "확인 방식: {how}"),
    "claims_cost": ("verification: {calls} LLM calls · {tokens} tokens · {ms} ms",
                    "검증: LLM 호출 {calls}회 · 토큰 {tokens}개 · {ms} ms"),
})


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
