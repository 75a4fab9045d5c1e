"""Answer review (core.patterns.answer_review): every pattern's graph ends in the claim check and, when asked, a pause
on the checked answer; approve, drop, edit, revise and reject behave the same everywhere."""

import pytest
from langchain_core.messages import AIMessage

from core.knowledge import entity_graph as eg
from core.knowledge.base import SAMPLES_DIR, KnowledgeBase
from core.patterns import compile_pattern, get_pattern, pattern_ids, termination_reasons
from core.run.runner import RunInputError, resume, run, stream_run
from core.runtime.context import make_context
from core.store.history import thread_history
from support.app_support import happy_script
from support.graph_support import PAIRING_Q, Extractor
from support.helpers import web_down
from support.scripted import ScriptedChatModel

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"
BIRTHDAY = "라 포레스타 셰프의 생일은 1980년 5월 24일입니다."
SUPPORTED = "시그니처 스테이크는 ₩35,000입니다 [1]."
DRAFT = f"{SUPPORTED} {BIRTHDAY}"
CHIPS_Q = "미국 CHIPS 법의 반도체 예산은 얼마인가요?"
CHIPS = "CHIPS 법은 527억 달러를 배정했습니다 [1]."


def _tool_call(name: str, query: str) -> dict:
    return {"name": name, "args": {"query": query}, "id": "a1", "type": "tool_call"}


def _workflow(pattern, settings, answers):
    script = happy_script()
    script.replies.update(answer=list(answers), crag={"grade": "correct", "confidence": 0.9},
                          fusion={"queries": ["스테이크 가격", "스테이크 메뉴 가격"]})
    model = ScriptedChatModel(responder=script)
    return settings, make_context(settings, llm=model, grader=model, web=web_down), STEAK


def _agentic(pattern, settings, answers):
    llm = ScriptedChatModel(replies=[AIMessage("", tool_calls=[_tool_call("search_documents", "스테이크 가격")]),
                                     *answers])

    def grade(messages):
        text = messages[0].content + messages[-1].content
        return {"relevant": "yes"} if "relevant" in text else "스테이크 메뉴의 가격은 얼마인가요?"

    return settings, make_context(settings, llm=llm, grader=ScriptedChatModel(responder=grade), web=web_down), STEAK


def _react(pattern, settings, answers):
    first, *later = answers
    step = ("Thought: 찾아본다\nAction: usa_ict\nAction Input: CHIPS 법 예산" if pattern == "react"
            else AIMessage("", tool_calls=[_tool_call("usa_ict", "CHIPS 법 예산")]))
    final = f"Final Answer: {first}" if pattern == "react" else first
    llm = ScriptedChatModel(replies=[step, final, *later])
    return settings, make_context(settings, llm=llm, grader=ScriptedChatModel(replies=[]), web=web_down), CHIPS_Q


def _graph_rag(pattern, settings, answers):
    wine = settings.with_(data_dir=str(settings.data_path.parent / "wine-data"), graph_wait=True)
    if not (wine.data_path / "graphs" / "wine.json").exists():
        assert not KnowledgeBase(wine).ingest([SAMPLES_DIR / "restaurant_wine.md"], "wine").errors
        eg._cache.clear()
    llm = ScriptedChatModel(replies=list(answers))
    return wine, make_context(wine, llm=llm, grader=Extractor(entities=["시그니처 스테이크"]), web=web_down), PAIRING_Q


# pattern -> how it is scripted to write the answers given (in order) and the question it answers
CASES = {"basic": _workflow, "adaptive": _workflow, "self_rag": _workflow, "corrective": _workflow,
         "rag_fusion": _workflow, "agentic": _agentic, "react": _react, "react_native": _react, "graph_rag": _graph_rag,
         "auto": _workflow}  # Auto: the written kind "single" runs basic, whose tail pauses


