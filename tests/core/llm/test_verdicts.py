"""Verdicts read from probabilities: each threshold branch, the text fallback, calibration, and the CLI."""

import json
import math

import pytest
from langchain_core.documents import Document

from core.llm import graders, verdicts
from core.llm.thresholds import GENERIC, Thresholds, parse_overrides, thresholds_for
from core.run.outcome import summary
from core.run.runner import run
from core.runtime.context import make_context
from core.studio import calibrate
from support.helpers import run_scripted_cli, web_down, web_ok
from support.scripted import ProbabilityChatModel, ScriptedChatModel
from support.workflow_script import Script, judged_document, role_of

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"
DOCS = [Document(page_content="시그니처 스테이크: 가격 ₩35,000", metadata={"source": "menu.md"}),
        Document(page_content="주차: 건물 지하 2시간 무료", metadata={"source": "parking.md"}),
        Document(page_content="오늘의 수프: 양송이 수프 ₩9,000", metadata={"source": "soup.md"})]


def document_text(messages) -> str:
    """The text of the document a grader judges, without the question."""
    judged = judged_document(messages)
    return judged.split("<document>", 1)[-1].split("</document>", 1)[0]


def by_document(p_of: dict):
    """Probabilities per judged document: p(yes) = p_of[the first key found in the judged text]."""
    def probabilities(messages, words):
        text = document_text(messages)
        p = next(v for k, v in p_of.items() if k in text)
        return {"yes": p, "no": 1 - p} if words == ["yes", "no"] else None
    return probabilities


def test_a_verdict_is_yes_at_or_above_its_threshold_and_no_below():
    model = ProbabilityChatModel(probabilities=by_document({"스테이크": 0.81, "주차": 0.62, "수프": 0.2}))
    th = Thresholds(values={**GENERIC, "relevance": 0.62})
    outcomes = graders.grade_documents(model, STEAK, DOCS, 1, th)
    assert [o.value.relevant for o in outcomes] == ["yes", "yes", "no"]
    assert all(o.method == "probability" for o in outcomes)
    assert [round(o.p, 2) for o in outcomes] == [0.81, 0.62, 0.2]
    assert outcomes[0].reading() == "0.81 ≥ 0.62" and outcomes[2].reading() == "0.20 < 0.62"
    assert outcomes[0].trace_fields() == {"method": "probability", "p": 0.81, "threshold": 0.62}
    # one word asked for, nothing else: no JSON schema in the prompt
    assert model.calls[0][-1].content.endswith("Answer with one word: yes or no.")


def test_a_document_far_below_the_questions_best_is_not_relevant_though_above_the_floor():
    model = ProbabilityChatModel(probabilities=by_document({"스테이크": 0.9, "주차": 0.7, "수프": 0.3}))
    floor_only = Thresholds(values={**GENERIC, "relevance": 0.5})
    assert [o.value.relevant for o in graders.grade_documents(model, STEAK, DOCS, 1, floor_only)] == ["yes", "yes", "no"]
    relative = Thresholds(values={**GENERIC, "relevance": 0.5, "relevance_ratio": 0.5})
    outcomes = graders.grade_documents(model, STEAK, DOCS, 1, relative)
    # half the best one's odds (9): 4.5, p 0.818; the parking notice at 0.7 is dropped, the steak kept
    assert [o.value.relevant for o in outcomes] == ["yes", "no", "no"]
    assert outcomes[1].reading() == "0.70 < 0.82" and outcomes[0].trace_fields()["threshold"] == 0.818
    # where the best is itself unsure, the floor decides: 0.55 is within half of 0.6's odds and above 0.5
    unsure = ProbabilityChatModel(probabilities=by_document({"스테이크": 0.6, "주차": 0.55, "수프": 0.45}))
    outcomes = graders.grade_documents(unsure, STEAK, DOCS, 1, relative)
    assert [o.value.relevant for o in outcomes] == ["yes", "yes", "no"] and outcomes[2].reading() == "0.45 < 0.50"


