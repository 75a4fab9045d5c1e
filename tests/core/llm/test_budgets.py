"""Every structured call is allowed the tokens its schema needs, and a reply cut off there falls back at once."""

import pytest

from core.llm import graders
from core.llm.budgets import ReplyCutOff, token_budget
from core.llm.structured import structured
from core.patterns.rag_fusion import SearchQueries
from support.helpers import kinds, run_script
from support.scripted import Endless, ScriptedChatModel
from support.workflow_script import Script

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"


def test_a_reply_that_never_closes_its_json_string_is_cut_off_at_its_budget_and_falls_back_without_a_retry():
    model = ScriptedChatModel(replies=[Endless(), Endless()], max_tokens=512)
    budget = token_budget(SearchQueries)
    outcome = graders.ask(model, SearchQueries, "system", "Question: q", SearchQueries(queries=["q"]))
    assert model.limits == [budget] and budget < 512  # one call, at the schema's budget, not the run's limit
    assert outcome.fallback and outcome.value.queries == ["q"]
    assert f"cut off at {budget} tokens" in outcome.error


def test_a_batch_retries_garbled_replies_but_not_cut_off_ones():
    replies = {"a": [Endless('{"relevant": "')], "b": ["not json", '{"relevant": "no"}'], "c": ['{"relevant": "no"}']}
    model = ScriptedChatModel(responder=lambda m: replies[str(m[-1].content)].pop(0), max_tokens=512)
    outcomes = graders.ask_many(model, graders.Relevance, "system", ["a", "b", "c"],
                                graders.Relevance(relevant="yes"), 1)
    assert [(o.fallback, o.value.relevant) for o in outcomes] == [(True, "yes"), (False, "no"), (False, "no")]
    assert len(model.calls) == 4 and set(model.limits) == {token_budget(graders.Relevance)}
    assert "cut off at" in outcomes[0].error


def test_rag_fusion_searches_with_the_question_after_one_cut_off_query_writer(sample_settings):
    script = Script(fusion=Endless(), answer="₩35,000 [1].")
    r = run_script("rag_fusion", STEAK, sample_settings.with_(k=2), script)
    [fallback] = kinds(r, "error")
    assert f"cut off at {token_budget(SearchQueries)} tokens" in fallback["reason"]
    assert script.count("fusion") == 1 and [e["reason"] for e in kinds(r, "tool")] == [STEAK]
    assert r["termination_reason"] == "answered"


def test_a_reasoning_model_keeps_its_own_limit():
    """Its hidden reasoning spends tokens before the JSON: a verdict-sized budget would leave no reply."""
    model = ScriptedChatModel(replies=['{"relevant": "yes"}'], max_tokens=4000)
    model.__dict__["model_name"] = "o4-mini"  # the name a provider's model carries
    assert structured(model, graders.Relevance).invoke("q").relevant == "yes" and model.limits == [4000]


VERDICTS = [graders.Relevance, graders.Grounded, graders.Complexity, graders.MessageKind, graders.CragGrade,
            graders.Usefulness]


@pytest.mark.parametrize("schema", VERDICTS, ids=lambda s: s.__name__)
def test_a_verdict_is_a_few_tokens(schema):
    assert token_budget(schema) <= 80  # the run's max tokens is 512


def test_a_budget_counts_list_items_and_string_lengths():
    assert token_budget(SearchQueries) < 400  # three queries of 60 characters, not the run's 512
    assert token_budget(graders.SubQuestions) > token_budget(graders.Rewrite)
    with pytest.raises(ReplyCutOff, match="cut off at 7 tokens"):
        raise ReplyCutOff(7)


def test_the_budget_benchmark_records_each_structured_call_with_its_budget_and_cut_off(sample_settings, monkeypatch):
    """benchmarks/budget_use.py reads its figures from the runner's usage callback: a cut-off query writer and a
    free-text answer are told apart, with the writer's budget and the tokens it wrote."""
    from benchmarks.budget_use import BudgetRecorder, summarise
    from core.run import runner

    recorder = BudgetRecorder()
    recorder.pattern = "rag_fusion"
    monkeypatch.setattr(runner, "UsageCallback", recorder.usage_callback())
    run_script("rag_fusion", STEAK, sample_settings.with_(k=2), Script(fusion=Endless(), answer="₩35,000 [1]."))
    rows = {(r["node"], r["budget"]): r for r in summarise(recorder.calls)}
    budget = token_budget(SearchQueries)
    writer = rows[("write_queries", budget)]
    assert (writer["calls"], writer["cut_off"], writer["most_output"], writer["over_budget"]) == (1, 1, budget, 0)
    assert rows[("generate", None)]["cut_off"] == 0  # the answer: free text, no budget
