"""Self-RAG: every router edge, the fan-out search, the two budgets and how the run ends."""

import pytest

from support.helpers import kinds, run_script, web_ok
from support.workflow_script import Script

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"
YES, NO = {"relevant": "yes"}, {"relevant": "no"}


@pytest.fixture
def s(sample_settings):
    return sample_settings.with_(k=2, max_rewrites=2, max_generations=2)


def good(**overrides):
    """A script on the happy path; overrides change one role."""
    base = dict(retrieval={"kind": "lookup"}, sources={"sources": ["restaurant_menu"]}, relevance=YES,
                answer="시그니처 스테이크는 ₩35,000입니다 [1].", grounded={"grounded": "yes"},
                usefulness={"useful": "yes", "score": 5}, rewrite={"question": "시그니처 스테이크 가격"})
    base.update(overrides)
    return Script(**base)


def test_no_retrieval_needed_answers_directly(s):
    r = run_script("self_rag", "안녕하세요?", s, good(retrieval={"kind": "small_talk"}, direct="안녕하세요!"))
    assert r["path"] == ["contextualize", "decide_retrieval", "direct_answer"]
    assert r["termination_reason"] == "direct_answer"


@pytest.mark.parametrize("reply, path_step, reason", [
    ({"kind": "general_knowledge"}, "direct_answer", "no retrieval needed: general knowledge"),
    ({"kind": "lookup"}, "select_sources", "retrieval needed: lookup"),
    ("yes", "select_sources", "retrieving to be safe"),  # not a kind: unusable, so look things up
])
def test_the_retrieval_decision_names_the_kind_of_message_that_decided_it(s, reply, path_step, reason):
    r = run_script("self_rag", "프랑스의 수도는?", s, good(retrieval=reply, direct="파리입니다."))
    assert r["path"][2] == path_step
    [decision] = [e for e in r["trace"] if e.get("grader") == "retrieval_need"]
    assert reason in decision["reason"]


def test_relevant_grounded_useful_answer_is_accepted(s):
    script = good()
    r = run_script("self_rag", STEAK, s, script)
    assert r["path"] == ["contextualize", "decide_retrieval", "select_sources", "multi_search", "grade_documents",
                         "generate", "grade_hallucination", "grade_usefulness", "accept"]
    assert r["termination_reason"] == "accepted"
    assert r["termination_message"] == "answer accepted: grounded and useful (5/5)"
    assert script.count("relevance") == 2  # every document graded
    # 2 relevance + hallucination + usefulness, then the claim check of the accepted answer
    assert [e["grader"] for e in kinds(r, "verdict")] == ["relevance", "relevance", "hallucination", "usefulness", "claims"]


def test_fan_out_searches_only_the_selected_sources_in_parallel(s):
    web = web_ok("Cabernet Sauvignon goes well with steak.")
    chosen = good(sources={"sources": ["restaurant_wine", "web", "restaurant_wine"]})
    r = run_script("self_rag", "스테이크와 어울리는 와인", s, chosen, web=web)
    searched = [e["target"] for e in r["trace"] if e["node"] == "search_source"]
    assert sorted(searched) == ["restaurant_wine", "web"]  # duplicates removed, menu not searched
    assert len(web.queries) == 1
    assert len([e for e in r["trace"] if e.get("grader") == "relevance"]) == 3  # 2 wine + 1 web, all graded


def test_no_relevant_documents_rewrites_and_results_do_not_pile_up(s):
    script = good(relevance=[NO, NO, YES])
    r = run_script("self_rag", STEAK, s, script)
    rewrites = kinds(r, "rewrite")
    assert len(rewrites) == 1 and "no relevant documents: rewrite 1 of 2" in rewrites[0]["reason"]
    assert rewrites[0]["counters"]["relevance_retries"] == 1
    [retry] = kinds(r, "retry")  # the loop says which budget it spent, and why
    assert (retry["grader"], retry["verdict"], retry["reason"]) == ("rewrites", "rewrite 1 of 2", "no relevant documents")
    assert script.count("relevance") == 4  # 2 per round: the fan-in list was reset between rounds
    assert r["termination_reason"] == "accepted"
    second_round = [e for e in r["trace"] if e["node"] == "search_source"][1]
    assert second_round["reason"] == "시그니처 스테이크 가격"  # the rewritten query was searched


