"""The CLI as a user runs it: arguments, output and exit codes through core.cli.main in this process (run_cli);
real processes (cli_process) only where a process is the point:
- `python -m core --help`: the entry point and its exit status;
- the real model's ask (real_model): one question end to end, as a user types it;
- collections listed by a new process after an ingest: what was stored, not what this process cached;
- elsewhere: `verify` reading stdin as a process (test_claims), `ask --json` with a scripted model
  (test_verification), runs killed outright (processes.py, test_advise), no telemetry import (test_telemetry)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.helpers import cli_process, run_cli
from support.paths import CORPORA, ROOT


def copy_samples(sample_data_dir, data: Path) -> Path:
    """A data directory holding the session's indexed sample collections (nothing to embed again)."""
    shutil.copytree(sample_data_dir / "chroma", data / "chroma")
    return data


def test_python_dash_m_core_is_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "core", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m core") and "ask" in proc.stdout and "migrate" in proc.stdout
    bad = subprocess.run([sys.executable, "-m", "core", "no-such-command"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "invalid choice: 'no-such-command'" in bad.stderr


@pytest.mark.real_model
def test_ask_json_on_the_embedded_model_cites_the_menu(sample_data_dir):
    proc = cli_process("ask", "--json", "스테이크 메뉴의 가격은 얼마인가요?", data_dir=sample_data_dir)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    for key in ("answer", "pattern", "thread_id", "termination_reason", "sources", "trace", "llm_calls", "interrupted"):
        assert key in result
    assert result["provider"] == "embedded"
    assert any(s["source"] == "restaurant_menu.md" for s in result["sources"])
    assert result["termination_reason"] == "answered" and result["llm_calls"] >= 1


def test_openai_without_a_key_fails_with_one_clear_line(sample_data_dir, tmp_path):
    data = copy_samples(sample_data_dir, tmp_path / "data")
    proc = run_cli("ask", "--provider", "openai", "스테이크 메뉴의 가격은 얼마인가요?", data_dir=data)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("  ")
             and "indexed sample" not in line]
    assert lines == ["error: OpenAI needs OPENAI_API_KEY: set it in the environment, .env or "
                     ".streamlit/secrets.toml, or choose another provider"]
    assert "Traceback" not in proc.stderr


def test_doctor_and_ingest_report_per_file_errors(sample_data_dir, tmp_path):
    data = copy_samples(sample_data_dir, tmp_path / "d")
    good = tmp_path / "note.md"
    good.write_text("# 주차 안내\n건물 지하 2층에 주차할 수 있습니다.")
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"not a pdf")
    proc = run_cli("ingest", str(good), str(bad), "--collection", "notes", data_dir=data)
    assert proc.returncode == 1
    assert "ok     note.md: 1 chunks -> notes" in proc.stdout
    assert "bad.pdf: cannot read this PDF" in proc.stdout
    doctor = run_cli("doctor", data_dir=data)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "embedded (gemma-3-270m): ok" in doctor.stdout
    assert "collection     : notes: 1 chunks" in doctor.stdout


def test_eval_refuses_a_limit_below_one_before_running_anything(tmp_path):
    for limit in ("0", "-1", "ten"):
        proc = run_cli("eval", "--limit", limit, "--patterns", "basic", data_dir=tmp_path)
        assert proc.returncode == 2
        assert f"argument --limit: expected a whole number of at least 1, got '{limit}'" in proc.stderr
    assert not (tmp_path / "evals").exists()  # no empty evaluation saved


def test_ingest_with_a_description_survives_a_restart_and_collections_lists_it(sample_data_dir, tmp_path):
    data = copy_samples(sample_data_dir, tmp_path / "data")
    guide = CORPORA / "hanbit_bikes.md"
    proc = run_cli("ingest", str(guide), "--collection", "hanbit_bikes", "--name", "누비라 안내",
                "--description", "한빛시 공공자전거 누비라의 요금과 대여소.", data_dir=data)
    assert proc.returncode == 0, proc.stderr
    listed = cli_process("collections", "--json", data_dir=data)  # a new process: what was stored, not what was cached
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {"hanbit_bikes", "restaurant_menu", "restaurant_wine", "japan_ict", "usa_ict"}
    bikes = rows["hanbit_bikes"]
    assert (bikes["display_name"], bikes["description"], bikes["chunks"], bikes["enabled"]) == \
        ("누비라 안내", "한빛시 공공자전거 누비라의 요금과 대여소.", 1, True)
    assert bikes["embedding_model"] == "embedded:multilingual-e5-small"
    assert "Restaurant menu" in rows["restaurant_menu"]["display_name"]  # the samples ship described
    off = run_cli("collections", "--set", "restaurant_menu", "--enabled", "off", data_dir=data)
    assert off.returncode == 0 and "restaurant_menu          off" in off.stdout
    refused = run_cli("ingest", str(guide), "--collection", "web", data_dir=data)
    assert refused.returncode == 2 and "'web' is reserved" in refused.stderr


def test_eval_with_a_broken_question_set_names_the_line(tmp_path):
    broken = tmp_path / "mine.jsonl"
    broken.write_text('{"question": "누비라 요금은?", "sources": ["hanbit_bikes"]}\n{"sources": []}\n', encoding="utf-8")
    proc = run_cli("eval", "--set", str(broken), "--patterns", "basic", data_dir=tmp_path / "d")
    assert proc.returncode == 2
    assert "error: mine.jsonl line 2: 'question' is missing or empty" in proc.stderr
    assert not (tmp_path / "d" / "evals").exists()


def test_migrate_without_a_target_says_how_to_give_one_without_a_command_line_password(tmp_path):
    proc = run_cli("migrate", data_dir=tmp_path, env={"RAG_MIGRATE_DATABASE_URL": "", "RAG_MIGRATE_CHROMA_URL": ""})
    assert proc.returncode == 2
    assert "RAG_MIGRATE_DATABASE_URL" in proc.stderr and "- to read it from stdin" in proc.stderr
    shown = run_cli("migrate", "--help", data_dir=tmp_path)
    assert shown.returncode == 0 and "RAG_MIGRATE_DATABASE_URL" in shown.stdout


def test_migrate_reads_the_database_url_from_stdin_and_never_echoes_it(tmp_path, monkeypatch):
    monkeypatch.delenv("RAG_MIGRATE_DATABASE_URL", raising=False)
    monkeypatch.delenv("RAG_MIGRATE_CHROMA_URL", raising=False)
    proc = run_cli("migrate", "--to-database", "-", data_dir=tmp_path, stdin="mysql://rag:pw-from-stdin@db/rag\n")
    assert proc.returncode == 2 and "takes a postgresql:// URL" in proc.stderr  # the URL read was checked
    assert "pw-from-stdin" not in proc.stdout + proc.stderr
