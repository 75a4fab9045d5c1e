"""Korean for what core writes in English: trace reasons and verdicts, termination messages, outcomes.

Core keeps one canonical English text (CLI, exports, tests read it); the UI words it in the chosen
language. Each entry is an English template as core formats it, ``{name}`` standing for a value;
a value is itself translated when it is one of these texts (``"{why}: rewrite {n} of {limit}"``).
Text that matches nothing stays English: a new core message degrades to English, never to an error.
A pattern declares the texts only it writes next to its graph (``Pattern.texts_ko``); they are read here too.
"""

from __future__ import annotations

import re
from functools import lru_cache

EXACT = {
    # verdicts and targets
    "yes": "예", "no": "아니오", "pass": "통과", "fail": "실패", "approve": "승인", "edit": "수정", "reject": "거절",
    "repeated": "반복", "fallback": "대체", "answer": "답변", "question": "질문", "documents": "문서",
    "tool calls": "도구 호출", "final answer": "최종 답변", "thought": "생각", "retrieved context": "검색된 컨텍스트",
    "format": "형식", "collections": "컬렉션", "direct": "바로 답변", "web": "웹", "none": "없음", "menu": "메뉴",
    "wine": "와인", "simple": "단순", "compare": "비교", "analyse": "분석", "correct": "정확", "ambiguous": "모호",
    "incorrect": "부정확", "cached": "캐시 사용", "loaded": "불러옴", "built": "새로 만듦", "ok": "성공",
    "shipped": "함께 배포된 그래프", "partial": "일부만 만듦", "not_ready": "준비 안 됨", "missing": "없음",
    "empty": "결과 없음", "unavailable": "사용 불가", "error": "오류",
    # fixed reasons
    "router chose a direct answer": "라우터가 바로 답변을 골랐습니다",
    "direct answer": "바로 답변",
    "no documents were retrieved": "검색된 문서가 없습니다",
    "the agent answered without calling a tool": "에이전트가 도구를 부르지 않고 답했습니다",
    "the agent gave neither an answer nor a tool call; searching with the question":
        "에이전트가 답도 도구 호출도 내지 않아 질문 그대로 검색합니다",
    "every citation matches a retrieved source": "모든 인용이 검색된 출처와 일치합니다",
    "the answer cites nothing": "답변에 인용이 없습니다",
    "the agent answered without retrieval": "에이전트가 검색 없이 답했습니다",
    "no reason given": "사유 없음",
    "no note": "메모 없음",
    "answer edited by the reviewer": "검토자가 답변을 고쳤습니다",
    "the reviewer dropped every sentence: no answer is given": "검토자가 모든 문장을 빼서 답변이 없습니다",
    "drop": "문장 빼기", "revise": "다시 쓰기",
    "all kept": "모두 유지",
    "all documents graded incorrect": "모든 문서가 부정확으로 평가되었습니다",
    "retrieval ambiguous: adding a web supplement": "검색 결과가 모호해 웹 검색으로 보충합니다",
    "no strip survived refinement": "정제 후 남은 조각이 없습니다",
    "no relevant documents in the collections or on the web": "컬렉션에도 웹에도 관련 문서가 없습니다",
    "no results": "결과 없음",
    "empty query": "빈 검색어",
    "web search is not configured (no TAVILY_API_KEY)": "웹 검색이 설정되지 않았습니다 (TAVILY_API_KEY 없음)",
    "the knowledge base has no collection to build a graph from": "그래프를 만들 컬렉션이 지식 베이스에 없습니다",
    "the run has no source to build a graph from": "이번 실행에는 그래프를 만들 출처가 없습니다",
    "no relations around the matched entities": "찾은 개체 주변에 관계가 없습니다",
    "the question names no entity: answered directly": "질문에 개체가 없어 바로 답했습니다",
    "the agent ended with an empty reply": "에이전트가 빈 답으로 끝냈습니다",
    "already made in this turn: not run again; the agent is told so":
        "이번 턴에 이미 한 호출이라 다시 실행하지 않고, 에이전트에게 그렇게 알립니다",
    "already made in this turn: not run again; repeated after being told so: the loop stops":
        "이번 턴에 이미 한 호출이라 다시 실행하지 않습니다. 알린 뒤에도 되풀이해 멈춥니다",
    "already made in this turn: its result is given back with a note to answer or call another tool":
        "이번 턴에 이미 한 호출이라, 그 결과를 다시 주며 답하거나 다른 도구를 부르라고 알립니다",
    "already made in this turn, again after the note: the run answers from the documents found":
        "이번 턴에 이미 한 호출을 알린 뒤에도 되풀이해, 찾은 문서로 답합니다",
    "already made in this turn, again after the note, and nothing found: the loop stops":
        "이번 턴에 이미 한 호출을 알린 뒤에도 되풀이했고 찾은 것이 없어 멈춥니다",
    "written from the documents found, after the agent repeated a call": "에이전트가 호출을 되풀이한 뒤 찾은 문서로 썼습니다",
    "the provider gives no probabilities: the step the agent wrote stands":
        "제공자가 확률을 주지 않아 에이전트가 쓴 단계를 그대로 따릅니다",
    "retrieval needed": "검색이 필요합니다",
    "no retrieval needed": "검색이 필요 없습니다",  # runs recorded before the decision named the message's kind
    "retrieval needed: lookup": "검색이 필요합니다: 자료 조회",
    "no retrieval needed: small talk": "검색이 필요 없습니다: 일상 대화",
    "no retrieval needed: general knowledge": "검색이 필요 없습니다: 일반 상식",
    "no relevant documents": "관련 문서가 없습니다",
    "context failed grading": "컨텍스트가 평가를 통과하지 못했습니다",
    "it stated facts the documents do not contain": "문서에 없는 사실을 말했습니다",
    "answered directly: no retrieval needed": "검색 없이 바로 답했습니다",
    "The question is empty: type a question first.": "질문이 비어 있습니다. 먼저 질문을 입력하세요.",
    "stopped: the graph hit its recursion limit (a loop did not end)":
        "중단: 그래프가 재귀 한도에 도달했습니다 (반복이 끝나지 않음)",
}