def test_crag_turns_one_score_into_three_grades_with_two_thresholds():
    model = ProbabilityChatModel(probabilities=by_document({"스테이크": 0.9, "주차": 0.5, "수프": 0.1}))
    th = Thresholds(values={**GENERIC, "crag": (0.3, 0.7)})
    outcomes = graders.crag_grade(model, STEAK, DOCS, 1, th)
    assert [o.value.grade for o in outcomes] == ["correct", "ambiguous", "incorrect"]
    assert outcomes[1].reading() == "0.30 ≤ 0.50 < 0.70" and outcomes[1].threshold == [0.3, 0.7]
    assert [o.value.confidence for o in outcomes] == [0.9, 0.5, 0.1]


def test_a_provider_without_probabilities_gets_the_written_verdict_and_the_trace_says_so():
    script = Script(relevance={"relevant": "yes"})
    model = ScriptedChatModel(responder=script)
    outcomes = graders.grade_documents(model, STEAK, DOCS[:2], 1)
    assert [o.value.relevant for o in outcomes] == ["yes", "yes"]
    assert [o.trace_fields() for o in outcomes] == [{"method": "text"}] * 2
    assert len(script.log) == 2  # no extra call was spent asking for probabilities


def test_a_reply_without_probabilities_falls_back_to_the_written_verdict():
    script = Script(relevance={"relevant": "no"})
    model = ProbabilityChatModel(responder=script, probabilities=lambda messages, words: None)
    outcome = graders.grade_documents(model, STEAK, DOCS[:1], 1)[0]
    assert outcome.value.relevant == "no" and outcome.method == "text"


def test_usefulness_is_p_yes_and_its_score_routes_a_clear_miss_to_search_again():
    def probabilities(messages, words):
        assert words == ["yes", "no"] and "another kind of thing" in messages[-1].content
        return {"yes": p, "no": 1 - p}

    model = ProbabilityChatModel(probabilities=probabilities)
    p = 0.7
    outcome = graders.grade_usefulness(model, STEAK, "₩35,000입니다.", Thresholds(values={**GENERIC, "useful": 0.6}))
    assert outcome.value.useful == "yes" and outcome.value.score == 4 and round(outcome.p, 2) == 0.7
    outcome = graders.grade_usefulness(model, STEAK, "₩35,000입니다.", Thresholds(values={**GENERIC, "useful": 0.8}))
    assert outcome.value.useful == "no" and outcome.value.score == 3  # the score stays on the decision's side
    p = 0.1  # a decline or another question's answer: written again from the same documents would not help
    outcome = graders.grade_usefulness(model, STEAK, "문서에 없습니다.", Thresholds(values={**GENERIC, "useful": 0.6}))
    assert outcome.value.useful == "no" and outcome.value.score == 1


def test_usefulness_without_probabilities_is_the_written_score():
    script = Script(usefulness={"useful": "yes", "score": 5})
    outcome = graders.grade_usefulness(ScriptedChatModel(responder=script), STEAK, "₩35,000입니다.")
    assert (outcome.value.useful, outcome.value.score, outcome.method) == ("yes", 5, "text")
    assert "Score it from 1 to 5" in script.prompts["usefulness"][0][-1].content


def test_retrieve_or_not_thresholds_p_lookup():
    model = ProbabilityChatModel(probabilities=lambda m, words: {"lookup": 0.4, "small_talk": 0.5,
                                                                  "general_knowledge": 0.1})
    low = graders.needs_retrieval(model, "안녕하세요", [], Thresholds(values={**GENERIC, "retrieve": 0.3}))
    high = graders.needs_retrieval(model, "안녕하세요", [], Thresholds(values={**GENERIC, "retrieve": 0.5}))
    assert (low.value.retrieve, low.value.kind) == ("yes", "lookup")
    assert (high.value.retrieve, high.value.kind) == ("no", "small_talk")


