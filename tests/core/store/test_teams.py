"""Team back ends (issue #14) on real servers: a throw-away PostgreSQL cluster and a `chroma run` server.

The servers start once per session (tests/conftest.py); each test gets a fresh database and an empty
Chroma server. Leave these out by hand with ``-m "not teams"``; a missing PostgreSQL fails them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.cli.migrate import migrate
from core.knowledge.base import SAMPLES_DIR, KnowledgeBase
from core.run.runner import resume, run
from core.runtime.context import make_context
from core.store.checkpoint import get_checkpointer, pending_interrupts, prune
from core.store.history import thread_history
from core.store.threads import ThreadBusyError, ThreadRegistry, get_registry
from core.studio.steps import chain, open_graph
from support.app_support import HAPPY_ANSWER, happy_script
from support.paths import ROOT, SUPPORT
from support.processes import child, kill, read_until
from support.scripted import ScriptedChatModel

pytestmark = pytest.mark.teams


def scripted_ctx(settings):
    script = happy_script()
    script.replies["contextualize"] = lambda m: m[-1].content  # a follow-up stands as asked
    model = ScriptedChatModel(responder=script)
    return make_context(settings, llm=model, grader=model, web=lambda q: None)


@pytest.fixture
def shared(team_settings, sample_data_dir):
    """A replica's settings over a Chroma server holding the sample collections (copied, not embedded again)."""
    migrate(sample_data_dir, to_chroma=team_settings.chroma_url)
    return team_settings.with_(k=2)


