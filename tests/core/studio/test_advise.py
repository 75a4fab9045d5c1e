"""Advise: the recommendation rule on a fixed table, scoring per kind, resuming after a kill, the CLI's JSON."""

import json
import subprocess
import sys

import pytest

from core.studio import advise
from core.studio.recommend import markdown_report, recommend
from support.advise_support import ITEMS, fake_run
from support.paths import ROOT, TESTS


def kinds(**rows):
    return {kind: {"questions": 3, "quality": q, "declined": d, "judged": 3 if d is not None else 0}
            for kind, (q, d) in rows.items()}


def test_the_cheapest_pattern_within_the_margin_is_recommended_and_kind_winners_are_named():
    table = {
        "basic": {"quality": 0.83, "mean_seconds": 5.0, "mean_llm_calls": 1,
                  "kinds": kinds(single=(1.0, None), unanswerable=(0.33, 1))},
        "corrective": {"quality": 0.80, "mean_seconds": 20.0, "mean_llm_calls": 6,
                       "kinds": kinds(single=(0.7, None), unanswerable=(1.0, 3))},
        "self_rag": {"quality": 0.86, "mean_seconds": 60.0, "mean_llm_calls": 9,
                     "kinds": kinds(single=(0.95, None), unanswerable=(0.8, 2))},
    }
    rec = recommend(table, margin=0.05)
    assert rec["pattern"] == "basic" and rec["best"] == "self_rag"
    assert "within 0.05 of the best" in rec["rule"] and "fewest seconds per question" in rec["rule"]
    assert rec["wins"] == [{"kind": "unanswerable", "pattern": "corrective", "quality": 1.0, "against": 0.33,
                            "reason": "corrective for unanswerable questions: it declined 3 of 3, basic declined 1 of 3"}]
    assert any("self_rag scores 0.03 higher" in r for r in rec["reasons"])
    assert recommend(table, margin=0.0)["pattern"] == "self_rag"  # no margin: the best, whatever it costs
    assert recommend(table, margin=0.1)["pattern"] == "basic"
    assert recommend({"basic": {"quality": None}})["pattern"] is None


def test_scores_per_pattern_and_kind_with_the_cost_split(settings):
    calls = []
    report = advise.advise(settings, ITEMS, ["basic", "careful"], run_one=fake_run(calls),
                           judge=lambda q, a: not a.strip(), set_name="t.jsonl")
    assert len(calls) == 8 and report["finished_runs"] == report["total_runs"] == 8
    basic, careful = report["patterns"]["basic"], report["patterns"]["careful"]
    assert basic["kinds"]["unanswerable"]["declined"] == 0 and careful["kinds"]["unanswerable"]["declined"] == 2
    assert basic["kinds"]["single"]["quality"] == careful["kinds"]["single"]["quality"] == 1.0
    assert basic["mean_seconds"] == 0.5 and careful["mean_seconds"] == 2.5  # verification's 0.5 s taken out
    assert basic["mean_verification_seconds"] == 0.5 and basic["mean_verification_calls"] == 1
    rec = report["recommendation"]
    assert rec["pattern"] == "careful" and rec["rule"]
    q3 = next(q for q in report["questions"] if q["id"] == "q3")
    assert q3["runs"]["careful"]["thread_id"] == "careful-q3" and q3["runs"]["basic"]["quality"] < 1


CHILD = """
import os, signal, sys
sys.path[:0] = [{tests!r}, {root!r}]
from core.config import load_settings
from core.studio import advise
from support import advise_support as t
calls = []
inner = t.fake_run(calls)
def run_one(pattern, question, settings):
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGKILL)  # killed mid-advice, like kill -9
    return inner(pattern, question, settings)
advise.advise(load_settings(data_dir={data!r}, provider="embedded"), t.ITEMS, ["basic", "careful"],
              run_one=run_one, judge=lambda q, a: not a.strip())
"""


def test_a_killed_advice_continues_without_running_finished_runs_again(settings):
    code = CHILD.format(tests=str(TESTS), root=str(ROOT), data=str(settings.data_path))
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert child.returncode == -9, child.stderr
    calls = []
    report = advise.advise(settings, ITEMS, ["basic", "careful"], run_one=fake_run(calls),
                           judge=lambda q, a: not a.strip())
    assert report["reused_runs"] == 3 and len(calls) == 5  # only the runs the killed process had not finished
    assert report["finished_runs"] == 8
    done = {(p, q) for p, q in calls}
    assert ("basic", ITEMS[0]["question"]) not in done  # the first run finished before the kill
    again = advise.advise(settings, ITEMS, ["basic", "careful"], run_one=fake_run(calls := []), judge=lambda q, a: True)
    assert calls == [] and again["reused_runs"] == 8
    changed = [dict(ITEMS[0], facts=["5,000"])] + ITEMS[1:]  # another set: nothing is reused
    assert advise.advise(settings, changed, ["basic"], run_one=fake_run(calls), judge=lambda q, a: True)["reused_runs"] == 0