def test_openai_style_logprobs_are_read_from_the_first_token():
    top = [{"token": "yes", "logprob": math.log(0.6)}, {"token": " Yes", "logprob": math.log(0.2)},
           {"token": "no", "logprob": math.log(0.1)}, {"token": "The", "logprob": math.log(0.1)}]
    reading = verdicts.reading_from_logprobs(top, ["yes", "no"])
    assert round(reading.p("yes"), 3) == round(0.8 / 0.9, 3) and round(reading.mass, 2) == 0.9
    assert verdicts.reading_from_logprobs([{"token": "The", "logprob": 0.0}], ["yes", "no"]) is None


def test_openai_logprobs_are_read_over_http_and_an_endpoint_without_them_is_remembered():
    from core.config import load_settings
    from core.llm.models import get_chat_model
    from support.fake_openai import FakeOpenAI

    verdicts.forget_refusals()

    def logprobs(messages):
        p = 0.9 if "시그니처" in messages[-1]["content"] else 0.05
        return [{"token": "yes", "logprob": math.log(p)}, {"token": "no", "logprob": math.log(1 - p)}]

    def openai_at(url):
        settings = load_settings(provider="openai", model="local-model", openai_base_url=url,
                                 openai_api_key="sk-test-0123456789")
        return get_chat_model(settings)

    with FakeOpenAI(lambda messages: '{"relevant": "yes"}', logprobs=logprobs) as server:
        outcomes = graders.grade_documents(openai_at(server.url), STEAK, DOCS[:2], 1)
        assert [o.value.relevant for o in outcomes] == ["yes", "no"]
        assert all(o.method == "probability" for o in outcomes)
        assert all(r.get("logprobs") and 1 in (r.get("max_tokens"), r.get("max_completion_tokens"))
                   for r in server.requests)  # one token decoded
    with FakeOpenAI(lambda messages: '{"relevant": "no"}') as plain:
        model = openai_at(plain.url)
        first = graders.grade_documents(model, STEAK, DOCS[:1], 1)[0]
        asked = len(plain.requests)
        second = graders.grade_documents(model, STEAK, DOCS[:1], 1)[0]
        assert first.method == second.method == "text" and second.value.relevant == "no"
        assert len(plain.requests) - asked == 1  # the second grade did not ask for probabilities again
    with FakeOpenAI(lambda messages: '{"relevant": "no"}', logprobs="error") as failing:
        outcome = graders.grade_documents(openai_at(failing.url), STEAK, DOCS[:1], 1)[0]
        assert outcome.method == "text" and outcome.value.relevant == "no" and not outcome.fallback
    with FakeOpenAI(lambda messages: '{"relevant": "no"}', logprobs=logprobs) as compat:
        settings = load_settings(provider="openai-compatible", model="local-model", compat_base_url=compat.url)
        outcome = graders.grade_documents(get_chat_model(settings), STEAK, DOCS[:1], 1)[0]
        assert outcome.method == "text" and not any(r.get("logprobs") for r in compat.requests)
    verdicts.forget_refusals()


# ---------------------------------------------------------------- the patterns decide by p


def probability_run(pattern, settings, p_of: dict, web=web_down, **replies):
    script = Script(**replies)
    model = ProbabilityChatModel(responder=script, probabilities=by_role(p_of))
    ctx = make_context(settings, llm=model, grader=model, web=web)
    return run(pattern, STEAK, settings, ctx=ctx)


def by_role(p_of: dict):
    """p(yes) by the grader's role; relevance by the judged document's text (the signature steak's: 0.9)."""
    def probabilities(messages, words):
        role = role_of(messages)
        if words != ["yes", "no"]:
            return p_of[f"{role}_words"]
        if role == "relevance":
            p = 0.9 if "시그니처" in document_text(messages) else p_of["relevance"]
        else:
            p = p_of[role]
        return {"yes": p, "no": 1 - p}
    return probabilities


