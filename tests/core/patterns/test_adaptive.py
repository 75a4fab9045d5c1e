"""Adaptive RAG: one test per edge of each router, plus the review pause and resume."""

import pytest

from core.prompts import answer_request
from core.run.runner import resume, run
from core.runtime.context import make_context
from core.store.history import pending_reviews
from core.studio import evaluate
from support.helpers import kinds, run_script, web_down, web_ok
from support.scripted import ScriptedChatModel
from support.workflow_script import Script

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"


@pytest.fixture
def s(sample_settings):
    return sample_settings.with_(k=2)


def test_route_menu_searches_the_menu_and_cites_it(s):
    script = Script(router={"route": "restaurant_menu"}, answer="시그니처 스테이크는 ₩35,000입니다 [1].")
    r = run_script("adaptive", STEAK, s, script)
    assert r["path"] == ["contextualize", "route_question", "search_collection", "generate"]
    assert r["termination_reason"] == "answered"
    assert {src["collection"] for src in r["sources"]} == {"restaurant_menu"}
    route = kinds(r, "route")[0]
    assert route["target"] == "restaurant_menu" and route["verdict"] == "레스토랑 메뉴 · Restaurant menu"  # display name
    assert "35,000" in script.prompts["answer"][0][0].content  # the right chunk reached the prompt


def test_route_wine_searches_the_wine_list(s):
    r = run_script("adaptive", "스테이크와 어울리는 와인을 추천해주세요", s,
                   Script(router={"route": "restaurant_wine"}, answer="바롤로를 추천합니다 [1]."))
    assert r["path"][2] == "search_collection"
    assert {src["collection"] for src in r["sources"]} == {"restaurant_wine"}


def test_route_web_answers_from_web_results(s):
    web = web_ok("서울은 오늘 맑고 기온은 12도입니다.")
    r = run_script("adaptive", "오늘 서울 날씨는?", s, Script(router={"route": "web"}, answer="맑습니다 [1]."), web=web)
    assert r["path"][2] == "search_web" and r["termination_reason"] == "answered"
    assert r["sources"][0]["url"] == "https://example.org/0"
    assert web.queries == ["오늘 서울 날씨는?"]


def test_route_web_without_web_search_says_so_without_guessing(s):
    script = Script(router={"route": "web"})
    r = run_script("adaptive", "오늘 서울 날씨는?", s, script, web=web_down)
    assert r["termination_reason"] == "web_unavailable"
    assert "웹 검색을 사용할 수 없어" in r["answer"] and "TAVILY_API_KEY" in r["termination_message"]
    assert evaluate.answer_language(r["answer"]) == "ko", r["answer"]  # no English reason inside the Korean answer
    assert script.count("answer") == 0


def test_route_direct_answers_without_retrieval(s):
    script = Script(router={"route": "direct"}, direct="안녕하세요! 무엇을 도와드릴까요?")
    r = run_script("adaptive", "안녕하세요?", s, script)
    assert r["path"] == ["contextualize", "route_question", "direct_answer"]
    assert r["termination_reason"] == "direct_answer" and r["sources"] == []


def test_router_parse_failure_falls_back_to_direct_and_says_so(s):
    script = Script(router="this is not json", direct="안녕하세요!")
    r = run_script("adaptive", "안녕하세요?", s, script)
    assert script.count("router") == 2  # retried once
    err = kinds(r, "error")[0]
    assert err["target"] == "direct" and "falling back to a direct answer" in err["reason"]
    assert r["termination_reason"] == "direct_answer"


def test_complexity_simple_retrieves_once(s):
    script = Script(complexity={"complexity": "simple"}, answer="₩35,000 [1].")
    r = run_script("adaptive", STEAK, s, script, variant="complexity")
    assert r["path"] == ["contextualize", "classify_complexity", "retrieve", "generate"]


def test_complexity_compare_decomposes_and_synthesises_with_renumbered_citations(s):
    script = Script(
        complexity={"complexity": "compare"},
        decompose={"questions": ["미국의 반도체 지원 예산은?", "일본의 반도체 목표는?", "미국의 반도체 지원 예산은?"]},
        answer=lambda m: "미국은 527억 달러 [1]." if "미국" in m[-1].content else "일본은 15조 엔 목표 [2].",
        synthesise="미국은 527억 달러 [1], 일본은 15조 엔 [4].",
    )
    r = run_script("adaptive", "미국과 일본의 반도체 정책을 비교해주세요", s, script, variant="complexity")
    assert r["path"][:3] == ["contextualize", "classify_complexity", "decompose"]
    assert r["path"].count("answer_sub_question") == 2  # duplicates dropped, fan-out of 2
    assert r["path"][-1] == "synthesise" and r["termination_reason"] == "answered"
    sub_answers = script.prompts["synthesise"][0][0].content
    assert "일본은 15조 엔 목표 [4]" in sub_answers  # second sub-answer's [2] shifted past the first's 2 docs
    assert len(r["sources"]) == 4


def _review_ctx(s, script):
    model = ScriptedChatModel(responder=script)
    return make_context(s, llm=model, grader=model, web=web_down)


