"""The openai-compatible provider against a real server: llama-cpp-python's own (``python -m llama_cpp.server``).

That server answers HTTP 500 to ``json_schema`` and ignores ``tools`` (without a function-calling chat
format), so it exercises the negotiation: structured output falls back to ``json_object``, tool calls are
emulated and the trace says so. It serves the fast Gemma 3 270M GGUF on a free local port.
"""

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from core.config import load_settings
from core.llm import graders
from core.llm.models import check, get_chat_model
from core.llm.structured import TOOLS_IGNORED, endpoint, forget_endpoints
from core.patterns import pattern_ids, termination_reasons
from core.run.runner import run
from support.paths import ROOT, SUPPORT

pytestmark = pytest.mark.server

ALIAS = "gemma-3-270m-server"
MENU_QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"
POLICY_QUESTION = "일본의 디지털 정책에서 AI 관련 내용은 무엇인가요?"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The real server on a free port; stopped (terminate, then kill) when the module is done."""
    from core.llm.model_files import gemma_270m_path

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [sys.executable, str(SUPPORT / "llama_server.py"),  # llama_cpp.server, loaded as we load
           "--model", str(gemma_270m_path()), "--model_alias", ALIAS,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", "2", "--verbose", "False"]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/models", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, f"the server exited: {log.read_text()[-2000:]}"
        time.sleep(0.5)
    else:
        proc.kill()
        raise AssertionError(f"the server did not answer in 120 s: {log.read_text()[-2000:]}")
    forget_endpoints()
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)


def _settings(url, data_dir=None, **changes):
    base = {"provider": "openai-compatible", "compat_base_url": url, "model": ALIAS, "max_tokens": 48,
            "request_timeout": 180.0}
    if data_dir:
        base["data_dir"] = str(data_dir)
    return load_settings(**{**base, **changes})


def test_negotiation_drops_json_schema_and_finds_tools_ignored(server):
    status = check(_settings(server), negotiate=True)
    assert status.ok, status.line()
    structured, tools = status.notes
    assert structured.startswith("structured output: json_object; json_schema dropped (HTTP 500")
    assert tools == f"tool calling: {TOOLS_IGNORED}"
    state = endpoint(get_chat_model(_settings(server)))
    assert state.method == "json_object" and state.tools == "ignored"


def test_max_tokens_reaches_the_server(server):
    # before: ChatOpenAI sent max_completion_tokens, which this server ignores: it wrote until its context was full
    reply = get_chat_model(_settings(server, max_tokens=5)).invoke("Write a long story about a restaurant.")
    assert reply.usage_metadata["output_tokens"] <= 5, reply.usage_metadata


def test_a_grader_through_the_server_gets_a_constrained_verdict(server):
    model = get_chat_model(_settings(server))
    docs = [graders.Document("시그니처 스테이크 가격: ₩35,000")]
    [outcome] = graders.crag_grade(model, MENU_QUESTION, docs, max_concurrency=2)
    assert not outcome.fallback, outcome.error
    assert outcome.value.grade in ("correct", "ambiguous", "incorrect")


def test_doctor_shows_what_the_endpoint_honours(server, sample_data_dir):
    env = {**os.environ, "RAG_COMPAT_BASE_URL": server, "RAG_REQUEST_TIMEOUT": "180"}
    proc = subprocess.run([sys.executable, "-m", "core", "--provider", "openai-compatible", "--model", ALIAS,
                           "--data-dir", str(sample_data_dir), "doctor"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"openai-compatible ({ALIAS}): ok" in proc.stdout
    assert "structured output: json_object; json_schema dropped (HTTP 500" in proc.stdout
    assert TOOLS_IGNORED in proc.stdout


@pytest.mark.parametrize("pattern_id", pattern_ids())
def test_every_pattern_runs_through_the_server_to_a_termination_reason(server, sample_data_dir, pattern_id):
    settings = _settings(server, sample_data_dir, k=2, max_rewrites=1, max_generations=1, max_iterations=3,
                         max_tokens=160)  # room for an emulated turn of parallel tool calls
    question = POLICY_QUESTION if pattern_id.startswith("react") else MENU_QUESTION
    # the menu alone (Self-RAG's fan-out over every sample collection took 163 s here, 55 s on one); for Graph RAG
    # one small graph (two chunks): the extraction goes through the server, call by call
    options = {} if pattern_id.startswith("react") else {"source_ids": ["restaurant_menu"]}
    if pattern_id == "graph_rag":
        options |= {"graph_max_chunks": 2, "graph_wait": True}
    result = run(pattern_id, question, settings, **options)
    assert result["error"] is None, result["error"]
    assert result["termination_reason"] in termination_reasons()
    # the 270M model sometimes ends an agent turn with an empty reply: a stop the agent reports, not a failed run
    assert result["termination_reason"] != "error" or result["termination_message"] == "the agent ended with an empty reply"
    assert result["model"] == ALIAS and result["provider"] == "openai-compatible"
    if pattern_id in ("agentic", "react_native"):  # they bind tools: the trace says they were emulated
        notes = [e["reason"] for e in result["trace"] if e["kind"] == "info" and e.get("grader") == "model"]
        assert TOOLS_IGNORED in notes, result["trace"]
