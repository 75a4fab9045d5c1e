"""Every finished run's answer is claim-checked (core.patterns.answer_review): result, badge, cost, CLI, Compare, Evaluation.

The checker itself is tested in test_claims.py; here, what every pattern's run carries and how it is shown.
Agentic, ReAct and Graph RAG carry their check in their own suites (test_agentic, test_react, test_graph_rag).
"""

import json

import pytest

from core.run.outcome import outcome, summary
from core.studio.compare import metrics_rows
from core.studio.evaluate import faithfulness, score_item, summarise
from core.studio.export import to_markdown
from support.app_support import HAPPY_ANSWER, happy_script
from support.helpers import run_script, run_scripted_cli

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"
INVENTED = "시그니처 스테이크는 ₩99,000입니다 [1]. 셰프는 1985년 7월 24일에 태어났습니다 [1]."


@pytest.mark.parametrize("pattern", ["basic", "adaptive", "self_rag", "corrective"])
def test_every_workflow_pattern_carries_its_claim_check(sample_settings, pattern):
    script = happy_script()
    script.replies["crag"] = {"grade": "correct", "confidence": 0.9}
    result = run_script(pattern, STEAK, sample_settings, script)
    assert result["answer"] == HAPPY_ANSWER
    assert [c["verdict"] for c in result["claims"]] == ["supported"]
    evidence = result["claims"][0]["evidence"][0]
    assert evidence["source"] == "restaurant_menu.md" and "35,000" in evidence["quote"]
    assert result["claim_support"] == {"supported": 1, "unsupported": 0, "unchecked": 0, "claims": 1,
                                       "not_checked_budget": 0}
    check = result["trace"][-1]
    assert (check["node"], check["grader"]) == ("verification", "claims") and check["verdict"].startswith("1 of 1")
    assert result["verification"]["mode"] == "rules" and result["verification"]["llm_calls"] == 0
    assert "claim" not in script.log and "claims" not in script.log  # rules only: no model call
    assert outcome(result) == "supported" and summary(result)["claims"]["line"] == "1 of 1 claims supported"


@pytest.mark.parametrize("pattern", ["basic", "self_rag"])
def test_an_invented_price_and_date_are_unsupported_and_never_get_a_success_badge(sample_settings, pattern):
    script = happy_script()
    script.replies["answer"] = INVENTED
    result = run_script(pattern, STEAK, sample_settings, script)
    verdicts = {c["text"]: c["verdict"] for c in result["claims"]}
    assert list(verdicts.values()) == ["unsupported", "unsupported"], result["claims"]
    assert "99,000" in result["claims"][0]["reason"]
    assert outcome(result) == "unsupported"
    checks = summary(result)["claims"]
    assert checks["line"] == "0 of 2 claims supported · 2 unsupported"
    # Self-RAG's own grader was scripted to say grounded: both verdicts are kept, and they disagree
    assert checks["disagreement"] is (pattern == "self_rag")
    report = to_markdown(result)
    assert "claim check: 0 of 2 claims supported" in report and "| unsupported |" in report


def test_model_checks_cost_their_own_calls_apart_from_the_pattern(sample_settings):
    settings = sample_settings.with_(verify_claims="model")
    script = happy_script()
    script.replies["claim"] = {"verdict": "supported"}
    result = run_script("basic", STEAK, settings, script)
    assert script.log.count("claim") == 1 and result["verification"]["llm_calls"] == 1
    assert result["llm_calls"] == script.log.count("answer") + script.log.count("contextualize")  # the pattern's only
    assert "verification" not in (result.get("usage") or {})
    assert [c["checked_by"] for c in result["claims"]] == ["model"]
    assert result["trace"][-1]["llm_calls"] == 1


def test_a_model_that_calls_a_supported_price_contradicted_makes_it_unsupported(sample_settings):
    settings = sample_settings.with_(verify_claims="model")
    script = happy_script()
    script.replies["claim"] = {"verdict": "contradicted"}
    result = run_script("basic", STEAK, settings, script)
    assert [c["verdict"] for c in result["claims"]] == ["unsupported"] and outcome(result) == "unsupported"


def test_checking_off_leaves_the_run_as_it_was(sample_settings):
    result = run_script("basic", STEAK, sample_settings.with_(verify_claims="off"), happy_script())
    assert "claims" not in result and "verification" not in result
    assert all(e["node"] != "verification" for e in result["trace"])


def test_a_direct_answer_has_nothing_to_be_checked_against(sample_settings):
    script = happy_script()
    script.replies["router"] = {"route": "direct"}
    script.replies["direct"] = "안녕하세요! 무엇을 도와드릴까요?"
    result = run_script("adaptive", "안녕하세요", sample_settings, script)
    assert result["termination_reason"] == "direct_answer" and "claims" not in result


def test_compare_and_evaluation_read_the_claim_check(sample_settings):
    good = run_script("basic", STEAK, sample_settings, happy_script())
    script = happy_script()
    script.replies["answer"] = INVENTED
    bad = run_script("basic", STEAK, sample_settings, script)
    rows = metrics_rows({"results": {"good": good, "bad": bad}})
    assert [r["claims_supported"] for r in rows] == ["1 / 1", "0 / 2"]
    assert "₩99,000" in rows[1]["unsupported_claims"] and rows[0]["unsupported_claims"] == ""
    item = {"id": "menu-01", "category": "menu", "question": STEAK, "sources": ["restaurant_menu"],
            "facts": ["35,000"], "answerable": True}
    scores = [score_item(item, good), score_item(item, bad)]
    assert [s["faithfulness"] for s in scores] == [1.0, 0.0]
    assert summarise(scores)["faithfulness"] == round(1 / 3, 3)  # pooled: one of three checked claims
    assert faithfulness({"supported": 0, "unsupported": 0, "unchecked": 2}) is None


def test_ask_json_and_text_carry_the_claims(sample_data_dir, tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(sample_data_dir / "chroma", data / "chroma")
    # the JSON and the text form, with the stand-ins of tests/support/scripted_cli.py (stdout holding the JSON
    # alone, in a process of its own, is tests/core/cli/test_cli.py's real-model ask)
    done = run_scripted_cli("ask", "--json", STEAK, data_dir=data)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["claim_support"]["supported"] == 1 and result["claims"][0]["checked_by"] == "rules"
    text = run_scripted_cli("ask", STEAK, data_dir=data)
    assert text.returncode == 0, text.stderr[-2000:]
    assert "-- claim check: 1 of 1 claims supported" in text.stdout and "ok   시그니처 스테이크는 ₩35,000입니다" in text.stdout