@pytest.fixture
def own_settings(sample_data_dir, tmp_path):
    """The indexed samples in a data directory of this test's own (its threads apart from other tests')."""
    import shutil

    from core.config import load_settings

    shutil.copytree(sample_data_dir / "chroma", tmp_path / "data" / "chroma")
    return load_settings(data_dir=str(tmp_path / "data"), provider="embedded")


def test_the_table_covers_the_registry():
    assert set(CASES) == set(pattern_ids())
    for pid in pattern_ids():  # the tail is the registry's, not the pattern module's
        nodes = set(compile_pattern(get_pattern(pid)).get_graph().nodes)
        if get_pattern(pid).subgraph_nodes:  # Auto: the pattern it runs brings its own tail, and only that one
            assert not {"verify", "review_answer", "revise_answer"} & nodes, pid
            continue
        assert {"verify", "review_answer", "revise_answer"} <= nodes, pid
        assert "verify" not in {n.__name__ for n in get_pattern(pid).build().nodes.values()
                                if hasattr(n, "__name__")}, pid
    assert {"user_rejected", "revisions_exhausted"} <= set(termination_reasons())


@pytest.mark.parametrize("pattern", list(CASES))
def test_every_pattern_pauses_with_its_checked_answer_and_approval_keeps_it(own_settings, pattern):
    answer = DRAFT if pattern not in ("react", "react_native") else CHIPS
    settings, ctx, question = CASES[pattern](pattern, own_settings, [answer])
    paused = run(pattern, question, settings, ctx=ctx, review_answer="always")
    assert paused["interrupted"], f"{pattern} did not pause for answer review: {paused.get('termination_reason')}"
    payload = paused["interrupt"]
    assert payload["kind"] == "answer_review" and payload["node"] == "review_answer"
    written = paused["answer"]  # as the pattern returned it (Agentic rewrites citations it cannot verify)
    assert payload["answer"] == written and answer.split(" [")[0] in written and payload["question"]
    assert payload["claims"] and {"id", "text", "verdict", "evidence", "reason"} <= set(payload["claims"][0])
    assert [c["id"] for c in payload["claims"]] == [f"c{i}" for i in range(1, len(payload["claims"]) + 1)]
    assert [c["verdict"] for c in paused["claims"]] == [c["verdict"] for c in payload["claims"]]  # kept while waiting
    done = resume(paused["thread_id"], {"action": "approve", "reviewer": "민지"}, settings, ctx=ctx)
    assert not done["interrupted"] and done["answer"] == written
    assert [c["verdict"] for c in done["claims"]] == [c["verdict"] for c in payload["claims"]]
    [note] = [e for e in done["trace"] if e["node"] == "review_answer"]
    assert (note["verdict"], note["reviewer"]) == ("approve", "민지")
    assert "verify" not in done["path"]
    assert done["path"][-1] == ("run_pattern" if get_pattern(pattern).subgraph_nodes else "review_answer")


def _paused_basic(settings, answers, mode="always"):
    _, ctx, _ = _workflow("basic", settings, answers)
    paused = run("basic", STEAK, settings, ctx=ctx, review_answer=mode)
    assert paused["interrupted"] and paused["interrupt"]["kind"] == "answer_review"
    return paused, ctx


def test_dropping_the_unsupported_sentence_rechecks_what_is_left(own_settings):
    paused, ctx = _paused_basic(own_settings, [DRAFT])
    claims = {c["text"]: c for c in paused["interrupt"]["claims"]}
    birthday = claims["라 포레스타 셰프의 생일은 1980년 5월 24일입니다."]
    assert birthday["verdict"] == "unsupported"
    done = resume(paused["thread_id"], {"action": "drop", "claims": [birthday["id"]]}, own_settings, ctx=ctx)
    assert done["answer"] == SUPPORTED and [c["verdict"] for c in done["claims"]] == ["supported"]
    assert done["claim_support"]["unsupported"] == 0 and done["termination_reason"] == "answered"
    [note] = [e for e in done["trace"] if e["node"] == "review_answer"]
    assert note["verdict"] == "drop" and note["dropped"] == [birthday["text"]]
    assert note["marks"] == ["supported", "unsupported"] and note["marks_after"] == ["supported"]
    assert done["trace"][-1]["node"] == "verification"  # the check of what was left, last
    [before] = done["drafts"]  # exports carry the draft beside the answer that stood
    assert before["answer"] == DRAFT and before["decision"] == "drop"
    [turn] = thread_history(own_settings, done["thread_id"])
    assert turn["answer"] == SUPPORTED  # the conversation holds the reviewed answer, not the draft
    from core.studio.export import export_record, to_markdown

    assert export_record(done)["drafts"][0]["answer"] == DRAFT
    report = to_markdown(done)
    assert "Draft 1 (reviewer: drop)" in report and "1980년 5월 24일" in report  # both versions, the draft first
    assert report.index("Draft 1") < report.index("Sources")