def test_corrective_grades_each_document_by_where_its_p_falls_in_the_band(sample_settings):
    s = sample_settings.with_(k=3, grader_thresholds="crag=0.3:0.7")
    r = probability_run("corrective", s, {"relevance": 0.05, "strip": 0.9}, answer="₩35,000 [1].")
    grades = [e for e in r["trace"] if e.get("grader") == "crag" and e["kind"] == "verdict"]
    assert grades and all(e["method"] == "probability" and e["threshold"] == [0.3, 0.7] for e in grades)
    steak = [e for e in grades if e["p"] >= 0.7]
    assert all(e["verdict"] == "correct" for e in steak)
    assert all(e["verdict"] == "incorrect" for e in grades if e["p"] < 0.3)


def test_corrective_routes_to_the_web_when_every_p_is_below_the_lower_bound(sample_settings):
    s = sample_settings.with_(k=2, grader_thresholds="crag=0.3:0.7")
    web = web_ok("Parking: two hours free.")
    script = Script(web_rewrite={"question": "주차"}, answer="2시간 무료 [1].")
    model = ProbabilityChatModel(responder=script, probabilities=lambda m, w: {"yes": 0.02, "no": 0.98})
    ctx = make_context(s, llm=model, grader=model, web=web)
    r = run("corrective", "주차는 몇 시간 무료인가요?", s, ctx=ctx)
    assert r["path"][3:] == ["rewrite_for_web", "web_search", "generate"]
    route = next(e for e in r["trace"] if e.get("grader") == "crag" and e["kind"] == "route")
    assert route["verdict"] == "incorrect"


def test_self_rag_drops_the_documents_below_the_threshold(sample_settings):
    s = sample_settings.with_(k=3, grader_thresholds="relevance=0.5,grounded=0.5,useful=0.5,retrieve=0.5")
    script = Script(sources={"sources": ["restaurant_menu"]}, answer="시그니처 스테이크는 ₩35,000입니다 [1].")
    p_of = {"relevance": 0.1, "grounded": 0.9, "usefulness": 0.9,
            "retrieval_words": {"lookup": 0.9, "small_talk": 0.1}}
    model = ProbabilityChatModel(responder=script, probabilities=by_role(p_of))
    ctx = make_context(s, llm=model, grader=model, web=web_down)
    r = run("self_rag", STEAK, s, ctx=ctx)
    grades = [e for e in r["trace"] if e.get("grader") == "relevance" and e["kind"] == "verdict"]
    assert any(e["verdict"] == "no" for e in grades) and any(e["verdict"] == "yes" for e in grades)
    assert all((e["p"] >= 0.5) == (e["verdict"] == "yes") and e["threshold"] == 0.5 for e in grades)
    kept = next(e for e in r["trace"] if e["node"] == "grade_hallucination")
    assert kept["method"] == "probability" and kept["p"] == 0.9
    assert r["termination_reason"] == "accepted"
    # one token decoded by design, finish reason "length": not a reply cut off by the token limit
    assert not [e for e in r["trace"] if "cut off" in (e.get("reason") or "")]
    assert "truncated" not in summary(r) and not any(n.get("truncated") for n in r["usage"].values())


