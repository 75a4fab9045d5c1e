"""Runs exported as OpenTelemetry spans (OpenInference conventions) to a real OTLP/HTTP receiver.

The receiver is tests/support/otlp_receiver.py, not Phoenix: arize-phoenix 20.x adds 66 packages (about 320 MB)
and downgrades python-dateutil to 2.9, below what chromadb's kubernetes client requires (>= 3), so it
cannot join requirements-dev.txt. The spans were read back from a real `phoenix serve` by hand (README).
"""

import logging
import socket
import subprocess
import sys

import pytest
from langchain_core.outputs import ChatGenerationChunk

from core.run import telemetry
from core.run.runner import resume, run, stream_run
from core.runtime.context import make_context
from core.store.threads import get_registry
from support.helpers import run_script, web_down
from support.otlp_receiver import OtlpReceiver
from support.scripted import ScriptedChatModel
from support.workflow_script import Script

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"
ANSWER = "시그니처 스테이크는 ₩35,000입니다 [1]."
KEY, WEB_KEY = "sk-oteltest-1234567890abcdef", "tvly-otel-secret-98765"


@pytest.fixture
def receiver():
    server = OtlpReceiver()
    yield server
    server.stop()


class CountingModel(ScriptedChatModel):
    """Reports token usage on its last streamed chunk, as OpenAI (stream_usage) and Ollama do."""

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        chunks = list(super()._stream(messages, stop, run_manager, **kwargs))
        last = chunks.pop().message
        last.usage_metadata = {"input_tokens": 40 + len(chunks), "output_tokens": 6, "total_tokens": 46 + len(chunks)}
        yield from chunks
        yield ChatGenerationChunk(message=last)


def exported(receiver) -> list[dict]:
    assert telemetry.flush(receiver.url), "the spans were not sent within the flush timeout"
    return receiver.spans()


def one(spans, name) -> dict:
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, (name, [s["name"] for s in spans])
    return found[0]


def children(spans, parent) -> list[dict]:
    return [s for s in spans if s["parent_id"] == parent["span_id"]]


def test_a_run_is_one_trace_of_node_model_and_retriever_spans(sample_settings, receiver):
    settings = sample_settings.with_(otlp_endpoint=receiver.url)
    result = run("basic", STEAK, settings, ctx=make_context(settings, llm=ScriptedChatModel(replies=[ANSWER])))
    spans = exported(receiver)
    root = one(spans, "basic run")
    assert root["parent_id"] == "" and {s["trace_id"] for s in spans} == {root["trace_id"]}
    attrs = root["attributes"]
    assert attrs["session.id"] == result["thread_id"] and attrs["input.value"] == STEAK
    assert attrs["output.value"] == result["answer"] and attrs["rag.termination_reason"] == "answered"
    assert attrs["rag.path"] == ["contextualize", "retrieve", "generate"] and attrs["rag.status"] == "done"
    assert root["resource"]["openinference.project.name"] == "agentic-rag-studio"
    assert {s["status"]["code"] for s in spans} == {1}  # OK
    # the claim check is the graph's shared tail (core.patterns.answer_review): a node span of its own, off the path
    assert [s["name"] for s in children(spans, root)] == ["contextualize", "retrieve", "generate", "verify"]
    retrieve, generate = one(spans, "retrieve"), one(spans, "generate")
    assert retrieve["attributes"]["rag.next"] == "generate"  # the conditional edge's choice
    assert generate["attributes"]["rag.termination_reason"] == "answered"
    assert [e["name"] for e in generate["events"]] == ["stop"]
    [search] = children(spans, retrieve)
    docs = search["attributes"]
    assert docs["openinference.span.kind"] == "RETRIEVER" and docs["input.value"] == STEAK
    ids = [e["chunk_id"] for e in result["trace"] if e.get("grader") == "retriever" for e in e["documents"]]
    assert [docs[f"retrieval.documents.{i}.document.id"] for i in range(len(ids))] == ids
    assert all(0 < docs[f"retrieval.documents.{i}.document.score"] <= 1 for i in range(len(ids)))
    [llm] = children(spans, generate)
    assert llm["attributes"]["openinference.span.kind"] == "LLM"
    assert llm["attributes"]["llm.output_messages.0.message.content"].strip() == ANSWER
    assert llm["attributes"]["llm.input_messages.1.message.role"] == "user"


