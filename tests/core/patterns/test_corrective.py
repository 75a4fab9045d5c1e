"""Corrective RAG: each grading outcome, knowledge refinement, and the web fallback edges."""

import pytest

from support.helpers import kinds, run_script, web_down, web_ok
from support.workflow_script import Script, role_of

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"


@pytest.fixture
def s(sample_settings):
    return sample_settings.with_(k=2)


def crag(*grades):
    """CRAG verdicts in document order (grading runs concurrently, so pick by document text)."""
    return [{"grade": g, "confidence": 0.9} for g in grades]


def _sentences(messages):
    return [line for line in messages[-1].content.splitlines() if "<document>" in line]


def price_strips_only(messages):
    """Strip grader: only sentences about a price are relevant (one verdict per numbered sentence)."""
    return {"verdicts": ["yes" if "가격" in line else "no" for line in _sentences(messages)]}


def no_strips(messages):
    return {"verdicts": ["no"] * len(_sentences(messages))}


def test_correct_documents_are_refined_into_strips_and_answered(s):
    script = Script(crag=crag("correct"), strip=price_strips_only, answer="₩35,000 [1].")
    r = run_script("corrective", STEAK, s, script)
    assert r["path"] == ["contextualize", "retrieve", "grade_documents", "refine_knowledge", "generate"]
    assert r["termination_reason"] == "answered"
    refined = [e for e in r["trace"] if e["node"] == "refine_knowledge"]
    assert len(refined) == 2
    assert all(e["verdict"].startswith("kept 1 of") for e in refined)
    assert all("dropped: " in e["reason"] for e in refined)
    prompt = script.prompts["answer"][0][0].content
    assert "가격: ₩" in prompt and "설명:" not in prompt  # only the kept strips reach the answer
    assert {src["source"] for src in r["sources"]} == {"restaurant_menu.md"}  # strips cite their documents


def test_ambiguous_refines_and_adds_a_web_supplement(s):
    web = web_ok("A steak house menu lists sirloin at 35,000 won.")
    script = Script(crag=crag("ambiguous"), strip=price_strips_only, web_rewrite={"question": "스테이크 가격 메뉴"},
                    answer="₩35,000 [1].")
    r = run_script("corrective", STEAK, s, script, web=web)
    assert r["path"][3:] == ["refine_knowledge", "rewrite_for_web", "web_search", "generate"]
    assert web.queries == ["스테이크 가격 메뉴"]
    assert any(src["url"] for src in r["sources"]) and any(src["source"] == "restaurant_menu.md" for src in r["sources"])
    assert r["termination_reason"] == "answered" and "web result" in r["termination_message"]


def test_all_incorrect_goes_straight_to_the_web(s):
    web = web_ok("Seoul weather: sunny, 12°C.")
    script = Script(crag=crag("incorrect"), web_rewrite={"question": "Question: 서울 날씨 오늘"}, answer="맑음 [1].")
    r = run_script("corrective", "오늘 서울 날씨는?", s, script, web=web)
    assert r["path"] == ["contextualize", "retrieve", "grade_documents", "rewrite_for_web", "web_search", "generate"]
    assert web.queries == ["서울 날씨 오늘"]  # a short query, the echoed label removed
    assert script.count("strip") == 0
    assert [src["url"] for src in r["sources"]] == ["https://example.org/0"]


def test_all_incorrect_and_web_unavailable_says_evidence_is_insufficient(s):
    script = Script(crag=crag("incorrect"), web_rewrite={"question": "서울 날씨"})
    r = run_script("corrective", "오늘 서울 날씨는?", s, script, web=web_down)
    assert r["termination_reason"] == "web_unavailable"
    assert "no strip survived" in r["termination_message"]
    assert "근거가 부족" in r["answer"] and script.count("answer") == 0


def test_ambiguous_with_web_unavailable_answers_from_the_surviving_strips(s):
    script = Script(crag=crag("ambiguous"), strip=price_strips_only, web_rewrite={"question": "스테이크 가격"},
                    answer="₩35,000 [1].")
    r = run_script("corrective", STEAK, s, script, web=web_down)
    assert r["termination_reason"] == "web_unavailable"
    assert r["termination_message"].endswith("answered from the 2 strip(s) that survived")
    assert r["answer"] == "₩35,000 [1]."


def test_correct_but_no_strip_survives_falls_back_to_the_web(s):
    web = web_ok("Steak: 35,000 won.")
    script = Script(crag=crag("correct"), strip=no_strips, web_rewrite={"question": "steak price"},
                    answer="35,000 [1].")
    r = run_script("corrective", STEAK, s, script, web=web)
    assert r["path"][3:] == ["refine_knowledge", "rewrite_for_web", "web_search", "generate"]
    assert kinds(r, "rewrite")[0]["reason"] == "no strip survived refinement"


def test_grades_run_concurrently_not_one_after_another(s):
    import threading

    from core.run.runner import run
    from core.runtime.context import make_context
    from support.scripted import ScriptedChatModel

    script = Script(crag=crag("incorrect"), web_rewrite={"question": "q"})
    lock, in_flight, most, together = threading.Lock(), [0], [0], threading.Event()

    def gate(messages) -> float:  # before its reply, each grade waits (at most 5 s) until a second one is under way
        if role_of(messages) != "crag":
            return 0.0
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
            if in_flight[0] >= 2:
                together.set()
        together.wait(timeout=5)
        with lock:
            in_flight[0] -= 1
        return 0.0

    model = ScriptedChatModel(responder=script, delay=gate)
    run("corrective", STEAK, s.with_(k=4), ctx=make_context(s.with_(k=4), llm=model, grader=model, web=web_down))
    assert most[0] >= 2  # one after another, no grade would ever have met another


def test_strip_verdicts_of_the_wrong_length_fall_back_to_keeping_every_strip(s):
    script = Script(crag=crag("correct"), strip={"verdicts": ["yes"]}, answer="₩35,000 [1].")
    r = run_script("corrective", STEAK, s, script)
    assert script.count("strip") == 4  # two documents, each retried once
    refined = [e for e in r["trace"] if e["node"] == "refine_knowledge"]
    assert all(e["kind"] == "error" and "kept every strip" in e["reason"] for e in refined)
    assert r["termination_reason"] == "answered"