def test_never_relevant_gives_up_after_the_rewrite_budget(s):
    script = good(relevance=NO)
    r = run_script("self_rag", STEAK, s, script)
    assert script.count("rewrite") == 2 and script.count("answer") == 0
    assert r["termination_reason"] == "no_relevant_documents"
    assert r["termination_message"] == "gave up after 2 of 2 rewrite(s): no relevant documents"
    assert "근거가 부족" in r["answer"]


def test_hallucination_regenerates_with_a_not_grounded_instruction(s):
    script = good(grounded=[{"grounded": "no"}, {"grounded": "yes"}],
                  answer=["스테이크는 ₩50,000이고 디저트가 무료입니다.", "시그니처 스테이크는 ₩35,000입니다 [1]."])
    r = run_script("self_rag", STEAK, s, script)
    assert script.count("answer") == 2
    assert "not supported by the documents" in script.prompts["answer"][1][0].content
    assert r["termination_reason"] == "accepted" and r["answer"].endswith("₩35,000입니다 [1].")
    [retry] = kinds(r, "retry")
    assert (retry["grader"], retry["verdict"]) == ("regenerations", "regeneration 1 of 2")
    assert retry["reason"] == "it stated facts the documents do not contain" and retry["counters"]["generations"] == 2


def test_always_hallucinating_ends_with_not_enough_evidence(s):
    script = good(grounded={"grounded": "no"})
    r = run_script("self_rag", STEAK, s, script)
    assert script.count("answer") == 3  # first answer + max_generations regenerations
    assert r["termination_reason"] == "not_enough_evidence"
    assert "no answer was grounded" in r["termination_message"]


def test_usefulness_three_regenerates(s):
    script = good(usefulness=[{"useful": "yes", "score": 3}, {"useful": "yes", "score": 5}])
    r = run_script("self_rag", STEAK, s, script)
    assert script.count("answer") == 2 and script.count("rewrite") == 0
    assert r["termination_reason"] == "accepted"


def test_usefulness_four_accepts_as_the_grader_prompt_defines_useful(s):
    script = good(usefulness=[{"useful": "yes", "score": 4}])
    r = run_script("self_rag", STEAK, s, script)
    assert script.count("answer") == 1 and r["termination_reason"] == "accepted"
    assert "grounded and useful (4/5)" in r["termination_message"]
    assert [e["verdict"] for e in r["trace"] if e.get("grader") == "usefulness"] == ["useful (4/5)"]


def test_usefulness_one_or_two_rewrites_and_retrieves_again(s):
    script = good(usefulness=[{"useful": "no", "score": 2}, {"useful": "yes", "score": 5}])
    r = run_script("self_rag", STEAK, s, script)
    assert script.count("rewrite") == 1 and r["path"].count("multi_search") == 2
    assert "answer not useful enough (2/5)" in kinds(r, "rewrite")[0]["reason"]
    # the verdict agrees with the score that decided (the model's own "yes"/"no" is not shown)
    usefulness = [e["verdict"] for e in r["trace"] if e.get("grader") == "usefulness"]
    assert usefulness == ["not useful (2/5)", "useful (5/5)"]


def test_budget_exhausted_returns_the_best_grounded_answer(s):
    script = good(usefulness=[{"useful": "yes", "score": 3}, {"useful": "yes", "score": 3}, {"useful": "yes", "score": 3}],
                  answer=["best answer [1]", "worse answer", "worst answer"])
    r = run_script("self_rag", STEAK, s, script)
    assert r["termination_reason"] == "retry_budget_exhausted"
    assert r["answer"] == "best answer [1]"
    assert "returned the best grounded answer (3/5)" in r["termination_message"]
    assert "2 of 2 regeneration(s)" in r["termination_message"]  # counts regenerations, as the budget does


def test_grader_parse_failure_is_recorded_and_keeps_the_document(s):
    script = good(relevance="not json at all")
    r = run_script("self_rag", STEAK, s, script)
    errors = [e for e in r["trace"] if e["kind"] == "error" and e["grader"] == "relevance"]
    assert len(errors) == 2 and all(e["verdict"] == "yes" for e in errors)
    assert script.count("relevance") == 4  # each retried once
    assert r["termination_reason"] == "accepted"
