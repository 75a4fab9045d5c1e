"""UI strings of the claim check under an answer: the summary, each sentence's mark, its evidence; merged into ui.i18n."""

# key: (English, Korean)
CLAIM_STRINGS = {
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
}
