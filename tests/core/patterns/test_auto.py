"""Auto (issue 52): the question's kind read from scripted probabilities, the pattern the advice (or the default policy)
names for it, the safest one when unsure, and the chosen pattern run whole underneath: its trace, pause and reason."""

import json
from unittest import mock

import pytest

from core.llm.graders import QUESTION_KINDS, VERDICT_CALLS
from core.llm.models import model_name, resolve_provider
from core.patterns import all_patterns, auto, get_pattern, policy
from core.prompts import workflow as P
from core.run.runner import resume, run, stream_run
from core.runtime.context import make_context
from core.store import advice_records
from support.helpers import kinds, web_down
from support.scripted import ProbabilityChatModel, ScriptedChatModel
from support.workflow_script import Script

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"
KINDS = list(QUESTION_KINDS)


@pytest.fixture
def s(sample_settings):
    return sample_settings.with_(k=2)


def kind_reader(**p):
    """Probabilities for the kind classifier (``p`` per kind, the rest 0.01); other verdicts are not expected."""
    def probabilities(messages, words):
        if words == KINDS:
            return {k: p.get(k, 0.01) for k in KINDS}
        if words == ["lookup", "small_talk", "general_knowledge"]:  # Self-RAG's first step: a greeting
            return {"small_talk": 0.9, "lookup": 0.05, "general_knowledge": 0.05}
        raise AssertionError(f"unexpected verdict {words}")
    return probabilities


def _ctx(s, script, probabilities=None):
    model = (ProbabilityChatModel(probabilities=probabilities, responder=script) if probabilities
             else ScriptedChatModel(responder=script))
    return make_context(s, llm=model, grader=model, web=web_down), model


def _record(s, rows: dict, record_id="20261201-120000-aaaaaa", sources=("restaurant_menu",), date="2026-12-01 12:00"):
    """An advice record as core.studio.advise saves it: ``rows`` = {pattern: {kind: (quality, questions)}}."""
    provider = resolve_provider(s)
    patterns = {p: {"quality": max(q for q, _ in kinds_.values()), "mean_seconds": 10.0, "mean_llm_calls": 2.0,
                    "kinds": {k: {"questions": n, "quality": q} for k, (q, n) in kinds_.items()}}
                for p, kinds_ in rows.items()}
    return {"id": record_id, "date": date, "status": "done",
            "items": [{"id": "q1", "question": "?", "sources": list(sources)}],
            "report": {"date": date, "provider": provider, "model": model_name(s, provider), "patterns": patterns,
                       "recommendation": {"margin": 0.05}}}


@pytest.fixture
def advice(monkeypatch):
    """Saved advice records for the run (the sample data directory is shared by the session: not written)."""
    saved = Saved()
    saved.problems = []
    monkeypatch.setattr(advice_records, "read_all", lambda settings: (list(saved), list(saved.problems)))
    return saved


class Saved(list):
    """The records read, and the lines for files that could not be read."""

    problems: list


def _routes(result):
    return [e for e in result["trace"] if e.get("grader") == "auto_policy"]


def _kind_event(result):
    return next(e for e in result["trace"] if e.get("grader") == "question_kind")


def test_a_kind_without_advice_takes_the_default_policy_and_runs_it_whole(s, advice):
    script = Script(answer="시그니처 스테이크는 ₩35,000입니다 [1].")
    ctx, model = _ctx(s, script, kind_reader(single=0.9))
    r = run("auto", STEAK, s, ctx=ctx)
    assert r["path"] == ["classify_question", "run_pattern"]
    assert r["auto_pattern"] == "basic" and r["question_kind"] == "single"
    read = _kind_event(r)
    assert read["method"] == "probability" and read["threshold"] == 0.5 and read["p"] == pytest.approx(0.9 / 0.94, abs=0.001)
    assert set(read["p_choices"]) == set(KINDS)
    assert _routes(r)[0]["reason"] == "single fact → basic: default policy (no advice for these collections)"
    # the chosen pattern's own trace and reason are the run's
    assert r["termination_reason"] == "answered" and "35,000" in r["answer"]
    assert [e["node"] for e in r["trace"] if e["kind"] == "stop"] == ["generate"]
    assert any(e["node"] == "retrieve" and e["kind"] == "tool" for e in r["trace"])
    assert r["sources"] and r["usage"]["classify_question"]["llm_calls"] == 1  # one verdict-sized call