def race(*calls) -> list:
    """Run the calls at once (released together); each outcome is its return value or its exception."""
    start, outcomes = threading.Barrier(len(calls)), [None] * len(calls)

    def go(i, call):
        start.wait()
        try:
            outcomes[i] = call()
        except Exception as exc:  # the loser's refusal is an outcome
            outcomes[i] = exc

    workers = [threading.Thread(target=go, args=(i, c)) for i, c in enumerate(calls)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return outcomes


# ---------------------------------------------------------------- registry and claims on Postgres


def test_the_registry_on_postgres_lists_renames_and_keeps_runs(database_url):
    registry = ThreadRegistry(database_url)
    registry.touch("a", "basic", "chat question", "done")
    registry.touch("b", "basic", "eval question", "done", origin="eval")
    assert [t["thread_id"] for t in registry.list(origin="chat")] == ["a"]
    run_id = registry.begin_turn("a", "basic", "second question")
    registry.finish_run(run_id, "done", {"answer": "₩35,000", "trace": [{"node": "retrieve"}]})
    assert registry.last_run("a")["result"]["answer"] == "₩35,000"
    assert registry.get("a")["status"] == "done"
    registry.rename("a", "  renamed   thread ")
    assert registry.get("a")["title"] == "renamed thread"
    registry.delete("b")
    assert registry.get("b") is None
    version = registry.database.execute("SELECT max(version) AS v FROM rag_schema").one()["v"]
    assert version == 2 and ThreadRegistry(database_url).database.migrate() == 2  # applied once, not again


def test_two_registries_racing_for_one_claim_have_exactly_one_winner(database_url):
    """Two replicas' registries (separate connections): the check and the claim are one statement."""
    app, other = ThreadRegistry(database_url), ThreadRegistry(database_url)
    for round_ in range(10):
        thread_id = f"t{round_}"
        outcomes = race(*(lambda r=r, t=thread_id: r.begin_turn(t, "basic", "question") for r in (app, other)))
        winners = [o for o in outcomes if isinstance(o, int)]
        assert len(winners) == 1 and isinstance(next(o for o in outcomes if not isinstance(o, int)), ThreadBusyError)
        app.finish_run(winners[0], "waiting", {"answer": ""})  # paused for review
        outcomes = race(*(lambda r=r, t=thread_id: r.claim_review(t) for r in (app, other)))
        assert sum(isinstance(o, dict) for o in outcomes) == 1, outcomes
        assert "already being resumed" in str(next(o for o in outcomes if not isinstance(o, dict)))


# ---------------------------------------------------------------- runs, checkpoints, pruning


def test_a_review_paused_on_postgres_resumes_and_prune_keeps_each_thread_usable(shared):
    paused = run("adaptive", "스테이크 가격?", shared, ctx=scripted_ctx(shared), review=True)
    assert paused["interrupted"], paused
    thread_id = paused["thread_id"]
    assert pending_interrupts(shared, thread_id)  # the pause is in Postgres
    assert type(get_checkpointer(shared)).__name__ == "PostgresSaver"
    assert get_registry(shared).get(thread_id)["status"] == "waiting"
    assert not list(Path(shared.data_dir).rglob("*.sqlite"))  # nothing shared went to local files

    report = prune(shared, keep_last=1, vacuum=True)
    assert report["deleted"] > 0 and report["threads"] == 1 and report["bytes_after"] > 0
    done = resume(thread_id, {"action": "approve"}, shared, ctx=scripted_ctx(shared), review=True)
    assert done["answer"] == HAPPY_ANSWER and done["termination_reason"] != "error"
    assert get_registry(shared).get(thread_id)["status"] == "done"
    again = prune(shared, keep_last=1)
    assert again["kept"] >= 1 and pending_interrupts(shared, thread_id) == []


def cli(settings, data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """One `python -m core` process (scripted model) of a replica with its own data directory."""
    env = {**os.environ, "RAG_DATABASE_URL": settings.database_url, "RAG_CHROMA_URL": settings.chroma_url, "RAG_K": "2"}
    done = subprocess.run([sys.executable, str(SUPPORT / "scripted_cli.py"), "--data-dir", str(data_dir), *args],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_review_paused_by_one_cli_process_is_approved_by_another(shared, tmp_path):
    asked = json.loads(cli(shared, tmp_path / "a", "ask", "--pattern", "adaptive", "--review", "--json",
                           "스테이크 가격?").stdout)
    assert asked["interrupted"] and asked["interrupt"]["kind"] == "document_review"
    listed = cli(shared, tmp_path / "b", "threads").stdout
    assert asked["thread_id"] in listed and "waiting" in listed
    done = json.loads(cli(shared, tmp_path / "b", "resume", asked["thread_id"], "--approve", "--json").stdout)
    assert done["answer"] == HAPPY_ANSWER
    assert f"{asked['thread_id']}  adaptive     done" in cli(shared, tmp_path / "a", "threads").stdout
    assert not (tmp_path / "a" / "threads.sqlite").exists() and not (tmp_path / "b" / "checkpoints.sqlite").exists()



def test_an_answer_review_paused_by_one_cli_process_is_decided_by_another(shared, tmp_path):
    asked = json.loads(cli(shared, tmp_path / "a", "ask", "--pattern", "basic", "--review-answer", "always", "--json",
                           "스테이크 가격?").stdout)
    assert asked["interrupted"] and asked["interrupt"]["kind"] == "answer_review"
    assert asked["interrupt"]["answer"] == HAPPY_ANSWER and asked["interrupt"]["claims"]
    invented = "시그니처 스테이크는 ₩99,000입니다 [1]."
    done = json.loads(cli(shared, tmp_path / "b", "resume", asked["thread_id"], "--answer", invented, "--json").stdout)
    assert done["answer"] == invented and [c["verdict"] for c in done["claims"]] == ["unsupported"]  # checked again
    assert done["drafts"][0]["answer"] == HAPPY_ANSWER and pending_interrupts(shared, asked["thread_id"]) == []


# ---------------------------------------------------------------- a replica killed outright (kill -9)


def team_env(settings) -> dict:
    return {**os.environ, "RAG_DATABASE_URL": settings.database_url, "RAG_CHROMA_URL": settings.chroma_url}


def test_a_run_killed_mid_way_on_postgres_is_interrupted_and_its_thread_takes_a_new_turn(shared, tmp_path):
    first = run("basic", "스테이크 가격?", shared, ctx=scripted_ctx(shared))
    thread_id = first["thread_id"]
    proc = child(shared.with_(data_dir=str(tmp_path / "killed")), "ask", thread_id, env=team_env(shared))
    try:  # the second turn has retrieved; its answer would take minutes
        read_until(proc, lambda e: e.get("node") == "retrieve")
        assert ThreadRegistry(shared.database_url).last_run(thread_id)["status"] == "running"  # a live owner is left alone
    finally:
        kill(proc)

    registry = ThreadRegistry(shared.database_url)  # as a restarted replica opens the database
    assert registry.get(thread_id)["status"] == "interrupted"
    last = registry.last_run(thread_id)
    assert last["status"] == "interrupted" and last["result"]["termination_reason"] == "interrupted"
    _, graph = open_graph(shared, thread_id)
    state = graph.get_state({"configurable": {"thread_id": thread_id}})  # the last checkpoint loads whole
    # a step was still open when the process died (its tasks are listed; a finished run lists none). Not `next`:
    # LangGraph 1.2.24 leaves a task out of it once its writes are saved, as retrieve's are when the kill comes first
    assert [m.type for m in state.values["messages"]] == ["human", "ai", "human"] and state.tasks
    assert state.values["messages"][1].content == HAPPY_ANSWER
    snapshots = chain(graph, thread_id)  # the history, first to newest, along unbroken parent links
    assert snapshots[-1].config["configurable"]["checkpoint_id"] == state.config["configurable"]["checkpoint_id"]
    assert [s.metadata["source"] for s in snapshots].count("input") == 2
    turns = thread_history(shared, thread_id)
    assert [t["result"]["termination_reason"] for t in turns] == [first["termination_reason"], "interrupted"]

    follow_up = run("basic", "파스타 가격은?", shared, thread_id=thread_id, ctx=scripted_ctx(shared))
    assert follow_up["answer"] == HAPPY_ANSWER and follow_up["error"] is None
    turns = thread_history(shared, thread_id)
    assert [t["question"] for t in turns] == ["스테이크 가격?", "스테이크 가격?", "파스타 가격은?"]
    assert turns[2]["answer"] == HAPPY_ANSWER and ThreadRegistry(shared.database_url).get(thread_id)["status"] == "done"


def test_a_review_paused_by_a_process_killed_before_it_recorded_the_pause_is_resumed_by_another(shared, tmp_path):
    proc = child(shared.with_(data_dir=str(tmp_path / "killed")), "review-hang", env=team_env(shared))
    try:  # the pause is checkpointed; the registry still says running when the process dies
        thread_id = read_until(proc, lambda e: e["type"] == "closing")[0]["thread_id"]
        assert pending_interrupts(shared, thread_id)
        assert ThreadRegistry(shared.database_url).get(thread_id)["status"] == "running"
    finally:
        kill(proc)

    listed = cli(shared, tmp_path / "b", "threads").stdout  # another process: the pause is found, not lost
    assert f"{thread_id}  adaptive     waiting" in listed
    done = json.loads(cli(shared, tmp_path / "b", "resume", thread_id, "--approve", "--json").stdout)
    assert done["answer"] == HAPPY_ANSWER and done["termination_reason"] != "error"
    registry = ThreadRegistry(shared.database_url)
    assert registry.get(thread_id)["status"] == "done" and registry.last_run(thread_id)["status"] == "done"
    assert pending_interrupts(shared, thread_id) == []
    assert [t["answer"] for t in thread_history(shared, thread_id)] == [HAPPY_ANSWER]


# ---------------------------------------------------------------- migration and health


def test_migrate_copies_a_single_user_directory_once_and_the_paused_review_resumes(
        sample_data_dir, tmp_path, database_url, chroma_url):
    from core.config import load_settings
    from core.studio.compare import list_comparisons, save_comparison

    local = load_settings(data_dir=str(tmp_path / "local"), provider="embedded", k=2)
    shutil.copytree(sample_data_dir / "chroma", tmp_path / "local" / "chroma")  # a single user's indexed samples
    finished = run("basic", "스테이크 가격?", local, ctx=scripted_ctx(local))
    paused = run("adaptive", "와인 가격?", local, ctx=scripted_ctx(local), review=True)
    save_comparison({"id": "20250101-000000-abcdef", "date": "2025-01-01 00:00", "question": "q",
                     "patterns": ["basic"], "columns": {}}, local)

    args = [sys.executable, "-m", "core", "--data-dir", str(local.data_path), "migrate", "--to-database", database_url,
            "--to-chroma", chroma_url, "--json"]
    first = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert first.returncode == 0, first.stderr
    counts = json.loads(first.stdout.splitlines()[0])
    assert counts["threads"] == {"copied": 2, "present": 0} and counts["runs"] == {"copied": 2, "present": 0}
    assert counts["checkpoints"]["copied"] > 2 and counts["comparisons"] == {"copied": 1, "present": 0}
    assert counts["collections"] == {"copied": 4, "present": 0} and counts["chunks"]["copied"] > 4
    assert database_url.split("@")[0].split(":")[-1] not in first.stdout + first.stderr  # the password is masked

    second = json.loads(subprocess.run(args, capture_output=True, text=True, timeout=600,
                                       cwd=ROOT).stdout.splitlines()[0])
    assert all(tally["copied"] == 0 for tally in second.values()), second
    assert second["checkpoints"]["present"] == counts["checkpoints"]["copied"]

    team = local.with_(database_url=database_url, chroma_url=chroma_url, data_dir=str(tmp_path / "replica"))
    assert get_registry(team).last_run(finished["thread_id"])["result"]["answer"] == HAPPY_ANSWER
    assert [c["id"] for c in list_comparisons(team)] == ["20250101-000000-abcdef"]
    done = resume(paused["thread_id"], {"action": "approve"}, team, ctx=scripted_ctx(team), review=True)
    assert done["answer"] == HAPPY_ANSWER  # the pause and its pending review came across whole


def test_migrate_takes_the_database_url_from_the_environment_or_stdin_never_the_command_line(tmp_path, database_url):
    local = tmp_path / "local"
    ThreadRegistry(local).touch("a", "basic", "스테이크 가격?", "done")
    password = database_url.split("@")[0].split(":")[-1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_MIGRATE_")}
    args = [sys.executable, "-m", "core", "--data-dir", str(local), "migrate", "--json"]

    from_env = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT,
                              env={**env, "RAG_MIGRATE_DATABASE_URL": database_url})
    assert from_env.returncode == 0, from_env.stderr
    assert json.loads(from_env.stdout.splitlines()[0])["threads"] == {"copied": 1, "present": 0}
    from_stdin = subprocess.run(args + ["--to-database", "-"], input=database_url + "\n", capture_output=True,
                                text=True, timeout=600, cwd=ROOT, env=env)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert json.loads(from_stdin.stdout.splitlines()[0])["threads"] == {"copied": 0, "present": 1}  # the same database
    assert all(password not in done.stdout + done.stderr for done in (from_env, from_stdin))
    assert "postgresql://rag:***@" in from_stdin.stderr
    assert ThreadRegistry(database_url).get("a")["title"] == "스테이크 가격?"


def test_the_knowledge_base_ingests_and_searches_on_the_chroma_server(team_settings):
    kb = KnowledgeBase(team_settings)
    report = kb.ingest([SAMPLES_DIR / "restaurant_menu.md"], "menu_on_server")
    assert report.chunks > 0 and not report.errors
    hits = KnowledgeBase(team_settings).search("menu_on_server", "스테이크 가격", k=2)  # another client, same server
    assert hits and any("스테이크" in d.page_content for d in hits)
    assert kb.info("menu_on_server")["embedding_model"] == kb.model_id  # computed by the app, named in metadata
    assert not (Path(team_settings.data_dir) / "chroma").exists()


def test_doctor_reports_each_back_end_and_hides_the_password(team_settings):
    from core.cli.backends import report

    lines = [b.line() for b in report(team_settings)]
    assert all(": ok - " in line for line in lines), lines
    assert "Postgres postgresql://rag:***@" in lines[0] and "Chroma server http://" in lines[1]
    broken = team_settings.with_(database_url=team_settings.database_url.replace("@127.0.0.1", "x@127.0.0.1"))
    bad = report(broken)[0]
    assert not bad.ok and "password" in bad.detail.lower()
    password = broken.database_url.split("@")[0].split(":")[-1]
    assert password not in bad.line()