def test_background_advice_is_saved_as_it_goes_and_can_be_stopped(settings):
    import threading

    answer = fake_run([])
    second_started, release = threading.Event(), threading.Event()
    calls = []

    def run_one(pattern, question, s):  # the first run ends at once, the second waits for the test
        calls.append(pattern)
        if len(calls) == 2:
            second_started.set()
            assert release.wait(60), "never released"
        return answer(pattern, question, s)

    advice_id = advise.start(settings, ITEMS, ["basic", "careful"], "t.jsonl", run_one=run_one,
                             judge=lambda q, a: not a.strip())
    assert advise.list_advice(settings)[0]["id"] == advice_id
    assert second_started.wait(60), "the second run never started"
    running = advise.load_advice(settings, advice_id)  # saved as it goes: the first run is on disk already
    assert running["status"] == "running" and running["progress"]["done"] == 1
    [worker] = [t for t in threading.enumerate() if t.name == f"advise-{advice_id}"]  # waiting in the second run
    assert advise.stop(advice_id)  # asked while the second run is in flight: it ends, no third one starts
    release.set()
    worker.join(60)
    assert not worker.is_alive()
    record = advise.load_advice(settings, advice_id)
    assert record["status"] == "stopped" and record["report"]["finished_runs"] == 2 and len(calls) == 2
    assert not advise.stop(advice_id)  # nothing left to stop


def test_estimates_come_from_measured_timings_and_pick_what_fits_the_budget(settings):
    from core.llm.models import model_name, resolve_provider

    assert advise.estimate(settings, ["basic", "self_rag"], 10) == {"basic": None, "self_rag": None}
    assert advise.fit_budget({"basic": None, "self_rag": None}, 60) == (["basic", "self_rag"], [])
    provider = resolve_provider(settings)
    folder = settings.data_path / "evals"
    folder.mkdir(parents=True)
    (folder / "20250101-000000-embedded.json").write_text(json.dumps({
        "provider": provider, "model": model_name(settings, provider),
        "patterns": {"basic": {"summary": {"questions": 2, "mean_seconds": 40.0, "mean_llm_calls": 2}}}}))
    estimates = advise.estimate(settings, ["basic", "self_rag"], 10)
    assert estimates["basic"] == 400.0 and estimates["self_rag"] > estimates["basic"]  # bound x 20 s per call
    assert advise.fit_budget(estimates, 500) == (["basic"], ["self_rag"])


@pytest.fixture
def scripted_cli(monkeypatch, settings):
    import core.cli.common
    import core.llm.models
    import core.run.runner
    from support.scripted import ScriptedChatModel

    calls = []
    monkeypatch.setattr(core.cli.common, "knowledge", lambda s: None)
    monkeypatch.setattr(core.cli.common, "prepare_model", lambda s: None)
    monkeypatch.setattr(core.run.runner, "run", lambda p, q, s, origin="": fake_run(calls)(p, q, s))
    judge = ScriptedChatModel(responder=lambda messages: {"declined": "7,000" not in str(messages[-1].content)})
    monkeypatch.setattr(core.llm.models, "get_chat_model", lambda s, role="main": judge)
    return calls


def test_the_advise_command_prints_scores_and_a_recommendation_as_json(tmp_path, settings, scripted_cli, capsys):
    from core.cli.main import main
    from core.studio.question_set import dump_question_set

    path = tmp_path / "set.jsonl"
    path.write_text(dump_question_set(ITEMS), encoding="utf-8")
    argv = ["--data-dir", str(settings.data_path), "advise", "--set", str(path), "--patterns", "basic,careful", "--json"]
    from core.patterns import pattern_ids
    assert "careful" not in pattern_ids()
    assert main(argv) == 2  # an unknown pattern is refused before anything runs
    assert scripted_cli == []
    argv[argv.index("basic,careful")] = "basic,corrective"
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed["recommendation"]) >= {"pattern", "reasons", "rule"}
    assert set(printed["patterns"]) == {"basic", "corrective"} and len(scripted_cli) == 8
    assert main(argv) == 0 and len(scripted_cli) == 8  # started again: every run is reused
    assert json.loads(capsys.readouterr().out)["reused_runs"] == 8
    assert advise.list_advice(settings)[0]["status"] == "done"


