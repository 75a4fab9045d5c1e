"""Shared grading helpers."""

from scripted import ScriptedChatModel

from core.llm import graders


def test_ask_many_reports_progress_once_per_input_even_when_a_retry_follows():
    replies = iter(['{"relevant": "yes"}', "not json", '{"relevant": "no"}', '{"relevant": "yes"}'])
    model = ScriptedChatModel(responder=lambda m: next(replies))
    seen = []
    outcomes = graders.ask_many(model, graders.Relevance, "system", ["a", "b", "c"], graders.Relevance(relevant="no"),
                                1, progress=lambda done, total: seen.append((done, total)))
    assert [o.value.relevant for o in outcomes] == ["yes", "yes", "no"]  # b was retried
    assert seen[:3] == [(1, 3), (2, 3), (3, 3)] and all(d <= 3 for d, _ in seen)
