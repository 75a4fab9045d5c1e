"""`python -m core steps` and `fork` as a user runs them: a new process on the same data directory (a restart),
the real embedded model continuing a run that a scripted model started."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from core.config import load_settings
from support.helpers import run_script
from support.paths import ROOT
from support.workflow_script import Script

pytestmark = pytest.mark.real_model

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"



@pytest.fixture
def own_data_dir(sample_data_dir, tmp_path):
    """The indexed samples in a data directory of this test's own: no thread of another test is in sight."""
    shutil.copytree(sample_data_dir / "chroma", tmp_path / "data" / "chroma")
    return tmp_path / "data"


@pytest.fixture
def own_settings(own_data_dir):
    return load_settings(data_dir=str(own_data_dir), provider="embedded")

def _cli(*args, data_dir):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TAVILY_API_KEY")}
    env.update(RAG_PROVIDER="embedded", RAG_MAX_TOKENS="48")
    return subprocess.run([sys.executable, "-m", "core", "--data-dir", str(data_dir), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_steps_and_a_fork_from_the_command_line_in_a_new_process(own_settings, own_data_dir):
    original = run_script("adaptive", STEAK, own_settings.with_(k=2),
                          Script(router={"route": "restaurant_menu"}, answer="₩35,000 [1]."))
    tid = original["thread_id"]

    listed = _cli("steps", tid, "--json", data_dir=own_data_dir)
    assert listed.returncode == 0, listed.stderr
    steps = json.loads(listed.stdout)
    assert [st["node"] for st in steps["steps"]] == ["__start__", "contextualize", "route_question", "search_collection",
                                                     "generate", "verify"]  # the claim check: the graph's shared tail
    assert steps["steps"][2]["wrote"] == {"route": "restaurant_menu"} and steps["forks"] == []
    text = _cli("steps", tid, data_dir=own_data_dir).stdout
    assert "route_question" in text and "change: route (japan_ict|restaurant_menu|restaurant_wine|usa_ict|web|direct)" in text

    forked = _cli("fork", tid, "--step", "2", "--set", "route=restaurant_wine", "--json", data_dir=own_data_dir)
    assert forked.returncode == 0, forked.stderr
    result = json.loads(forked.stdout)
    for key in ("answer", "pattern", "thread_id", "termination_reason", "sources", "trace", "llm_calls", "interrupted"):
        assert key in result  # the same result as `ask`
    assert result["forked_from"]["thread"] == tid and result["forked_from"]["changes"] == {"route": "restaurant_wine"}
    assert result["forked_from"]["checkpoint_id"] == steps["steps"][2]["checkpoint_id"]
    assert result["path"] == ["contextualize", "route_question", "search_collection", "generate"]
    assert result["provider"] == "embedded" and result["llm_calls"] == 1  # only the answer, on the real model
    assert {src["collection"] for src in result["sources"]} == {"restaurant_wine"}

    other = _cli("fork", tid, "--step", "3", "--thresholds", "relevance=0.9", data_dir=own_data_dir)
    assert other.returncode == 0, other.stderr
    assert "graders deciding with relevance=0.9" in other.stdout  # a replay with other thresholds is a change

    again = json.loads(_cli("steps", tid, "--json", data_dir=own_data_dir).stdout)
    assert again["steps"] == steps["steps"]  # the original's steps did not move
    assert len(again["forks"]) == 2 and again["forks"][0]["thread_id"] == result["thread_id"]
    of_fork = json.loads(_cli("steps", result["thread_id"], "--json", data_dir=own_data_dir).stdout)
    assert [st["node"] for st in of_fork["steps"] if st["changed_by_user"]] == ["route_question"]


def test_a_change_the_step_does_not_have_is_one_clear_line(own_settings, own_data_dir):
    original = run_script("adaptive", STEAK, own_settings.with_(k=2),
                          Script(router={"route": "restaurant_menu"}, answer="답 [1]."))
    for args, message in (
            (["--step", "2", "--set", "documents=x"], "error: 'documents' cannot be changed at step 2 (route_question)."),
            (["--step", "2", "--set", "route"], "error: --set needs key=value, got 'route'"),
            (["--step", "7", "--set", "route=restaurant_wine"], "error: This turn has steps 0 to 5; got step 7."),
            (["--step", "2", "--thresholds", "crag=2"], "error: Thresholds: ")):
        proc = _cli("fork", original["thread_id"], *args, data_dir=own_data_dir)
        assert proc.returncode == 2 and proc.stderr.startswith(message), proc.stderr
        assert "Traceback" not in proc.stderr
    missing = _cli("steps", "nope", data_dir=own_data_dir)
    assert missing.returncode == 2 and "Unknown thread 'nope'" in missing.stderr