def test_self_rag_writes_an_answer_of_the_wrong_kind_again_and_accepts_the_next_one(sample_settings):
    """Two steaks for "which wine suits a steak": grounded, but not what was asked (issue 51, item 5)."""
    s = sample_settings.with_(k=3, grader_thresholds="relevance=0.5,grounded=0.5,useful=0.55,retrieve=0.5")
    dishes = "1. 그릴드 연어 스테이크 2. 시그니처 스테이크 [1]"
    wines = "시그니처 스테이크에는 카스텔로 알바 바롤로가 어울립니다 [1]."
    script = Script(sources={"sources": ["restaurant_menu"]}, answer=[dishes, wines])
    p_of = {"relevance": 0.9, "grounded": 0.9, "retrieval_words": {"lookup": 0.9, "small_talk": 0.1}}

    def probabilities(messages, words):
        if words == ["yes", "no"] and role_of(messages) == "usefulness":
            p = 0.8 if "바롤로" in messages[-1].content else 0.45
            return {"yes": p, "no": 1 - p}
        return by_role(p_of)(messages, words)

    model = ProbabilityChatModel(responder=script, probabilities=probabilities)
    r = run("self_rag", "스테이크와 어울리는 와인을 추천해주세요", s, ctx=make_context(s, llm=model, grader=model, web=web_down))
    grades = [e for e in r["trace"] if e.get("grader") == "usefulness"]
    assert [e["verdict"] for e in grades] == ["partly useful (3/5)", "useful (4/5)"]
    assert all(e["method"] == "probability" and e["threshold"] == 0.55 for e in grades)
    assert "did not answer what was asked" in script.prompts["answer"][1][0].content + script.prompts["answer"][1][-1].content
    assert r["termination_reason"] == "accepted" and "바롤로" in r["answer"]


# ---------------------------------------------------------------- thresholds and calibration


def test_threshold_overrides_are_checked_in_one_line():
    assert parse_overrides("relevance=0.6, crag=0.2:0.7") == {"relevance": 0.6, "crag": (0.2, 0.7)}
    for bad in ("relevance=1.5", "crag=0.8:0.2", "speed=0.5", "relevance", "grounded=0.1:0.2", "relevance=nan",
                "crag=nan:0.5", "relevance=-inf", "relevance=" + "9" * 5000):  # hostile sidebar values (issue 53)
        with pytest.raises(ValueError) as err:
            parse_overrides(bad)
        assert "\n" not in str(err.value)


