"""Question-set, evaluation and advice sizes are bounded: one line names the limit and its setting, and nothing is
written for a refused request (issue 53, item 2)."""

import json

import pytest

from core.config import load_settings
from core.studio import advise, evaluate
from core.studio.question_set import QuestionSetError, count_problem, runs_problem
from support.helpers import run_cli


def question(n: int) -> dict:
    return {"id": f"q{n:03d}", "question": f"question {n}?", "sources": [], "facts": [], "answerable": True,
            "category": "direct", "lang": "en"}


def never_run(pattern, text, settings):
    raise AssertionError("a refused evaluation ran a question")


def test_the_defaults_and_their_settings(monkeypatch, tmp_path):
    settings = load_settings(data_dir=str(tmp_path))
    assert (settings.max_set_questions, settings.max_set_runs) == (200, 1000)
    monkeypatch.setenv("RAG_MAX_SET_QUESTIONS", "7")
    monkeypatch.setenv("RAG_MAX_SET_RUNS", "30")
    settings = load_settings(data_dir=str(tmp_path))
    assert (settings.max_set_questions, settings.max_set_runs) == (7, 30)


def test_a_count_past_the_limit_is_one_line_naming_the_limit_and_its_setting(settings):
    assert count_problem(200, settings) is None
    problem = count_problem(201, settings)
    assert problem == ("refused: 201 questions would pass the limit of 200 questions per set "
                       "(RAG_MAX_SET_QUESTIONS); ask for fewer")
    assert count_problem(10**6, settings.with_(max_set_questions=0)) is None  # 0: no bound


def test_runs_past_the_limit_are_one_line_naming_questions_patterns_and_the_setting(settings):
    assert runs_problem(100, 10, settings) is None
    problem = runs_problem(112, 9, settings)
    assert problem == ("refused: 112 questions x 9 patterns = 1,008 runs would pass the limit of 1,000 runs per "
                       "evaluation or advice (RAG_MAX_SET_RUNS); choose fewer questions or patterns")
    assert "\n" not in problem
    assert runs_problem(5000, 9, settings.with_(max_set_runs=0)) is None


def test_an_evaluation_past_the_limit_is_refused_before_it_runs_or_saves(settings):
    small = settings.with_(max_set_runs=4)
    with pytest.raises(QuestionSetError, match=r"3 questions x 2 patterns = 6 runs .*RAG_MAX_SET_RUNS"):
        evaluate.evaluate(small, ["basic", "adaptive"], [question(n) for n in range(3)], run_one=never_run)
    assert evaluate.saved_reports(small) == []


def test_an_advice_past_the_limit_is_refused_before_its_record_is_written(settings):
    small = settings.with_(max_set_runs=4)
    with pytest.raises(QuestionSetError, match="RAG_MAX_SET_RUNS"):
        advise.start(small, [question(n) for n in range(3)], ["basic", "adaptive"], "mine.jsonl", run_one=never_run)
    with pytest.raises(QuestionSetError, match="RAG_MAX_SET_RUNS"):
        advise.advise(small, [question(n) for n in range(3)], ["basic", "adaptive"], run_one=never_run)
    assert advise.list_advice(small) == []
    assert not (small.data_path / "advice").exists() or not any((small.data_path / "advice").iterdir())


def test_cli_questions_count_past_the_limit_is_refused_before_any_model_call(sample_data_dir, tmp_path):
    proc = run_cli("questions", "--collection", "restaurant_menu", "--count", "5", data_dir=sample_data_dir,
                   env={"RAG_MAX_SET_QUESTIONS": "4", "RAG_PROVIDER": "openai"})  # no key: a model call would fail
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: refused: 5 questions would pass the limit of 4 questions per set (RAG_MAX_SET_QUESTIONS); ask for fewer"]
    assert not (sample_data_dir / "question_sets").exists() or not list((sample_data_dir / "question_sets").iterdir())


def test_cli_eval_past_the_limit_is_refused_before_anything_runs_or_is_saved(tmp_path):
    data = tmp_path / "data"
    proc = run_cli("eval", "--limit", "3", "--patterns", "basic,adaptive", data_dir=data,
                   env={"RAG_MAX_SET_RUNS": "5", "RAG_PROVIDER": "openai"})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: refused: 3 questions x 2 patterns = 6 runs would pass the limit of 5 runs per evaluation or advice "
        "(RAG_MAX_SET_RUNS); choose fewer questions or patterns"]
    assert not data.exists() or not list(data.rglob("*.json"))


def test_cli_advise_on_a_file_past_the_limit_is_refused_before_its_record_is_written(tmp_path):
    data = tmp_path / "data"
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(question(n)) + "\n" for n in range(4)), encoding="utf-8")
    proc = run_cli("advise", "--set", str(path), "--patterns", "basic,adaptive", data_dir=data,
                   env={"RAG_MAX_SET_RUNS": "7", "RAG_PROVIDER": "openai"})
    assert proc.returncode == 2
    assert "error: refused: 4 questions x 2 patterns = 8 runs" in proc.stderr and "RAG_MAX_SET_RUNS" in proc.stderr
    assert not (data / "advice").exists() or not list((data / "advice").iterdir())


def test_cli_advise_writing_a_set_past_the_limits_is_refused_before_the_set_is_written(sample_data_dir):
    before = sorted((sample_data_dir / "question_sets").glob("*")) if (sample_data_dir / "question_sets").exists() else []
    over_count = run_cli("advise", "--collection", "restaurant_menu", "--count", "5", "--fresh", data_dir=sample_data_dir,
                         env={"RAG_MAX_SET_QUESTIONS": "4", "RAG_PROVIDER": "openai"})
    assert over_count.returncode == 2 and "RAG_MAX_SET_QUESTIONS" in over_count.stderr
    over_runs = run_cli("advise", "--collection", "restaurant_menu", "--count", "5", "--fresh", "--patterns",
                        "basic,adaptive", data_dir=sample_data_dir, env={"RAG_MAX_SET_RUNS": "9", "RAG_PROVIDER": "openai"})
    assert over_runs.returncode == 2 and "5 questions x 2 patterns = 10 runs" in over_runs.stderr
    after = sorted((sample_data_dir / "question_sets").glob("*")) if (sample_data_dir / "question_sets").exists() else []
    assert after == before
    assert "Traceback" not in over_count.stderr + over_runs.stderr