def test_two_reviewers_deciding_one_answer_at_once_one_is_told_it_is_already_being_resumed(own_settings):
    """The same claim as a document review's: the first decision holds the run, the second is refused."""
    paused, ctx = _paused_basic(own_settings, [DRAFT])
    first = stream_run("", None, own_settings, thread_id=paused["thread_id"], resume={"action": "approve"}, ctx=ctx)
    assert next(first)["type"] == "start"  # the first reviewer's decision is under way
    with pytest.raises(RunInputError, match="already being resumed"):
        resume(paused["thread_id"], {"action": "reject", "message": "no"}, own_settings, ctx=ctx)
    done = list(first)[-1]["result"]
    assert done["answer"] == DRAFT and done["termination_reason"] == "answered"
    with pytest.raises(RunInputError, match="not waiting"):
        resume(paused["thread_id"], {"action": "drop", "claims": ["c1"]}, own_settings, ctx=ctx)


def test_an_edited_answer_is_checked_again_and_an_invented_figure_shows(own_settings):
    paused, ctx = _paused_basic(own_settings, [SUPPORTED])
    edited = "시그니처 스테이크는 ₩99,000입니다 [1]."
    done = resume(paused["thread_id"], {"action": "edit", "answer": edited}, own_settings, ctx=ctx)
    assert done["answer"] == edited and [c["verdict"] for c in done["claims"]] == ["unsupported"]
    [note] = [e for e in done["trace"] if e["node"] == "review_answer"]
    assert note["marks"] == ["supported"] and note["marks_after"] == ["unsupported"]


def test_revise_writes_a_second_draft_told_the_note_and_pauses_again(own_settings):
    second = f"{SUPPORTED} 셰프의 생일은 문서에 없습니다."
    script_answers = [DRAFT, second]
    paused, ctx = _paused_basic(own_settings, script_answers)
    again = resume(paused["thread_id"], {"action": "revise", "message": "생일은 문서에 없습니다"}, own_settings, ctx=ctx)
    assert again["interrupted"] and again["interrupt"]["kind"] == "answer_review"
    assert again["interrupt"]["answer"] == second
    request = ctx.llm.calls[-1][-1].content  # what the second draft was asked with
    assert "생일은 문서에 없습니다" in request and BIRTHDAY.rstrip(".") in request
    assert again["llm_calls"] == 2  # two drafts: the pattern's calls; the check's are its own
    done = resume(again["thread_id"], {"action": "approve"}, own_settings, ctx=ctx)
    assert done["answer"] == second and done["drafts"][0]["answer"] == DRAFT


def test_revisions_stop_at_the_regeneration_budget_and_say_so(own_settings):
    settings = own_settings.with_(max_generations=1)
    paused, ctx = _paused_basic(settings, [DRAFT, DRAFT])
    again = resume(paused["thread_id"], {"action": "revise", "message": "다시"}, settings, ctx=ctx)
    assert again["interrupted"]
    done = resume(again["thread_id"], {"action": "revise", "message": "또 다시"}, settings, ctx=ctx)
    assert done["termination_reason"] == "revisions_exhausted" and "1 of 1" in done["termination_message"]
    assert done["answer"] == DRAFT and not done["interrupted"]