TEMPLATES = (
    # the claim check (core.run.outcome.claim_line, core.patterns.answer_review)
    ("{s} of {n} claims supported, {u} unsupported, {c} unchecked",
     "주장 {n}개 중 {s}개 근거 있음, {u}개 근거 없음, {c}개 확인 안 함"),
    ("{s} of {n} claims supported", "주장 {n}개 중 {s}개 근거 있음"),
    ("its figures and terms are in the evidence (no model check): {quote}",
     "숫자와 용어가 근거에 있습니다 (모델 확인 없음): {quote}"),
    ("the documents give {a} for something else; for this they say {b}", "문서의 {a}는 다른 항목의 값이고, 이 항목은 {b}입니다"),
    ("{fact} is only in a passage that seems to be about something else", "{fact}는 다른 내용의 구절에만 있습니다"),
    ("the figure is not tied to the item asked about: {fact} is the figure of {item}, one of {n} items the question matches",
     "숫자가 어느 항목의 값인지 밝히지 않았습니다: {fact}는 {item}의 값이며, 질문에 해당하는 항목은 {n}개입니다"),
    ("{fact} is not in the evidence; the documents say {other}", "{fact}는 근거에 없습니다. 문서에는 {other}로 되어 있습니다"),
    ("{fact} is not in the evidence", "{fact}는 근거에 없습니다"),
    ("there are no documents to check against", "대조할 문서가 없습니다"),
    ("the documents word it the other way: {quote}", "문서는 반대로 말합니다: {quote}"),
    ("the model's verdict could not be read, so it was not checked", "모델의 판정을 읽을 수 없어 확인하지 못했습니다"),
    ("the documents say otherwise: {quote}", "문서는 다르게 말합니다: {quote}"),
    ("the documents do not say this", "문서에 이런 내용이 없습니다"),
    ("the documents say this: {quote}", "문서에 이렇게 나옵니다: {quote}"),
    ("the documents say {quote}", "문서에 이렇게 나옵니다: {quote}"),
    ("not checked: the limit of {n} model checks per answer was reached (RAG_CLAIM_CHECKS)",
     "확인 안 함: 답변당 모델 확인 한도 {n}회에 이르렀습니다 (RAG_CLAIM_CHECKS)"),
    ("the model check failed: {why}", "모델 확인이 실패했습니다: {why}"),
    ("{n} unsupported", "{n}개 근거 없음"),
    ("{n} unchecked", "{n}개 확인 안 함"),
    # answers and stops
    # sources
    ("{n} source(s)", "출처 {n}개"),
    ("chosen for this run: {names}", "이번 실행에 고른 출처: {names}"),
    ("{names}; {tool} left out: {why}", "{names}; {tool} 제외: {why}"),
    ("every enabled collection: {names}", "켜져 있는 모든 컬렉션: {names}"),
    ("at most {n} graphs per run; not used: {names} (choose fewer sources in the sidebar)",
     "한 번에 그래프는 최대 {n}개까지입니다. 쓰지 않은 출처: {names} (사이드바에서 출처를 줄이세요)"),
    ("answer accepted: grounded and useful ({n}/5)", "답변 승인: 근거가 있고 유용함 ({n}/5)"),
    ("answered from {n} retrieved chunks", "검색한 청크 {n}개로 답했습니다"),
    ("answered from {n} document(s)", "문서 {n}개로 답했습니다"),
    ("answered from {n} graded chunk(s)", "평가를 통과한 청크 {n}개로 답했습니다"),
    ("answered from {r} relation(s) around {e} matched entit(ies)", "찾은 개체 {e}개 주변의 관계 {r}개로 답했습니다"),
    ("answered from {n} refined document(s) and {w} web result(s)", "정제한 문서 {n}개와 웹 결과 {w}개로 답했습니다"),
    ("answered from {n} refined document(s)", "정제한 문서 {n}개로 답했습니다"),
    ("synthesised from {n} sub-answer(s)", "하위 답변 {n}개를 종합했습니다"),
    ("web search unavailable ({why}) and no strip survived", "웹 검색 사용 불가({why}), 남은 조각도 없습니다"),
    ("web search unavailable ({why}): answered from the {n} strip(s) that survived",
     "웹 검색 사용 불가({why}): 남은 조각 {n}개로 답했습니다"),
    ("web search unavailable: {why}", "웹 검색 사용 불가: {why}"),
    ("rejected by the reviewer: {message}", "검토자가 거절했습니다: {message}"),
    # the answer review (core.patterns.answer_review)
    ("answer approved with {n} sentence(s)", "답변 승인: 문장 {n}개"),
    ("dropped {n} sentence(s): {texts}", "문장 {n}개를 뺐습니다: {texts}"),
    ("sent back for draft {n}: {note}", "{n}번째 초안을 쓰도록 돌려보냈습니다: {note}"),
    ("written again with the reviewer's note and {n} unsupported sentence(s)",
     "검토자의 메모와 근거 없는 문장 {n}개를 반영해 다시 썼습니다"),
    ("the reviewer asked for another draft, but {n} of {limit} regeneration(s) are spent: the answer stands",
     "검토자가 다시 쓰기를 요청했지만 재생성 {limit}회 중 {n}회를 다 써서 답변을 그대로 둡니다"),
    ("draft {n}", "{n}번째 초안"),
    ("the reviewer dropped every document: nothing to answer from", "검토자가 모든 문서를 제외해 답할 근거가 없습니다"),
    ("changed by the user; was {was}", "사용자가 바꿨습니다; 이전 값: {was}"),
    ("no retrieved chunk passed grading after {n} rewrite(s) (budget {limit}); not answering from failed context",
     "재작성 {n}회(한도 {limit}) 후에도 평가를 통과한 청크가 없어, 통과하지 못한 내용으로는 답하지 않습니다"),
    ("no graph node matches the question's entities ({names}) (the graph is not fully built yet)",
     "질문의 개체({names})와 일치하는 그래프 노드가 없습니다 (그래프를 아직 다 만들지 않았습니다)"),
    ("no graph node matches the question's entities ({names})", "질문의 개체({names})와 일치하는 그래프 노드가 없습니다"),
    ("no relations around the matched entities (the graph is not fully built yet)",
     "찾은 개체 주변에 관계가 없습니다 (그래프를 아직 다 만들지 않았습니다)"),
    ("final answer after {n} step(s), {calls} tool call(s), {errors} parse error(s)",
     "{n}단계, 도구 호출 {calls}회, 파싱 오류 {errors}회 후 최종 답변"),
    ("final answer after {n} step(s), {calls} tool call(s)", "{n}단계, 도구 호출 {calls}회 후 최종 답변"),
    ("{why}: answered from {n} document(s) found so far", "{why}: 지금까지 찾은 문서 {n}개로 답했습니다"),
    ("{why}: no documents gathered", "{why}: 모은 문서가 없습니다"),
    ("the agent repeated {call}, already made in this turn", "에이전트가 이번 턴에 이미 한 호출 {call}을(를) 반복했습니다"),
    ("stopped at the step limit ({n} of {limit})", "단계 한도에서 멈췄습니다 ({limit}회 중 {n}회)"),
    ("{read} {reading}: not sure enough, the step the agent wrote stands ({was}); {shown}",
     "{read} {reading}: 확신이 부족해 에이전트가 쓴 단계를 따릅니다 ({was}); {shown}"),
    ("read from probabilities: {read} {reading} (the agent wrote {was}); {shown}",
     "확률로 읽음: {read} {reading} (에이전트가 쓴 것: {was}); {shown}"),
    ("read from probabilities: {read} {reading}; {shown}", "확률로 읽음: {read} {reading}; {shown}"),
    ("final answer after {n} step(s), {calls} tool call(s); {why}", "{n}단계, 도구 호출 {calls}회 후 최종 답변; {why}"),
    ("gave up after {spent}: returned the best grounded answer ({score}/5)",
     "{spent} 후 포기: 근거가 있는 가장 나은 답변을 돌려주었습니다 ({score}/5)"),
    ("gave up after {spent}: no answer was grounded in the documents", "{spent} 후 포기: 문서에 근거한 답변이 없었습니다"),
    ("gave up after {n} of {limit} rewrite(s): no relevant documents",
     "재작성 {limit}회 중 {n}회 후 포기: 관련 문서가 없습니다"),
    ("{n} of {limit} rewrite(s) and {g} of {glimit} regeneration(s)", "재작성 {limit}회 중 {n}회, 재생성 {glimit}회 중 {g}회"),
    ("The question is {n} characters long; the limit is {limit}. Shorten it or put the long text into the knowledge base "
     "instead.", "질문이 {n}자로 한도 {limit}자를 넘습니다. 줄이거나 긴 글은 지식 베이스에 넣으세요."),
    # decisions
    ("router output unusable ({error}); falling back to a direct answer",
     "라우터 출력을 쓸 수 없어({error}) 바로 답변으로 대신합니다"),
    ("router output unusable ({error}); searching menu and wine", "라우터 출력을 쓸 수 없어({error}) 메뉴와 와인을 검색합니다"),
    ("classifier output unusable ({error}); treating as simple", "분류기 출력을 쓸 수 없어({error}) 단순 질문으로 다룹니다"),
    ("grader output unusable ({error}); retrieving to be safe", "평가기 출력을 쓸 수 없어({error}) 안전하게 검색합니다"),
    ("grader output unusable ({error}); kept every strip", "평가기 출력을 쓸 수 없어({error}) 모든 조각을 유지합니다"),
    ("question routed to {route}", "질문을 {route}(으)로 보냈습니다"),
    ("question judged {level}", "질문 유형: {level}"),
    ("searching {sources} in parallel", "{sources}을(를) 동시에 검색합니다"),
    ("{n} sub-question(s)", "하위 질문 {n}개"),
    ("{k} of {n} chunk(s) relevant", "청크 {n}개 중 {k}개 관련"),
    ("context failed grading: rewrite {n} of {limit} ({error})",
     "컨텍스트가 평가를 통과하지 못함: 재작성 {limit}회 중 {n}회 ({error})"),
    ("context failed grading: rewrite {n} of {limit}", "컨텍스트가 평가를 통과하지 못함: 재작성 {limit}회 중 {n}회"),
    ("{why}: rewrite {n} of {limit}", "{why}: 재작성 {limit}회 중 {n}회"),
    ("rewrite {n} of {limit}", "재작성 {limit}회 중 {n}회"),
    ("it was grounded but only {score}/5 useful: answer the question more directly",
     "근거는 있으나 유용성이 {score}/5뿐입니다: 질문에 더 직접 답하세요"),
    ("regeneration {n} of {limit}", "재생성 {limit}회 중 {n}회"),
    ("answer not useful enough ({score}/5)", "답변이 충분히 유용하지 않음 ({score}/5)"),
    ("useful ({score}/5)", "유용함 ({score}/5)"),
    ("partly useful ({score}/5)", "일부 유용함 ({score}/5)"),
    ("not useful ({score}/5)", "유용하지 않음 ({score}/5)"),
    ("{a} verified, {b} removed", "검증 {a}개, 제거 {b}개"),
    ("removed unsupported: {labels}", "근거 없는 인용 제거: {labels}"),
    ("{n} documents", "문서 {n}개"),
    ("{n} results", "결과 {n}개"),
    ("{n} relation(s)", "관계 {n}개"),
    ("{n} mention(s)", "언급 {n}개"),
    ("neighbourhood up to {hops} hops", "최대 {hops}단계 이웃"),
    ("{n} opening(s)", "시작 후보 {n}개"),
    ("the answer starts with one of what the question asks for: {names}",
     "답변은 질문이 묻는 것 가운데 하나로 시작합니다: {names}"),
    ("'{mention}' -> node '{name}'", "'{mention}' → 노드 '{name}'"),
    ("{nodes} nodes, {edges} relations from {chunks} chunk(s) in {ms} ms; {failed} extraction call(s) failed",
     "청크 {chunks}개에서 노드 {nodes}개, 관계 {edges}개 ({ms} ms); 추출 호출 {failed}회 실패"),
    ("graph not ready: the {first} chunk(s) the question retrieves were read first, {done} of {chunks} chunk(s) read "
     "by {model} so far, the rest being built in the background; answering from what is built ({nodes} nodes, "
     "{edges} relations); ask again when it is built, or set graph_wait to wait for it",
     "그래프 준비 안 됨: 질문이 찾은 청크 {first}개를 먼저 읽었고, {model}이(가) 지금까지 청크 {chunks}개 중 {done}개를 "
     "읽었으며 나머지는 백그라운드에서 만드는 중입니다. 지금까지 만든 부분(노드 {nodes}개, 관계 {edges}개)으로 답합니다. "
     "다 만들어진 뒤 다시 묻거나 graph_wait를 켜서 기다리세요"),
    ("graph not ready: {done} of {chunks} chunk(s) read by {model}, being built in the background; answering from "
     "what is built ({nodes} nodes, {edges} relations); ask again when it is built, or set graph_wait to wait for it",
     "그래프 준비 안 됨: {model}이(가) 청크 {chunks}개 중 {done}개를 읽었고 백그라운드에서 만드는 중입니다. 지금까지 만든 "
     "부분(노드 {nodes}개, 관계 {edges}개)으로 답합니다. 다 만들어진 뒤 다시 묻거나 graph_wait를 켜서 기다리세요"),
    ("{nodes} nodes, {edges} relations from {chunks} chunk(s) in {ms} ms",
     "청크 {chunks}개에서 노드 {nodes}개, 관계 {edges}개 ({ms} ms)"),
    ("{a} correct, {b} ambiguous, {c} incorrect", "정확 {a}, 모호 {b}, 부정확 {c}"),
    ("kept {k} of {n} strips", "조각 {n}개 중 {k}개 유지"),
    ("kept {k} of {n}", "{n}개 중 {k}개 유지"),
    ("dropped: {what}", "제외: {what}"),
    ("approved {n} document(s), dropped {m}", "문서 {n}개 승인, {m}개 제외"),
    ("approved {n} document(s)", "문서 {n}개 승인"),
    ("approved {n} call(s)", "호출 {n}개 승인"),
    ("edited to: {calls}", "다음으로 수정: {calls}"),
    ("question edited to: {question}; retrieving again", "질문을 다음으로 고쳐 다시 검색합니다: {question}"),
    ("follow-up rewritten from: {question}", "후속 질문을 독립된 질문으로 바꿨습니다 (원래 질문: {question})"),
    ("parse error {n}", "파싱 오류 {n}"),
    ("step {n}", "{n}단계"),
    ("search API error: {error}", "검색 API 오류: {error}"),
    ("web search failed: {error}", "웹 검색 실패: {error}"),
    ("web search could not start: {error}", "웹 검색을 시작하지 못했습니다: {error}"),
    ("unexpected answer of type {kind}", "예상하지 못한 응답 형식: {kind}"),
    ("answered from {what}", "다음으로 답했습니다: {what}"),  # last: the specific "answered from ..." come first
)