def test_a_real_run_s_claim_check_is_costed_apart_from_the_pattern(sample_data_dir, tmp_path):
    """Through the runner (scripted model, claims checked by the model): the pattern's LLM calls, tokens and
    seconds leave the claim check out, and the check's own calls, tokens and seconds are reported beside them."""
    import shutil

    from core.config import load_settings
    from support.app_support import happy_script
    from support.helpers import run_script

    shutil.copytree(sample_data_dir / "chroma", tmp_path / "data" / "chroma")
    settings = load_settings(data_dir=str(tmp_path / "data"), provider="embedded", verify_claims="model")
    script = happy_script()
    script.replies["claim"] = {"verdict": "supported"}
    results = []

    def run_one(pattern, question, s):
        results.append(run_script(pattern, question, s, script))
        return results[-1]

    item = {"id": "steak", "question": "스테이크 메뉴의 가격은 얼마인가요?", "sources": ["restaurant_menu"],
            "facts": ["35,000"], "answerable": True, "category": "single", "kind": "single"}
    report = advise.advise(settings, [item], ["basic"], run_one=run_one, judge=lambda q, a: False)
    [result] = results
    row = report["patterns"]["basic"]
    claim_calls = script.log.count("claim")
    assert claim_calls >= 1 and result["verification"]["llm_calls"] == claim_calls
    assert row["mean_llm_calls"] == len(script.log) - claim_calls  # the pattern's own calls only
    assert row["mean_verification_calls"] == claim_calls
    assert row["mean_tokens"] == result["tokens"] and result["verification"]["tokens"] > 0
    assert row["mean_verification_tokens"] == result["verification"]["tokens"]
    assert row["mean_verification_seconds"] == round(result["verification"]["ms"] / 1000, 3)
    assert row["mean_seconds"] == round((result["ms"] - result["verification"]["ms"]) / 1000, 3)
    from core.cli.advise import render_advice
    from core.studio.recommend import markdown_report

    for text in (markdown_report(report), render_advice(report)):  # both say what the check cost, apart
        assert all(c in text for c in ("mean_llm_calls", "mean_verification_calls", "mean_verification_tokens",
                                       "mean_verification_seconds")), text


def test_an_endless_set_file_is_refused_at_the_size_limit_in_one_line(settings, capsys):
    """``--set /dev/zero`` used to be read whole before the 2 MB check: MemoryError, not a message."""
    from core.cli.main import main

    assert main(["--data-dir", str(settings.data_path), "advise", "--set", "/dev/zero", "--patterns", "basic"]) == 2
    err = capsys.readouterr().err  # the samples' indexing progress first, then the one line
    assert err.endswith("\nerror: zero: larger than 2 MB; split it into smaller sets\n") and "Traceback" not in err


def test_advising_on_a_collection_without_a_description_says_so_first(tmp_path, settings, scripted_cli, capsys,
                                                                      monkeypatch):
    """Adaptive, advising on an undescribed FAQ, routed 9 of its 10 questions to the web; the user is told before."""
    import core.cli.common
    from core.cli.main import main
    from core.knowledge.sources import update_source
    from core.studio.question_set import dump_question_set
    from support import question_corpus

    kb = question_corpus.build(tmp_path, settings)
    update_source(kb, "bees", description="Harbor Hill Apiary's notes: colonies, harvest, pests.")
    monkeypatch.setattr(core.cli.common, "knowledge", lambda s: kb)
    assert advise.undescribed(kb, ITEMS) == ["bikes"]
    path = tmp_path / "set.jsonl"
    path.write_text(dump_question_set(ITEMS), encoding="utf-8")
    assert main(["--data-dir", str(settings.data_path), "advise", "--set", str(path), "--patterns", "basic"]) == 0
    err = capsys.readouterr().err
    assert "note: bikes has no description" in err and "collections --suggest bikes --save" in err
    assert "bees has no description" not in err
    update_source(kb, "bikes", description="누비라 공공자전거 안내")
    assert advise.undescribed(kb, ITEMS) == []