def test_reject_ends_the_run_user_rejected_without_an_answer(own_settings):
    paused, ctx = _paused_basic(own_settings, [DRAFT])
    done = resume(paused["thread_id"], {"action": "reject", "message": "근거 없음"}, own_settings, ctx=ctx)
    assert done["termination_reason"] == "user_rejected" and done["answer"] == ""
    assert done["drafts"][0]["answer"] == DRAFT
    [turn] = thread_history(own_settings, done["thread_id"])
    assert not turn["answer"]


def test_unsupported_mode_pauses_only_for_a_doubtful_answer(own_settings):
    _, ctx, _ = _workflow("basic", own_settings, [SUPPORTED])
    clean = run("basic", STEAK, own_settings, ctx=ctx, review_answer="unsupported")
    assert not clean["interrupted"] and clean["answer"] == SUPPORTED
    paused, _ = _paused_basic(own_settings, [DRAFT], mode="unsupported")
    assert [c["verdict"] for c in paused["interrupt"]["claims"]] == ["supported", "unsupported"]


def test_the_setting_decides_when_no_option_is_given_and_off_never_pauses(own_settings):
    _, ctx, _ = _workflow("basic", own_settings, [DRAFT])
    paused = run("basic", STEAK, own_settings.with_(review_answer="always"), ctx=ctx)
    assert paused["interrupted"] and paused["interrupt"]["kind"] == "answer_review"
    _, ctx, _ = _workflow("basic", own_settings, [DRAFT])
    plain = run("basic", STEAK, own_settings.with_(review_answer="always"), ctx=ctx, review_answer="off")
    assert not plain["interrupted"] and plain["answer"] == DRAFT


def test_a_decision_the_pause_cannot_take_is_refused_and_the_pause_stays(own_settings):
    paused, ctx = _paused_basic(own_settings, [DRAFT])
    with pytest.raises(RunInputError, match="no sentence c9"):
        resume(paused["thread_id"], {"action": "drop", "claims": ["c9"]}, own_settings, ctx=ctx)
    with pytest.raises(RunInputError, match="new answer"):
        resume(paused["thread_id"], {"action": "edit", "answer": "  "}, own_settings, ctx=ctx)
    done = resume(paused["thread_id"], {"action": "drop", "claims": ["c2"]}, own_settings, ctx=ctx)
    assert done["answer"] == SUPPORTED


def test_document_review_refuses_an_answer_decision(own_settings):
    _, ctx, _ = _workflow("basic", own_settings, [SUPPORTED])
    paused = run("basic", STEAK, own_settings, ctx=ctx, review=True)
    assert paused["interrupt"]["kind"] == "document_review"
    with pytest.raises(RunInputError, match="approve, edit, reject"):
        resume(paused["thread_id"], {"action": "revise", "message": "x"}, own_settings, ctx=ctx)


# ---------------------------------------------------------------- the command line


@pytest.fixture
def cli_model(monkeypatch):
    """ask and resume in this process, on one scripted model: the first draft, then the one a revise asks for."""
    import core.cli.common
    import core.llm.models

    script = happy_script()
    script.replies["answer"] = [DRAFT, f"{SUPPORTED} 셰프의 생일은 문서에 없습니다."]
    model = ScriptedChatModel(responder=script)
    monkeypatch.setattr(core.llm.models, "get_chat_model", lambda settings, role="main": model)
    monkeypatch.setattr(core.cli.common, "prepare_model", lambda settings: None)
    return model