def test_verdicts_retry_reasons_and_token_counts_are_span_attributes(sample_settings, receiver):
    settings = sample_settings.with_(k=2, max_rewrites=2, max_generations=2, otlp_endpoint=receiver.url)
    no, yes = {"relevant": "no"}, {"relevant": "yes"}
    script = Script(retrieval={"kind": "lookup"}, sources={"sources": ["restaurant_menu"]}, relevance=[no, no, yes],
                    answer=ANSWER, grounded={"grounded": "yes"}, usefulness={"useful": "yes", "score": 5},
                    rewrite={"question": "시그니처 스테이크 가격"})
    model = CountingModel(responder=script)
    result = run("self_rag", STEAK, settings, ctx=make_context(settings, llm=model, grader=model, web=web_down))
    assert result["termination_reason"] == "accepted"
    spans = exported(receiver)
    nodes = [s for s in spans if s["attributes"].get("rag.node") and s["attributes"]["openinference.span.kind"] == "CHAIN"]
    retries = [r for s in nodes for r in s["attributes"].get("rag.retry_reasons", [])]
    assert "no relevant documents" in retries
    verdicts = [v for s in nodes for v in s["attributes"].get("rag.verdicts", [])]
    expected = [f"{e['grader']}: {e['verdict']}" for e in result["trace"]
                if e["kind"] == "verdict"]  # the claim check's verdict included: its node, verify, carries it
    assert sorted(verdicts) == sorted(expected) and len(expected) >= 4
    searches = [s for s in spans if s["attributes"]["openinference.span.kind"] == "RETRIEVER"]
    assert len(searches) == len([e for e in result["trace"] if e.get("documents")]) == 2  # not again for the subgraph
    [end] = [s for s in nodes if "rag.termination_reason" in s["attributes"]]
    assert end["attributes"]["rag.termination_reason"] == "accepted"
    calls = [s["attributes"] for s in spans if s["attributes"].get("openinference.span.kind") == "LLM"]
    assert len(calls) == len(script.log) and all(c["llm.token_count.completion"] == 6 for c in calls)
    assert sum(c["llm.token_count.total"] for c in calls) == result["tokens"] > 0  # what the run counted
    [answer] = [c for c in calls if c["rag.node"] == "generate"]
    assert answer["llm.token_count.prompt"] == 40 + len(ANSWER.split(" ")) - 1


def test_a_route_choice_is_a_span_attribute(sample_settings, receiver):
    settings = sample_settings.with_(otlp_endpoint=receiver.url)
    script = Script(router={"route": "restaurant_menu"}, relevance={"relevant": "yes"}, answer=ANSWER,
                    grounded={"grounded": "yes"}, usefulness={"useful": "yes", "score": 5})
    result = run_script("adaptive", STEAK, settings, script)
    route = one(exported(receiver), "route_question")
    assert route["attributes"]["rag.routes"] == ["restaurant_menu"]
    assert [e["name"] for e in route["events"]].count("route") == 1
    assert result["path"][:3] == ["contextualize", "route_question", "search_collection"]


def test_keys_in_settings_questions_and_errors_never_reach_a_span(sample_settings, receiver):
    settings = sample_settings.with_(openai_api_key=KEY, tavily_api_key=WEB_KEY, otlp_endpoint=receiver.url)
    failing = ScriptedChatModel(replies=[ConnectionError(f"401 for 'Bearer {KEY}' (web key {WEB_KEY})")])
    result = run("basic", f"내 키는 {KEY} 인데 스테이크 가격은?", settings, ctx=make_context(settings, llm=failing))
    assert result["termination_reason"] == "error"
    spans = exported(receiver)
    raw = b"".join(receiver.bodies)
    for secret in (KEY, WEB_KEY):
        assert secret.encode() not in raw and secret[4:].encode() not in raw
    llm = one(spans, "ScriptedChatModel")
    assert llm["status"]["code"] == 2 and "Bearer ***" in llm["status"]["message"]  # the error is there, redacted
    assert "***" in llm["status"]["message"].split("web key")[1]
    root = one(spans, "basic run")
    assert root["status"]["code"] == 2 and "***" in root["attributes"]["input.value"]


