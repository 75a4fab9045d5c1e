"""The runner on the basic pattern with a scripted model: result shape, threads, errors."""

import pytest

from core.run.runner import RunInputError, run, stream_run
from core.runtime.context import make_context
from core.store.history import thread_history
from core.store.threads import get_registry
from support.scripted import ScriptedChatModel


def _ctx(settings, *replies):
    return make_context(settings, llm=ScriptedChatModel(replies=list(replies)))


def test_basic_run_returns_answer_sources_trace_and_reason(sample_settings):
    ctx = _ctx(sample_settings, "시그니처 스테이크는 ₩35,000입니다 [1].")
    result = run("basic", "스테이크 메뉴의 가격은 얼마인가요?", sample_settings, ctx=ctx)
    assert result["answer"].startswith("시그니처 스테이크는 ₩35,000")
    assert result["termination_reason"] == "answered"
    assert any(s["source"] == "restaurant_menu.md" for s in result["sources"])
    # the sources the run had first; the claim check of the answer last
    assert [e["kind"] for e in result["trace"]] == ["info", "tool", "stop", "verdict"]
    assert result["llm_calls"] == 1 and result["usage"]["generate"]["llm_calls"] == 1
    assert result["path"] == ["contextualize", "retrieve", "generate"]
    assert result["interrupted"] is False and result["error"] is None
    assert get_registry(sample_settings.data_path).get(result["thread_id"])["status"] == "done"


def test_answer_tokens_stream_and_follow_ups_are_contextualised(sample_settings):
    llm = ScriptedChatModel(replies=["파스타는 ₩28,000입니다 [1].", "트러플 크림 파스타의 재료는 무엇인가요?",
                                     "블랙 트러플과 페투치네입니다 [1]."])
    ctx = make_context(sample_settings, llm=llm)
    events = list(stream_run("basic", "트러플 크림 파스타 가격은?", sample_settings, ctx=ctx))
    tokens = "".join(e["text"] for e in events if e["type"] == "token")
    assert tokens.strip() == "파스타는 ₩28,000입니다 [1]."
    thread_id = events[0]["thread_id"]
    second = run("basic", "그거 재료는?", sample_settings, ctx=ctx, thread_id=thread_id)
    assert second["standalone_question"] == "트러플 크림 파스타의 재료는 무엇인가요?"
    assert second["trace"][0]["kind"] == "rewrite"
    assert [e["kind"] for e in second["trace"]].count("stop") == 1  # the trace is per turn
    history = thread_history(sample_settings, thread_id)
    assert [t["question"] for t in history] == ["트러플 크림 파스타 가격은?", "그거 재료는?"]
    assert history[1]["answer"] == "블랙 트러플과 페투치네입니다 [1]."
    assert history[1]["result"]["standalone_question"] == second["standalone_question"]


def test_provider_failure_is_one_clear_message_and_the_thread_stays_usable(sample_settings):
    ctx = _ctx(sample_settings, ConnectionError("Connection refused"), "다시 답합니다.")
    failed = run("basic", "스테이크 가격?", sample_settings, ctx=ctx)
    assert failed["termination_reason"] == "error"
    assert "Cannot reach the model server" in failed["error"]
    assert get_registry(sample_settings.data_path).get(failed["thread_id"])["status"] == "failed"
    again = run("basic", "스테이크 가격?", sample_settings, ctx=ctx, thread_id=failed["thread_id"])
    assert again["answer"] == "다시 답합니다." and again["error"] is None


@pytest.mark.parametrize("question", ["", "   ", "가" * 5000])
def test_empty_or_huge_questions_are_refused_with_a_reason(sample_settings, question):
    with pytest.raises(RunInputError):
        run("basic", question, sample_settings, ctx=_ctx(sample_settings))


def test_the_question_length_limit_is_a_setting_its_refusal_names(tmp_path, monkeypatch):
    """RAG_MAX_QUESTION_CHARS lowers the limit in core, and the one-line refusal names it; nothing is written."""
    from core.config import load_settings
    from core.run.runner import check_question
    from core.studio.step_fields import FieldError, coerce

    monkeypatch.setenv("RAG_MAX_QUESTION_CHARS", "10")
    settings = load_settings(data_dir=str(tmp_path / "data"), provider="embedded")
    assert settings.max_question_chars == 10
    assert check_question(" " + "가" * 10 + " ", settings) == "가" * 10
    refusal = (r"^The question is 11 characters long; the limit is 10 characters \(RAG_MAX_QUESTION_CHARS\)\. "
               r"Shorten it or put the long text into the knowledge base instead\.$")
    with pytest.raises(RunInputError, match=refusal):
        check_question("가" * 11, settings)
    with pytest.raises(RunInputError, match=refusal):
        run("basic", "가" * 11, settings, ctx=_ctx(settings))
    assert get_registry(settings.data_path).list() == []
    with pytest.raises(FieldError, match=r"^question is 11 characters long; the limit is 10 characters "
                                         r"\(RAG_MAX_QUESTION_CHARS\)$"):  # a what-if's changed text: the same limit
        coerce("question", {"kind": "text"}, "가" * 11, {}, {}, max_chars=settings.max_question_chars)


def test_an_option_the_pattern_does_not_take_is_refused_not_dropped(sample_settings):
    """A renamed option (graph_collections → source_ids) was silently ignored: Graph RAG built every graph."""
    before = len(get_registry(sample_settings.data_path).list())
    with pytest.raises(RunInputError, match="graph_rag takes no run option graph_collections; it takes: review, "):
        run("graph_rag", "스테이크 가격?", sample_settings, graph_collections=["restaurant_menu"])
    with pytest.raises(RunInputError, match="variant"):
        run("basic", "스테이크 가격?", sample_settings, variant="complexity")
    assert len(get_registry(sample_settings.data_path).list()) == before  # refused before any thread was made


@pytest.mark.parametrize("limit", [1, 0])
def test_a_run_with_a_concurrency_limit_of_one_or_less_still_ends(sample_settings, limit):
    """RAG_MAX_CONCURRENCY=1 hung before the first node: LangGraph's sync stream holds one pool worker to wait
    on the graph's output, so a limit of one left no worker for the nodes."""
    import threading

    settings = sample_settings.with_(max_concurrency=limit)
    results: list[dict] = []
    worker = threading.Thread(target=lambda: results.append(
        run("basic", "스테이크 가격?", settings, ctx=_ctx(settings, "₩35,000입니다 [1]."))), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert results and results[0]["termination_reason"] == "answered", "the run did not end within a minute"
