"""Adversarial graders: whatever the model says, every workflow run stops within its bound."""

import pytest

from core.patterns import get_pattern, termination_reasons
from support.helpers import run_script, web_down, web_ok
from support.workflow_script import ROLES, Script


def adversary(messages):
    """Always the worst verdict: nothing relevant, nothing grounded, useless, and junk now and then."""
    from support.workflow_script import role_of

    role = role_of(messages)
    worst = {
        "router": {"route": "web"},
        "sources": {"sources": ["restaurant_menu", "restaurant_wine", "web"]},
        "complexity": {"complexity": "analyse"},
        "decompose": {"questions": ["a?", "b?", "c?", "d?"]},
        "retrieval": {"kind": "lookup"},
        "relevance": "{broken json",
        "crag": {"grade": "ambiguous", "confidence": 0.1},
        "strip": "not json",
        "grounded": {"grounded": "no"},
        "usefulness": {"useful": "no", "score": 1},
        "rewrite": {"question": "again"},
        "web_rewrite": {"question": "again"},
    }
    return worst.get(role, "an answer")


@pytest.mark.parametrize("pattern_id,options", [
    ("adaptive", {}), ("adaptive", {"variant": "complexity"}), ("self_rag", {}), ("corrective", {}),
])
@pytest.mark.parametrize("web", [web_down, web_ok("some web text about steak")], ids=["web_down", "web_ok"])
def test_adversarial_model_stops_within_the_documented_bound(sample_settings, pattern_id, options, web):
    settings = sample_settings.with_(k=2, max_rewrites=2, max_generations=2)
    script = Script(**{role: adversary for role in ROLES})
    result = run_script(pattern_id, "스테이크 메뉴의 가격은 얼마인가요?", settings, script, web=web, **options)
    bound = get_pattern(pattern_id).max_llm_calls(settings)
    assert result["error"] is None
    assert result["termination_reason"] in termination_reasons()
    assert result["termination_message"]
    assert 0 < len(script.log) <= bound, (script.log, bound)
    assert result["llm_calls"] == len(script.log)


def test_self_rag_relevance_adversary_with_valid_json_exhausts_the_rewrite_budget(sample_settings):
    settings = sample_settings.with_(k=3, max_rewrites=3)
    script = Script(retrieval={"kind": "lookup"}, sources={"sources": ["restaurant_menu", "restaurant_wine"]},
                    relevance={"relevant": "no"},
                    rewrite={"question": "다시"})
    result = run_script("self_rag", "스테이크 가격?", settings, script)
    assert result["termination_reason"] == "no_relevant_documents"
    assert script.count("rewrite") == 3 and script.count("relevance") == 4 * 6