def _json(done):
    import json

    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_cli_asks_with_answer_review_and_drops_a_sentence(own_settings, cli_model):
    from support.helpers import run_cli

    data = own_settings.data_path
    text = run_cli("ask", "--pattern", "basic", "--review-answer", "always", STEAK, data_dir=data)
    assert text.returncode == 0 and "paused for review in thread" in text.stdout
    assert "c2  NOT  라 포레스타 셰프의 생일은 1980년 5월 24일입니다." in text.stdout
    assert "--drop ID,... | --answer TEXT | --revise MESSAGE" in text.stdout
    thread = text.stdout.split("paused for review in thread ", 1)[1].split(":", 1)[0]
    done = _json(run_cli("resume", thread, "--drop", "c2", "--reviewer", "민지", "--json", data_dir=data))
    assert done["answer"] == SUPPORTED and [c["verdict"] for c in done["claims"]] == ["supported"]
    [note] = [e for e in done["trace"] if e["node"] == "review_answer"]
    assert note["reviewer"] == "민지" and note["marks_after"] == ["supported"]
    assert done["drafts"][0]["answer"] == DRAFT
    again = run_cli("resume", thread, "--drop", "c2", data_dir=data)
    assert again.returncode == 2 and "error:" in again.stderr  # nothing waits any more


def test_cli_revise_pauses_again_and_an_edited_answer_with_an_invented_figure_shows_unsupported(own_settings, cli_model):
    from support.helpers import run_cli

    data = own_settings.data_path
    paused = _json(run_cli("ask", "--review-answer", "--json", STEAK, data_dir=data))  # no value: always
    assert paused["interrupt"]["kind"] == "answer_review" and len(paused["interrupt"]["claims"]) == 2
    for flag in ("--answer", "--drop"):  # an empty edit or drop is refused, not taken for an approval
        empty = run_cli("resume", paused["thread_id"], flag, "", data_dir=data)
        assert empty.returncode == 2 and ("needs the new answer" in empty.stderr or "needs the ids" in empty.stderr)
    second = _json(run_cli("resume", paused["thread_id"], "--revise", "생일은 문서에 없습니다", "--json", data_dir=data))
    assert second["interrupted"] and second["interrupt"]["answer"] == f"{SUPPORTED} 셰프의 생일은 문서에 없습니다."
    invented = "시그니처 스테이크는 ₩99,000입니다 [1]."
    done = _json(run_cli("resume", paused["thread_id"], "--answer", invented, "--json", data_dir=data))
    assert done["answer"] == invented and [c["verdict"] for c in done["claims"]] == ["unsupported"]
    assert [d["decision"] for d in done["drafts"]] == ["revise", "edit"]
    bad = run_cli("ask", "--review-answer", "sometimes", STEAK, data_dir=data)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


@pytest.mark.parametrize("origin", ["compare", "eval"])
def test_compare_and_evaluation_never_pause_for_answer_review(own_settings, origin):
    _, ctx, _ = _workflow("basic", own_settings, [DRAFT])
    done = run("basic", STEAK, own_settings.with_(review_answer="always"), ctx=ctx, origin=origin, review_answer="always")
    assert not done["interrupted"] and done["answer"] == DRAFT
    assert [c["verdict"] for c in done["claims"]] == ["supported", "unsupported"]  # still checked, never paused


def test_the_diagram_draws_the_tail_and_marks_the_check_where_it_ran():
    from core.studio.diagram import checked_path, focused, highlight, node_ids, pattern_mermaid

    drawn = pattern_mermaid(get_pattern("basic"))
    plain = node_ids(focused(drawn, "basic"))
    assert "verify" in plain and not {"review_answer", "revise_answer"} & plain  # the review only when it paused
    assert {"review_answer", "revise_answer"} <= node_ids(focused(drawn, "basic", review=True))
    reviewed = ["contextualize", "retrieve", "generate", "review_answer", "revise_answer", "review_answer"]
    assert checked_path(reviewed, True) == ["contextualize", "retrieve", "generate", "verify", "review_answer",
                                            "revise_answer", "verify", "review_answer"]
    assert checked_path(["contextualize", "retrieve", "review_documents"], True)[-1] == "review_documents"  # rejected
    text = highlight(focused(drawn, "basic", review=True), reviewed)
    assert "class __start__,contextualize,retrieve,generate,verify,review_answer,revise_answer,__end__ visited" in text