@lru_cache(maxsize=1)
def _compiled() -> tuple:
    """The templates as patterns: each pattern's own texts first (``Pattern.texts_ko``), then the shared ones."""
    from core.patterns import all_patterns

    declared = tuple(pair for pattern in all_patterns() for pair in pattern.texts_ko)
    out = []
    for english, korean in declared + TEMPLATES:
        parts = re.split(r"\{(\w+)\}", english)
        pattern = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        out.append((re.compile(pattern, re.DOTALL), korean))
    return tuple(out)


def to_korean(text: str, depth: int = 0) -> str:
    """The Korean of a core message, or the message itself when it is not in the catalogue."""
    key = text.strip()
    if key in EXACT:
        return EXACT[key]
    if depth > 3 or not key:
        return text
    for pattern, korean in _compiled():
        match = pattern.fullmatch(key)
        if match:
            return korean.format(**{k: to_korean(v, depth + 1) for k, v in match.groupdict().items()})
    return text


OUTCOMES_KO = {
    "supported": "답변 — 모든 주장이 근거 있음",
    "unsupported": "답변 — 근거 없는 주장 있음",
    "grounded": "답변 — 근거 확인됨",
    "unchecked": "답변 — 근거 확인 안 함",
    "ungrounded": "답변 — 근거 확인 실패",
    "direct": "문서 없이 답변 — 근거 확인 안 함",
    "partial": "일부 근거로 답변",
    "budget": "한도 소진",
    "declined": "답변 없음",
    "rejected": "검토자가 거절함",
    "paused": "검토를 위해 일시 정지됨",
    "error": "오류로 중단됨",
}