def test_review_pauses_then_approve_with_a_dropped_document(s):
    script = Script(router={"route": "restaurant_menu"}, answer="₩35,000 [1].")
    ctx = _review_ctx(s, script)
    paused = run("adaptive", STEAK, s, ctx=ctx, review=True)
    assert paused["interrupted"] and paused["termination_reason"] == ""
    payload = paused["interrupt"]
    assert payload["kind"] == "document_review" and len(payload["documents"]) == 2
    waiting = [p for p in pending_reviews(s) if p["thread_id"] == paused["thread_id"]]
    assert waiting and waiting[0]["pattern"] == "adaptive"
    dropped = payload["documents"][1]["id"]
    done = resume(paused["thread_id"], {"action": "approve", "drop": [dropped]}, s, ctx=ctx)
    assert done["termination_reason"] == "answered" and len(done["sources"]) == 1
    assert "dropped 1" in kinds(done, "interrupt")[0]["reason"]
    assert done["thread_id"] not in [p["thread_id"] for p in pending_reviews(s)]
    assert done["usage"]["route_question"]["llm_calls"] == 1  # usage spans both segments


def test_review_reject_ends_with_user_rejected(s):
    ctx = _review_ctx(s, Script(router={"route": "restaurant_menu"}))
    paused = run("adaptive", STEAK, s, ctx=ctx, review=True)
    done = resume(paused["thread_id"], {"action": "reject", "message": "wrong menu"}, s, ctx=ctx)
    assert done["termination_reason"] == "user_rejected" and "wrong menu" in done["termination_message"]
    assert done["answer"] == ""


WINE = "스테이크와 어울리는 와인을 추천해주세요"


def route_by_question(messages):
    """A router that reads the question: wine questions to the wine list, greetings answered directly, the rest to the menu."""
    question = messages[-1].content
    if "와인" in question:
        return {"route": "restaurant_wine"}
    return {"route": "direct"} if "안녕" in question else {"route": "restaurant_menu"}


def test_review_edit_routes_the_edited_question_again(s):
    script = Script(router=route_by_question, answer="바롤로를 추천합니다 [1].")
    ctx = _review_ctx(s, script)
    paused = run("adaptive", STEAK, s, ctx=ctx, review=True)
    assert {d["source"] for d in paused["interrupt"]["documents"]} == {"restaurant_menu.md"}
    again = resume(paused["thread_id"], {"action": "edit", "question": WINE}, s, ctx=ctx)
    assert again["interrupted"], "the edited question's documents are shown for review again"
    assert again["interrupt"]["question"] == WINE
    assert {d["source"] for d in again["interrupt"]["documents"]} == {"restaurant_wine.md"}  # not the menu any more
    assert again["path"] == ["contextualize", "route_question", "search_collection", "review_documents",
                             "route_question", "search_collection"]  # paused again (the pause is not a step yet)
    assert [e["target"] for e in kinds(again, "route")] == ["restaurant_menu", "restaurant_wine"]
    done = resume(again["thread_id"], {"action": "approve"}, s, ctx=ctx)
    assert done["termination_reason"] == "answered"
    assert {src["collection"] for src in done["sources"]} == {"restaurant_wine"}
    [answered] = script.prompts["answer"]
    assert answered[-1].content == answer_request(WINE) and "바롤로" in answered[0].content
    assert done["edited_question"] == WINE and done["question"] == STEAK


def test_review_edit_to_a_greeting_is_answered_directly_from_the_edited_question(s):
    script = Script(router=route_by_question, direct="안녕하세요! 무엇을 도와드릴까요?")
    ctx = _review_ctx(s, script)
    paused = run("adaptive", STEAK, s, ctx=ctx, review=True)
    done = resume(paused["thread_id"], {"action": "edit", "question": "안녕하세요?"}, s, ctx=ctx)
    assert done["termination_reason"] == "direct_answer" and done["path"][-2:] == ["route_question", "direct_answer"]
    [direct] = script.prompts["direct"]
    assert [m.content for m in direct if m.type == "human"] == [answer_request("안녕하세요?")]  # the edit, not the steak


def test_review_edit_in_the_complexity_variant_classifies_the_edited_question_again(s):
    script = Script(complexity={"complexity": "simple"}, answer="₩28,000 [1].")
    ctx = _review_ctx(s, script)
    paused = run("adaptive", STEAK, s, ctx=ctx, review=True, variant="complexity")
    again = resume(paused["thread_id"], {"action": "edit", "question": "트러플 크림 파스타 가격"}, s, ctx=ctx)
    assert again["path"][-3:] == ["review_documents", "classify_complexity", "retrieve"] and again["interrupted"]
    assert [m[-1].content for m in script.prompts["complexity"]][-1].endswith("트러플 크림 파스타 가격")
    assert any("트러플" in d["text"] for d in again["interrupt"]["documents"])


def test_invalid_review_decision_is_refused(s):
    from core.run.runner import RunInputError

    ctx = _review_ctx(s, Script(router={"route": "restaurant_menu"}))
    paused = run("adaptive", STEAK, s, ctx=ctx, review=True)
    with pytest.raises(RunInputError):
        resume(paused["thread_id"], {"action": "maybe"}, s, ctx=ctx)
    with pytest.raises(RunInputError):
        resume(paused["thread_id"], {"action": "edit", "question": "  "}, s, ctx=ctx)