def auto_run(calls, reads=None):
    """fake_run, plus Auto: it reads each question's kind (``reads``: id -> kind, else the set's) and, like careful,
    declines what is not in the documents, in basic's seconds."""
    inner = fake_run(calls)

    def run_one(pattern, question, settings):
        item = next(i for i in ITEMS if i["question"] == question)
        if pattern != "auto":
            return inner(pattern, question, settings)
        kind = (reads or {}).get(item["id"], item["kind"])
        routed = "careful" if kind == "unanswerable" else "basic"
        return {**inner(routed, question, settings), "question_kind": kind, "auto_pattern": routed,
                "thread_id": f"auto-{item['id']}", "ms": 1500}
    return run_one


def test_advise_measures_auto_beside_the_patterns_and_says_whether_it_pays(settings):
    report = advise.advise(settings, ITEMS, ["basic", "careful", "auto"], run_one=auto_run([]),
                           judge=lambda q, a: not a.strip())
    auto = report["patterns"]["auto"]
    assert auto["kind_accuracy"] == 1.0 and auto["routed"] == {"basic": 2, "careful": 2}
    verdict = report["recommendation"]["auto"]
    # careful is the best single pattern (it declines both unanswerable questions) at 2.5 s; Auto matches its
    # quality at 1.0 s (1.5 s less the 0.5 s claim check), 0.4x
    assert verdict["best"] == "careful" and verdict["quality"] == verdict["best_quality"]
    assert verdict["seconds_ratio"] == 0.4 and verdict["pays"] is True
    assert any(r.startswith("auto pays: quality 1.00 against the best single pattern, careful") for r in
               report["recommendation"]["reasons"])
    q3 = next(q for q in report["questions"] if q["id"] == "q3")
    assert q3["runs"]["auto"]["routed"] == "careful" and q3["runs"]["auto"]["read_kind"] == "unanswerable"
    assert "Auto read the kind as the set labels it for 1.0 of its questions and ran: basic 2, careful 2." in \
        markdown_report(report)


def test_auto_that_misreads_a_kind_is_measured_as_not_paying(settings):
    report = advise.advise(settings, ITEMS, ["basic", "careful", "auto"],
                           run_one=auto_run([], reads={"q3": "single", "q4": "single"}),
                           judge=lambda q, a: not a.strip())
    assert report["patterns"]["auto"]["kind_accuracy"] == 0.5
    verdict = report["recommendation"]["auto"]
    assert verdict["pays"] is False and verdict["quality_ok"] is False and verdict["seconds_ok"] is True
    assert any(r.startswith("auto does not pay (lower quality)") for r in report["recommendation"]["reasons"])


def test_without_auto_in_the_advice_there_is_no_verdict_on_it(settings):
    report = advise.advise(settings, ITEMS, ["basic", "careful"], run_one=fake_run([]),
                           judge=lambda q, a: not a.strip())
    assert report["recommendation"]["auto"] is None
    assert not any(r.startswith("auto ") for r in report["recommendation"]["reasons"])


def test_a_fresh_advice_runs_everything_again_and_continues_its_own_round(settings):
    first = []
    advise.advise(settings, ITEMS, ["basic"], run_one=fake_run(first), judge=lambda q, a: not a.strip())
    again = []
    report = advise.advise(settings, ITEMS, ["basic"], run_one=fake_run(again), judge=lambda q, a: not a.strip())
    assert len(first) == 4 and again == [] and report["reused_runs"] == 4  # the same set: its runs are reused
    fresh = []
    report = advise.advise(settings, ITEMS, ["basic"], run_one=fake_run(fresh), judge=lambda q, a: not a.strip(),
                           runs="20261207-000000-aaaaaa")
    assert len(fresh) == 4 and report["reused_runs"] == 0
    later = []
    report = advise.advise(settings, ITEMS, ["basic"], run_one=fake_run(later), judge=lambda q, a: not a.strip(),
                           runs="20261207-000000-aaaaaa")
    assert later == [] and report["reused_runs"] == 4  # continued: the fresh round's own runs


def test_the_sets_a_policy_can_be_measured_on_ask_about_the_chosen_collections_only(settings):
    from core.studio.question_set import save_question_set

    save_question_set(settings, "bikes", [i for i in ITEMS if i["sources"] == ["bikes"]])
    save_question_set(settings, "both", ITEMS)
    assert advise.sets_over(settings, ["bikes"]) == ["bikes.jsonl"]
    assert advise.sets_over(settings, ["bikes", "bees", "other"]) == ["bikes.jsonl", "both.jsonl"]
    assert advise.sets_over(settings, ["other"]) == []