def test_the_live_stream_shows_each_trace_event_once(s, advice):
    ctx, _ = _ctx(s, Script(answer="₩35,000 [1]."), kind_reader(single=0.9))
    streamed, done = [], None
    for item in stream_run("auto", STEAK, s, ctx=ctx):
        if item["type"] == "trace":
            streamed.append(item["event"])
        elif item["type"] == "done":
            done = item["result"]
    assert len(streamed) == len(done["trace"])
    assert sorted(map(json.dumps, streamed)) == sorted(map(json.dumps, done["trace"]))


def test_an_advised_kind_runs_its_winner_and_says_why(s, advice):
    advice.append(_record(s, {"basic": {"two_chunks": (0.71, 4)}, "adaptive": {"two_chunks": (0.92, 4)}}))
    script = Script(router={"route": "restaurant_menu"}, answer="₩35,000 [1].")
    ctx, _ = _ctx(s, script, kind_reader(two_chunks=0.8))
    r = run("auto", STEAK, s, ctx=ctx)
    assert r["auto_pattern"] == "adaptive" and r["termination_reason"] == "answered"
    route = _routes(r)[0]
    assert route["reason"] == "two facts → adaptive: 0.92 vs basic 0.71 over 4 questions of your set (2026-12-01)"
    assert route["advice"] == "20261201-120000-aaaaaa"
    assert any(e.get("grader") == "question_router" for e in r["trace"])  # Adaptive's own router ran, underneath


def test_an_advice_for_other_collections_or_another_model_is_not_used(s, advice):
    advice.append(_record(s, {"adaptive": {"single": (0.99, 5)}}, sources=("some_other_collection",)))
    other_model = _record(s, {"adaptive": {"single": (0.99, 5)}})
    other_model["report"]["model"] = "another-model"
    advice.append(other_model)
    ctx, _ = _ctx(s, Script(answer="₩35,000 [1]."), kind_reader(single=0.9))
    r = run("auto", STEAK, s, ctx=ctx)
    assert r["auto_pattern"] == "basic" and "default policy" in _routes(r)[0]["reason"]


def test_too_few_questions_of_a_kind_keep_the_default_and_say_so(s, advice):
    advice.append(_record(s, {"basic": {"single": (0.5, 1)}, "adaptive": {"single": (0.9, 1)}}))
    ctx, _ = _ctx(s, Script(answer="₩35,000 [1]."), kind_reader(single=0.9))
    r = run("auto", STEAK, s, ctx=ctx)
    assert r["auto_pattern"] == "basic"
    assert "1 question(s) of this kind in your advice of 2026-12-01, too few" in _routes(r)[0]["reason"]


def test_low_confidence_takes_the_safest_pattern_of_the_close_kinds(s, advice):
    advice.append(_record(s, {"basic": {"single": (0.9, 3), "unanswerable": (0.2, 3)},
                              "adaptive": {"single": (0.85, 3), "unanswerable": (0.95, 3)}}))
    script = Script(router={"route": "restaurant_menu"}, answer="₩35,000 [1].")
    ctx, _ = _ctx(s, script, kind_reader(single=0.40, unanswerable=0.35, two_chunks=0.1,
                                                    cross_collection=0.1, small_talk=0.05))
    r = run("auto", STEAK, s, ctx=ctx)
    assert r["question_kind"] == "single" and r["auto_pattern"] == "adaptive"
    route = _routes(r)[0]
    assert route["unsure"] is True and route["reason"].startswith("unsure of the kind (0.")
    assert "single fact 0." in route["reason"] and "not in the documents 0." in route["reason"]
    assert "adaptive is the safest of them (the higher quality)" in route["reason"]