def test_a_malformed_thresholds_setting_stops_the_command_line_in_one_line(sample_data_dir):
    from support.helpers import run_cli

    done = run_cli("ask", "--pattern", "basic", STEAK, data_dir=sample_data_dir,
                   env={"RAG_GRADER_THRESHOLDS": "relevance=2"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: RAG_GRADER_THRESHOLDS: threshold relevance='2'")


def test_a_saved_calibration_is_used_and_settings_override_it(sample_settings):
    calibrate.save(sample_settings, {"model": "m1", "thresholds": {"relevance": 0.7, "crag": [0.2, 0.8]}})
    th = thresholds_for(sample_settings, "m1")
    assert th.cut("relevance") == 0.7 and th.band("crag") == (0.2, 0.8) and th.sources["relevance"] == "calibrated"
    assert thresholds_for(sample_settings, "other").cut("relevance") == GENERIC["relevance"]
    over = thresholds_for(sample_settings.with_(grader_thresholds="relevance=0.4"), "m1")
    assert over.cut("relevance") == 0.4 and over.sources["relevance"] == "settings"


def test_calibration_finds_the_threshold_that_separates_a_labelled_set():
    scores = [(0.9, True), (0.8, True), (0.75, True), (0.4, False), (0.3, False), (0.72, False)]
    t = calibrate.fit_threshold(scores)
    assert 0.72 < t <= 0.75
    assert calibrate.rates(scores, t) == {"positives": {"hits": 3, "of": 3, "rate": 1.0},
                                          "negatives": {"hits": 3, "of": 3, "rate": 1.0}}
    assert calibrate.auc(scores) == 1.0
    lower, upper = calibrate.fit_band(scores)
    assert lower <= t <= upper and lower <= 0.75 and upper > 0.72


def test_the_band_calls_at_most_two_relevant_documents_of_28_incorrect_and_no_fewer_irrelevant_ones_than_that_allows():
    positives = [(0.30 + i / 50, True) for i in range(28)]  # 0.30 ... 0.84: overlapping the negatives
    negatives = [(0.10 + i / 40, False) for i in range(21)]  # 0.10 ... 0.60
    lower, upper = calibrate.fit_band(positives + negatives)
    assert sum(p < lower for p, _ in positives) == 2  # the allowance, used: the bound sits as high as it may
    assert sum(n < lower for n, _ in negatives) == 10 and lower < calibrate.fit_threshold(positives + negatives) <= upper


def test_pairs_written_out_refit_to_the_band_calibrate_fits():
    # a relevant document at p 0.57759 written as 0.5776 gave a lower bound of 0.5776, which calls it incorrect
    positives = [0.40, 0.45, 0.57759] + [0.61 + i / 100 for i in range(25)]  # the third lowest sets the bound
    negatives = [0.30 + i / 100 for i in range(15)] + [0.58, 0.585, 0.59, 0.595, 0.60]
    rows = [(0, p, True) for p in positives] + [(1, p, False) for p in negatives]
    pairs = calibrate.Pairs(scores={"crag": rows})
    items = [{"question": "q0", "answerable": True, "facts": ["x"], "sources": ["a"]},
             {"question": "q1", "answerable": True, "facts": ["y"], "sources": ["a"]}]
    written = calibrate.pair_rows(pairs, items, ["a", "b"])
    refit = calibrate.fit_band([(r["p"], r["positive"]) for r in written])
    assert refit == calibrate.fit_band([(p, label) for _, p, label in rows])
    assert sum(p < refit[0] for p in positives) == 2  # the allowance, not one more


def test_relevance_is_fitted_against_each_questions_best_document_where_one_floor_cannot_separate():
    # the first question's irrelevant document (0.7) is graded above the second's relevant one (0.6)
    rows = [(0, 0.9, True), (0, 0.7, False), (1, 0.6, True), (1, 0.3, False), (2, 0.8, True), (2, 0.75, True)]
    floor_alone = calibrate.relevance_rates(rows, 0.6, 0.0)
    assert floor_alone["positives"]["rate"] == 1.0 and floor_alone["negatives"]["rate"] == 0.5
    report = calibrate.report_grader("relevance", rows)
    assert report["fitted"]["positives"]["rate"] == 1.0 and report["fitted"]["negatives"]["rate"] == 1.0
    assert 0 < report["ratio"] < 1 and report["threshold"] <= 0.6
    from core.cli.grading import render

    shown = render({"model": "m", "questions": 3, "seconds": 1.0, "graders": {"relevance": report}})
    assert f"threshold {report['threshold']}  ratio to the best {report['ratio']}" in shown
    # a set one floor separates keeps no relative rule
    assert calibrate.fit_relevance([(0, 0.9, True), (0, 0.4, False), (1, 0.7, True), (1, 0.2, False)])[1] == 0.0


def test_calibration_refuses_a_set_without_negatives_or_positives():
    with pytest.raises(calibrate.CalibrationError, match="no negatives among 2 labelled pairs"):
        calibrate.fit_threshold([(0.9, True), (0.8, True)])
    with pytest.raises(calibrate.CalibrationError, match="no positives"):
        calibrate.fit_threshold([(0.1, False)])


def test_calibration_over_the_samples_with_a_model_that_ranks_well(sample_settings):
    from core.knowledge.base import KnowledgeBase
    from core.studio.question_set import load_question_set

    kb = KnowledgeBase(sample_settings)
    items = [i for i in load_question_set() if i["category"] in ("menu", "wine", "general")]

    def probabilities(messages, words):  # a model that is sure of a fact's document and unsure of the rest
        text = messages[-1].content + messages[0].content
        if words == ["yes", "no"]:
            p = 0.8 if any(f in text for i in items for f in i["facts"] if i["question"] in text) else 0.3
            return {"yes": p, "no": 1 - p}
        if words[0] == "lookup":
            return {"lookup": 0.2 if "Message: " in text and "?" not in text.split("Message: ")[-1] else 0.9,
                    "small_talk": 0.1, "general_knowledge": 0.1}
        return {w: 1 / len(words) for w in words}

    model = ProbabilityChatModel(probabilities=probabilities)
    pairs: list[dict] = []
    result = calibrate.calibrate(sample_settings, model, kb, items, kb.names(), pairs_out=pairs)
    relevance = result["graders"]["relevance"]
    read = [r for r in pairs if r["grader"] == "relevance"]
    assert len(read) == relevance["pairs"] and sum(r["positive"] for r in read) == relevance["positives"]
    assert {r["question"] for r in read} <= {i["question"] for i in items} and all(0 <= r["p"] <= 1 for r in read)
    assert relevance["auc"] > 0.9 and 0.3 < relevance["threshold"] <= 0.8 and "relevance_ratio" in result["thresholds"]
    assert relevance["fitted"]["negatives"]["rate"] > 0.9 and "held_out" in relevance
    lower, upper = result["thresholds"]["crag"]
    assert lower <= upper


def test_calibration_fits_the_choosers_thresholds_on_both_sides_of_the_sets_kinds_and_sources(sample_settings):
    """kind and tool are read as the graders are: a reading whose top choice is right is a positive, a wrong one a
    negative, and the threshold falls between the sure right readings and the unsure wrong ones."""
    from core.knowledge.base import KnowledgeBase
    from core.studio.question_set import load_question_set

    kb = KnowledgeBase(sample_settings)
    items = [i for i in load_question_set() if i["category"] in ("menu", "wine", "general")]
    asked = {i["question"]: i for i in items}

    def probabilities(messages, words):
        text = "\n".join(str(m.content) for m in messages)
        item = next((i for q, i in asked.items() if q in text), None)
        if words == list(graders.QUESTION_KINDS):  # sure of a lookup's kind, unsure (and wrong) of small talk
            return {"single": 0.9, "small_talk": 0.1} if item and item["sources"] else {"single": 0.55, "small_talk": 0.45}
        if words[0] == "lookup":
            return {"lookup": 0.9, "small_talk": 0.05, "general_knowledge": 0.05}
        if "restaurant_wine" in words:  # sure of the menu for a menu question; leaning to the menu for a wine one
            menu = item is not None and item["category"] == "menu"
            return {"restaurant_menu": 0.9 if menu else 0.5, "restaurant_wine": 0.02 if menu else 0.4}
        return {w: 1 / len(words) for w in words}

    pairs: list[dict] = []
    result = calibrate.calibrate(sample_settings, ProbabilityChatModel(probabilities=probabilities), kb, items,
                                 kb.names(), pairs_out=pairs)
    kind, tool = result["graders"]["kind"], result["graders"]["tool"]
    lookups = [i for i in items if i["sources"]]
    assert kind["pairs"] == len(items) and kind["positives"] == len(lookups)  # every item with a kind is read
    assert 0.55 < result["thresholds"]["kind"] < 0.9 and kind["fitted"]["negatives"]["rate"] == 1.0
    assert tool["pairs"] == len(lookups) and tool["positives"] == sum(i["category"] == "menu" for i in lookups)
    assert tool["fitted"] == {"positives": {"hits": tool["positives"], "of": tool["positives"], "rate": 1.0},
                              "negatives": {"hits": tool["pairs"] - tool["positives"],
                                            "of": tool["pairs"] - tool["positives"], "rate": 1.0}}
    assert {r["question"] for r in pairs if r["grader"] in ("kind", "tool")} <= set(asked)


def test_grade_and_calibrate_commands_with_the_scripted_model(sample_data_dir):
    request = {"question": STEAK, "documents": [{"text": d.page_content, "source": d.metadata["source"]} for d in DOCS]}
    done = run_scripted_cli("grade", "--grader", "relevance", "--json", data_dir=sample_data_dir,
                            stdin=json.dumps(request, ensure_ascii=False))
    assert done.returncode == 0, done.stderr
    grades = json.loads(done.stdout)["grades"]
    assert len(grades) == 3 and {g["method"] for g in grades} == {"text"} and grades[0]["p"] is None
    bad = run_scripted_cli("grade", "--grader", "grounded", data_dir=sample_data_dir, stdin=json.dumps(request))
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and '"answer"' in bad.stderr
    broken = run_scripted_cli("grade", "--grader", "crag", data_dir=sample_data_dir, stdin="[" * 200_000)
    assert broken.returncode == 2 and broken.stderr == "error: the input is nested too deeply to be a grade request\n"
    refused = run_scripted_cli("calibrate", "--collection", "nope", data_dir=sample_data_dir)
    assert refused.returncode == 2 and "no collection named nope" in refused.stderr
    # a --pairs file that cannot be written is refused before any pair is read, not after an hour of them
    unwritable = run_scripted_cli("calibrate", "--pairs", str(sample_data_dir / "no_such_dir" / "p.jsonl"),
                                  data_dir=sample_data_dir)
    assert unwritable.returncode == 2 and unwritable.stderr.startswith("error: cannot write the pairs to ")
    assert unwritable.stderr.count("\n") == 1 and "labelled pairs read" not in unwritable.stderr
    text_only = run_scripted_cli("calibrate", "--no-save", data_dir=sample_data_dir)
    assert text_only.returncode == 2
    assert text_only.stderr.strip().endswith("its verdicts are read as text")


class _Shelf:
    """Collections as lists of documents: search returns the first k of the named one (the order is the test's)."""

    def __init__(self, **collections: list[str]) -> None:
        self.docs = {name: [Document(page_content=t, metadata={"collection": name}) for t in texts]
                     for name, texts in collections.items()}

    def search(self, name: str, question: str, k: int) -> list[Document]:
        return self.docs[name][:k]


def test_a_document_of_another_collection_that_names_the_questions_item_is_not_scored_as_irrelevant():
    # the menu's own entry for the dish a wine question names is about the question, though not its answer:
    # Qwen's "yes" to it is no false alarm, so it is left out rather than counted as an irrelevant document
    item = {"question": "트러플 크림 파스타와 어울리는 와인을 추천해 주세요.", "sources": ["wine"],
            "facts": ["샤르도네"], "answerable": True}
    shelf = _Shelf(wine=["메종 뒤 슈맹 샤르도네: 크림 소스 파스타와 어울립니다.", "리버사이드 리슬링: 매운 요리에."],
                   menu=["## 2. 트러플 크림 파스타\n- 가격: ₩28,000\n- 주요 식재료: 블랙 트러플, 생크림"],
                   policy=["개인정보 보호 원칙: 수집 목적을 알려야 합니다."])
    docs, labels = calibrate.labelled_documents(shelf, item, ["wine", "menu", "policy"])

    def label(start: str) -> str:
        return next(lab for d, lab in zip(docs, labels) if d.page_content.startswith(start))

    assert label("메종 뒤 슈맹") == "relevant"
    assert label("리버사이드") == "?"  # its own collection without the facts: may or may not help
    assert label("## 2. 트러플") == "?"
    assert label("개인정보") == "irrelevant"  # another collection, nothing of the question named
    english = {"question": "Which wine goes with the Signature Steak?", "sources": ["wine"], "facts": ["Cabernet"],
               "answerable": True}
    shelf = _Shelf(wine=["Silver Creek Cabernet"], menu=["1. Signature Steak - KRW 35,000"], policy=["Steak knives"])
    docs, labels = calibrate.labelled_documents(shelf, english, ["wine", "menu", "policy"])
    assert sorted(labels) == ["?", "irrelevant", "relevant"]
    assert labels[[d.page_content for d in docs].index("Steak knives")] == "irrelevant"  # one word is not a name