def test_a_run_left_mid_way_ends_its_span_as_cancelled(sample_settings, receiver):
    settings = sample_settings.with_(otlp_endpoint=receiver.url)
    events = stream_run("basic", STEAK, settings, ctx=make_context(settings, llm=ScriptedChatModel(replies=[ANSWER])))
    assert next(e for e in events if e["type"] == "node")["node"] == "contextualize"
    events.close()  # the page was left
    spans = exported(receiver)
    root = one(spans, "basic run")
    assert root["attributes"]["rag.status"] == "cancelled" and root["status"]["code"] == 0  # neither OK nor failed
    assert root["attributes"]["rag.termination_reason"] == "cancelled"
    assert [s["name"] for s in children(spans, root)] == ["contextualize"]


def test_a_review_pause_and_its_resume_are_two_traces_of_one_session(sample_settings, receiver):
    settings = sample_settings.with_(otlp_endpoint=receiver.url)
    ctx = make_context(settings, llm=ScriptedChatModel(replies=[ANSWER]))
    paused = run("basic", STEAK, settings, ctx=ctx, review=True)
    assert paused["interrupted"]
    done = resume(paused["thread_id"], {"action": "approve"}, settings, ctx=ctx, review=True)
    assert done["termination_reason"] == "answered"
    spans = exported(receiver)
    first, second = [s for s in spans if s["name"] == "basic run"]
    assert (first["attributes"]["rag.status"], second["attributes"]["rag.status"]) == ("waiting", "done")
    assert first["attributes"]["session.id"] == second["attributes"]["session.id"] == paused["thread_id"]
    assert second["attributes"]["rag.resumed"] is True and first["trace_id"] != second["trace_id"]
    waiting = [s for s in spans if s["attributes"].get("rag.interrupted")]
    assert [s["trace_id"] for s in waiting] == [first["trace_id"]] and waiting[0]["status"]["code"] == 1  # not an error


class BlackHole:
    """A port that accepts connections and never answers (a collector that hangs)."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/traces"


def closed_port_url() -> str:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/traces"  # nothing listens there any more: connections are refused


@pytest.mark.parametrize("kind", ["refused", "hangs"])
def test_an_unreachable_endpoint_never_fails_a_run(sample_settings, monkeypatch, caplog, kind):
    monkeypatch.setattr(telemetry, "EXPORT_TIMEOUT_SECONDS", 1.0)
    hole = BlackHole() if kind == "hangs" else None
    settings = sample_settings.with_(otlp_endpoint=hole.url if hole else closed_port_url())
    try:
        with caplog.at_level(logging.WARNING):
            result = run("basic", STEAK, settings, ctx=make_context(settings, llm=ScriptedChatModel(replies=[ANSWER])))
            assert result["answer"].strip() == ANSWER and result["error"] is None
            assert get_registry(settings.data_path).get(result["thread_id"])["status"] == "done"
            telemetry.flush(settings.otlp_endpoint, timeout_seconds=5)
        if hole:  # the export was tried (the spans were made) and given up on
            hole.sock.settimeout(1)
            hole.sock.accept()[0].close()
        assert any("export" in r.getMessage().lower() for r in caplog.records if r.name.startswith("opentelemetry"))
    finally:
        if hole:
            hole.sock.close()


def test_unset_or_malformed_endpoint_means_no_spans_and_no_import(sample_settings, caplog):
    assert telemetry.run_tracer(sample_settings, "basic", "t1", 1, "q") is None
    with caplog.at_level(logging.WARNING):
        odd = sample_settings.with_(otlp_endpoint="localhost:6006/v1/traces")  # no scheme
        assert telemetry.run_tracer(odd, "basic", "t1", 1, "q") is None
    assert "RAG_OTLP_ENDPOINT is not used: the URL must start with http:// or https://" in caplog.text
    probe = ("import sys, core.run.runner; "
             "print(sorted(m for m in ('core.run.spans', 'opentelemetry.exporter.otlp.proto.http', "
             "'openinference.semconv') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=str(telemetry.__file__).rsplit("/core/", 1)[0])
    assert out.stdout.strip() == "[]"