def test_unsure_between_an_advised_kind_and_a_default_one_compares_the_defaults_pattern_as_the_advice_measured_it(
        s, advice):
    """gym_faq: single questions read unsure next to small talk (no such question in the advice, so self_rag by
    default) ran self_rag for 134 s and 77 s, where basic, the advice's winner for single facts, took 13 s."""
    advice.append(_record(s, {"basic": {"single": (0.96, 7), "two_chunks": (1.0, 2)},
                              "self_rag": {"single": (0.89, 7), "two_chunks": (1.0, 2)}}))
    advice[0]["report"]["patterns"]["self_rag"]["quality"] = 0.925  # over the whole advice
    ctx, _ = _ctx(s, Script(answer="₩35,000 [1]."), kind_reader(single=0.30, small_talk=0.28))
    r = run("auto", STEAK, s, ctx=ctx)
    assert r["question_kind"] == "single" and r["auto_pattern"] == "basic"
    route = _routes(r)[0]
    assert route["unsure"] is True and "basic is the safest of them (the higher quality)" in route["reason"]
    choices = auto.policy_for(s, ["restaurant_menu"])
    assert choices["small_talk"].pattern == "self_rag" and choices["small_talk"].quality is None
    assert choices["small_talk"].pattern_quality == 0.925 and choices["cross_collection"].measured() == 0.925


def test_a_stale_advice_naming_a_pattern_gone_takes_the_default(s, advice):
    advice.append(_record(s, {"basic": {"single": (0.6, 4)}, "old_pattern": {"single": (0.95, 4)}}))
    ctx, _ = _ctx(s, Script(answer="₩35,000 [1]."), kind_reader(single=0.9))
    r = run("auto", STEAK, s, ctx=ctx)
    assert r["auto_pattern"] == "basic" and r["termination_reason"] == "answered"
    assert "names old_pattern, which is not a pattern here any more" in _routes(r)[0]["reason"]


def test_a_corrupt_advice_record_takes_the_default_and_says_why(s, advice):
    broken = _record(s, {"adaptive": {"single": (0.99, 5)}}, record_id="20261202-000000-bbbbbb")
    broken["report"]["patterns"]["adaptive"]["kinds"]["single"]["questions"] = "many"
    advice.append(broken)
    advice.problems.append("20261203-000000-cccccc.json: unreadable (JSONDecodeError)")
    ctx, _ = _ctx(s, Script(answer="₩35,000 [1]."), kind_reader(single=0.9))
    r = run("auto", STEAK, s, ctx=ctx)
    reason = _routes(r)[0]["reason"]
    assert r["auto_pattern"] == "basic" and r["termination_reason"] == "answered"
    assert "unreadable" in reason and "advice 20261202-000000-bbbbbb is corrupt (ValueError)" in reason


def test_advice_records_on_disk_report_a_file_that_is_not_json(settings):
    advice_records.save(settings, _record(settings, {"basic": {"single": (0.9, 3)}}))
    (settings.data_path / "advice" / "20261203-000000-cccccc.json").write_text("{not json", encoding="utf-8")
    records, problems = advice_records.read_all(settings)
    assert [r["id"] for r in records] == ["20261201-120000-aaaaaa"]
    assert problems == ["20261203-000000-cccccc.json: unreadable (JSONDecodeError)"]


def test_without_probabilities_the_written_kind_decides(s, advice):
    script = Script(kind={"kind": "single"}, answer="₩35,000 [1].")
    ctx, _ = _ctx(s, script)
    r = run("auto", STEAK, s, ctx=ctx)
    assert _kind_event(r)["method"] == "text" and r["auto_pattern"] == "basic"
    assert script.count("kind") == 1


def test_an_unusable_written_kind_falls_back_to_single_and_says_so(s, advice):
    script = Script(kind="no idea", answer="₩35,000 [1].")
    ctx, _ = _ctx(s, script)
    r = run("auto", STEAK, s, ctx=ctx)
    event = _kind_event(r)
    assert event["kind"] == "error" and "classifier output unusable" in event["reason"]
    assert script.count("kind") == 2 and r["auto_pattern"] == "basic"


def test_no_collections_answer_as_the_default_says_for_small_talk(settings, advice):
    script = Script(direct="안녕하세요! 무엇을 도와드릴까요?")
    ctx, model = _ctx(settings, script, kind_reader())
    r = run("auto", "안녕하세요", settings, ctx=ctx)
    assert r["question_kind"] == "small_talk" and r["auto_pattern"] == policy.DEFAULT_POLICY["small_talk"]
    assert "no collections in this run" in _routes(r)[0]["reason"]
    assert r["termination_reason"] == "direct_answer" and r["answer"].startswith("안녕하세요")


def test_a_review_inside_the_chosen_pattern_pauses_and_resumes(s, advice):
    script = Script(answer="₩35,000 [1].")
    ctx, model = _ctx(s, script, kind_reader(single=0.9))
    paused = run("auto", STEAK, s, ctx=ctx, review=True)
    assert paused["interrupted"] and paused["interrupt"]["kind"] == "document_review"
    assert paused["auto_pattern"] == "basic"
    # the paused result is the chosen pattern's so far: Auto's events, then what basic did before its pause
    assert [e.get("grader") for e in paused["trace"][:2]] == ["question_kind", "auto_policy"]
    assert any(e["node"] == "retrieve" and e["kind"] == "tool" for e in paused["trace"])
    done = resume(paused["thread_id"], {"action": "approve"}, s, ctx=ctx)
    assert done["termination_reason"] == "answered" and "35,000" in done["answer"]
    assert "approved" in kinds(done, "interrupt")[0]["reason"]
    assert len([e for e in done["trace"] if e.get("grader") == "question_kind"]) == 1  # not read again on resume
    opening = P.KIND_SYSTEM.split("\n")[0]
    assert sum(1 for call in model.calls if opening in str(call[0].content)) == 1


def test_a_rejection_inside_the_chosen_pattern_is_the_runs_reason(s, advice):
    ctx, _ = _ctx(s, Script(answer="unused"), kind_reader(single=0.9))
    paused = run("auto", STEAK, s, ctx=ctx, review=True)
    done = resume(paused["thread_id"], {"action": "reject", "message": "wrong menu"}, s, ctx=ctx)
    assert done["termination_reason"] == "user_rejected" and done["answer"] == ""


def test_auto_routes_to_every_other_pattern_and_bounds_its_calls(s):
    others = {p.id for p in all_patterns()} - {"auto"}
    assert {p.id for p in auto.ROUTED} == others
    pattern = get_pattern("auto")
    assert pattern.max_llm_calls(s) == VERDICT_CALLS + max(get_pattern(p).max_llm_calls(s) for p in others)
    assert set(pattern.result_fields) >= {f for p in auto.ROUTED for f in p.result_fields}
    assert pattern.reason_ids == {r for p in auto.ROUTED for r in p.reason_ids}


def test_the_policy_rule_is_advises_own():
    rows = {"self_rag": {"quality": 0.92, "seconds": 40.0}, "basic": {"quality": 0.9, "seconds": 10.0},
            "adaptive": {"quality": 0.5, "seconds": 2.0}}
    assert policy.pick(rows, 0.05) == ("basic", "self_rag")  # within the margin: the fewest seconds
    assert policy.pick(rows, 0.01) == ("self_rag", "self_rag")


def test_unsure_between_unmeasured_kinds_the_pattern_that_checks_most_wins():
    choices = [policy.default_choice("single", "x"), policy.default_choice("unanswerable", "x")]
    assert policy.safest(choices).pattern == "self_rag"
    assert policy.close_kinds({"single": 0.4, "unanswerable": 0.35, "small_talk": 0.2, "two_chunks": 0.05}) == [
        "single", "unanswerable"]
    assert policy.close_kinds({"single": 0.4, "unanswerable": 0.3, "small_talk": 0.27}) == [
        "single", "unanswerable", "small_talk"]


def test_the_chosen_patterns_answer_review_pauses_and_resumes(s, advice):
    ctx, _ = _ctx(s, Script(answer="시그니처 스테이크는 ₩35,000입니다 [1]."), kind_reader(single=0.9))
    paused = run("auto", STEAK, s, ctx=ctx, review_answer="always")
    assert paused["interrupted"] and paused["interrupt"]["kind"] == "answer_review"
    assert paused["claims"] and paused["verification"]  # the chosen pattern's claim check ran, once
    assert "35,000" in paused["answer"] and paused["sources"]  # the draft under review, as for any pattern
    done = resume(paused["thread_id"], {"action": "approve"}, s, ctx=ctx)
    assert done["termination_reason"] == "answered" and "35,000" in done["answer"]
    assert [e["node"] for e in done["trace"] if e.get("grader") == "claims"] == ["verification"]
    assert "answer approved" in kinds(done, "interrupt")[0]["reason"]


def test_cli_ask_pattern_auto_without_collections_answers_as_small_talk(tmp_path, advice):
    import core.cli.common
    import core.llm.models
    from support.helpers import run_cli

    model = ProbabilityChatModel(probabilities=kind_reader(), responder=Script(direct="Hello! How can I help?"))
    with mock.patch.object(core.llm.models, "get_chat_model", lambda settings, role="main": model), \
            mock.patch.object(core.cli.common, "prepare_model", lambda settings: None):
        out = run_cli("ask", "--pattern", "auto", "--json", "Hello there", data_dir=tmp_path / "data")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["auto_pattern"] == policy.DEFAULT_POLICY["small_talk"] and result["termination_reason"] == "direct_answer"
    assert "Traceback" not in out.stderr


def test_autos_trace_reasons_read_in_korean(s, advice):
    from ui.i18n.trace import to_korean

    advice.append(_record(s, {"basic": {"two_chunks": (0.71, 4)}, "self_rag": {"two_chunks": (0.92, 4)}}))
    assert policy.KIND_NAMES.keys() == policy.KIND_NAMES_KO.keys()
    choices = auto.current_policy(make_context(s, llm=ScriptedChatModel(responder=Script())), ["restaurant_menu"])
    reasons = [c.reason for c in choices.values()]
    assert "two facts → self_rag: 0.92 vs basic 0.71 over 4 questions of your set (2026-12-01)" in reasons
    assert to_korean(choices["two_chunks"].reason) == ("두 사실 → self_rag: 내 세트의 질문 4개에서 0.92, basic는 0.71 "
                                                       "(2026-12-01)")
    assert to_korean(choices["single"].reason) == "단일 사실 → basic: 기본 정책 (이 컬렉션들에 대한 추천 기록이 없습니다)"
    unsure = ("unsure of the kind (0.40 < 0.50): close kinds single fact 0.40 → basic, two facts 0.35 → self_rag; "
              f"self_rag is the safest of them (the higher quality). {choices['two_chunks'].reason}")
    assert to_korean(unsure).startswith("종류가 확실하지 않습니다 (0.40 < 0.50).") and "가장 안전합니다 (품질이 더 높은 쪽)" \
        in to_korean(unsure) and to_korean(unsure).endswith("basic는 0.71 (2026-12-01)")
    assert to_korean("question read as not in the documents") == "질문을 문서에 없는 질문(으)로 읽었습니다"


@pytest.mark.real_model
def test_on_the_embedded_model_auto_reads_the_kind_in_one_call_and_runs_what_the_policy_names(settings, tmp_path):
    """A collection added here, one question: the kind read from the model's probabilities over the five kinds (one
    call, one decoded token), the pattern the default policy names for it run whole, its reason the run's."""
    from core.knowledge.base import KnowledgeBase
    from core.knowledge.sources import update_source

    notes = tmp_path / "walks.md"
    notes.write_text("# 숲길 산책 모임\n\n숲길 산책 모임은 매주 토요일 오전 8시에 북문 주차장에서 모입니다. "
                     "참가비는 3,000원이고 우천 시에는 쉽니다.\n", encoding="utf-8")
    kb = KnowledgeBase(settings)
    assert not kb.ingest([notes], "walks").errors
    update_source(kb, "walks", description="숲길 산책 모임 안내: 모이는 때와 곳, 참가비")
    result = run("auto", "숲길 산책 모임의 참가비는 얼마인가요?", settings.with_(k=2, max_tokens=96))
    assert result["error"] is None, result["error"]
    read = _kind_event(result)
    assert read["method"] == "probability" and set(read["p_choices"]) == set(KINDS)
    assert result["question_kind"] == read["verdict"] and 0 < read["p"] <= 1
    assert result["usage"]["classify_question"]["llm_calls"] == 1  # a verdict's size (read with max_tokens=1)
    [route] = _routes(result)
    assert route["target"] == result["auto_pattern"] and "default policy" in route["reason"]
    assert result["path"][:2] == ["classify_question", "run_pattern"]
    chosen = get_pattern(result["auto_pattern"])
    assert result["termination_reason"] in {r.id for r in chosen.termination_reasons}
