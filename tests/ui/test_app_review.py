"""AppTest of human review: a run paused before answering, decided on the Review page or inline."""

import sys
import types

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

import core.patterns
from core.config import load_settings
from core.patterns import Pattern, pattern_ids
from core.patterns.common import BaseState, final
from core.run.runner import run
from core.runtime.review import normalise_decision, tool_approval
from core.runtime.trace import stop
from core.store.history import pending_reviews, thread_history
from core.store.threads import get_registry
from support.app_support import app_data, assert_clean, button, open_page, scripted, shown, texts  # noqa: F401
from support.helpers import add_long_menu_chunk

needs_adaptive = pytest.mark.skipif("adaptive" not in pattern_ids(), reason="the adaptive pattern is not registered yet")

ADAPTIVE = "pages/3_Adaptive_RAG.py"
QUESTION = "스테이크 메뉴의 가격은 얼마인가요?"
ANSWER = "시그니처 스테이크는 ₩35,000입니다 [1]."


def _paused_run(scripted, *replies):
    """Ask on the Adaptive page with review on; the router sends the question to the menu."""
    scripted.replies = [{"route": "restaurant_menu"}, *replies]
    at = open_page(ADAPTIVE)
    at.sidebar.toggle(key="sb_review").set_value(True).run()
    at.chat_input[0].set_value(QUESTION).run()
    assert_clean(at)
    return at, at.query_params["thread"]


@needs_adaptive
def test_approve_from_the_review_page_with_a_dropped_document(app_data, scripted):
    chat, thread_id = _paused_run(scripted, ANSWER)
    assert get_registry(app_data).get(thread_id)["status"] == "waiting"
    assert chat.chat_input[0].disabled  # answer the review first
    assert "waiting for your review" in shown(texts(chat))

    review = open_page("pages/11_Review.py")
    [item] = [c for c in review.main.subheader if QUESTION in c.value]
    assert item.value == f"Adaptive RAG: {QUESTION}"
    assert "waits for a document review" in shown(texts(review))
    keeps = [c for c in review.checkbox if c.label.startswith("keep: ")]
    assert len(keeps) == 3 and all(c.value for c in keeps)
    keeps[2].uncheck()
    button(review, key_end="_approve").click().run()
    assert_clean(review)
    assert "Resumed Adaptive RAG: answered from the retrieved documents" in shown(texts(review))
    assert ANSWER in shown(texts(review))
    assert "Nothing is waiting for review." in shown(texts(review))
    assert pending_reviews(load_settings()) == []
    [link] = review.main.get("page_link")
    assert link.proto.query_string == f"thread={thread_id}"

    chat.run()  # the chat page now shows the answer with the two kept sources
    assert_clean(chat)
    assert chat.chat_message[-1].markdown[0].value == ANSWER
    assert [e.label[:3] for e in chat.chat_message[-1].expander if e.label.startswith("[")] == ["[1]", "[2]"]
    assert not chat.chat_input[0].disabled
    assert get_registry(app_data).get(thread_id)["status"] == "done"


@needs_adaptive
def test_reject_inline_on_the_chat_page_ends_the_run(app_data, scripted):
    chat, thread_id = _paused_run(scripted)
    chat.text_input(key=next(t.key for t in chat.text_input if t.key.endswith("_msg"))).set_value("가격표가 오래됨")
    button(chat, key_end="_reject").click().run()
    assert_clean(chat)
    assert "Stopped: rejected by the reviewer" in shown(texts(chat.chat_message[-1]))
    assert "가격표가 오래됨" in shown(texts(chat.chat_message[-1]))
    assert get_registry(app_data).get(thread_id)["status"] == "done"
    assert scripted.replies == []  # no answer was written


@needs_adaptive
def test_edit_the_question_retrieves_again_and_pauses_with_the_new_question(app_data, scripted):
    chat, thread_id = _paused_run(scripted, {"route": "restaurant_menu"}, "티본 스테이크는 ₩52,000입니다 [1].")  # routed again
    [question] = [a for a in chat.text_area if a.label == "Question"]
    assert question.value == QUESTION
    button(chat, key_end="_edit").click().run()  # unchanged question: refused with a hint
    assert "Edit the question first" in shown(texts(chat))
    [question] = [a for a in chat.text_area if a.label == "Question"]
    question.set_value("티본 스테이크 가격은?")
    button(chat, key_end="_edit").click().run()
    assert_clean(chat)
    [question] = [a for a in chat.text_area if a.label == "Question"]
    assert question.value == "티본 스테이크 가격은?"  # a second pause, for the edited question
    [pending] = pending_reviews(load_settings())
    assert pending["interrupt"]["question"] == "티본 스테이크 가격은?"
    button(chat, key_end="_approve").click().run()
    assert_clean(chat)
    assert chat.chat_message[-1].markdown[0].value == "티본 스테이크는 ₩52,000입니다 [1]."
    reasons = " ".join(chat.chat_message[-1].dataframe[0].value["reason"])
    assert "question edited to: 티본 스테이크 가격은?" in reasons
    asked = chat.chat_message[-2]  # the user turn shows the question that was answered, and what was first asked
    assert asked.markdown[0].value == "티본 스테이크 가격은?"
    assert f"Edited in review; first asked: {QUESTION}" in shown(texts(asked))
    assert thread_history(load_settings(), thread_id)[-1]["question"] == "티본 스테이크 가격은?"


# ---------------------------------------------------------------- tool-call approval


def _tool_demo_build():
    """One node that proposes a tool call, waits for approval, and reports what it would run."""

    def agent(state: BaseState) -> dict:
        calls = [{"id": "call-1", "name": "search_menu", "args": {"query": state["standalone_question"], "k": 3}}]
        decision = normalise_decision(interrupt(tool_approval("agent", state["standalone_question"], calls)))
        if decision["action"] == "reject":
            return {**final(""), **stop("agent", "user_rejected", f"tool call rejected: {decision['message']}")}
        calls = decision.get("tool_calls") or calls
        ran = f"ran {calls[0]['name']}({calls[0]['args']['query']}, k={calls[0]['args']['k']})"
        return {**final(ran), **stop("agent", "answered", ran)}

    builder = StateGraph(BaseState)
    builder.add_node(agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder


@pytest.fixture
def tool_demo(app_data, monkeypatch):
    """A registered pattern that pauses for tool approval (the agent patterns may not exist yet)."""
    module = types.ModuleType("core.patterns.tool_demo_for_tests")
    module.PATTERN = Pattern(id="tool_demo", title="Tool demo", description="Pauses before each tool call.",
                             build=_tool_demo_build, max_llm_calls=lambda s: 1, supports_review=True)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(core.patterns._MODULES, "tool_demo", "tool_demo_for_tests")
    result = run("tool_demo", "트러플 파스타", load_settings(), review=True)
    assert result["interrupted"]
    return result["thread_id"]


def _args(at):
    return next(a for a in at.text_area if shown(a.label) == "Arguments of search_menu (JSON)")


def test_tool_call_arguments_are_edited_as_json_then_run(tool_demo):
    review = open_page("pages/11_Review.py")
    assert "waits for a tool-call approval" in shown(texts(review))
    assert '"query": "트러플 파스타"' in _args(review).value
    _args(review).set_value("{not json")
    button(review, key_end="_edit").click().run()
    assert_clean(review)
    assert review.error[0].value.startswith("The arguments are not valid JSON")
    assert len(pending_reviews(load_settings())) == 1  # nothing was sent
    _args(review).set_value('{"query": "트러플 크림 파스타", "k": 5}')
    button(review, key_end="_edit").click().run()
    assert_clean(review)
    assert "ran search_menu(트러플 크림 파스타, k=5)" in shown(texts(review))
    assert pending_reviews(load_settings()) == []


def test_tool_call_approved_or_rejected_with_a_message(tool_demo, app_data):
    second = run("tool_demo", "와인 리스트", load_settings(), review=True)["thread_id"]
    review = open_page("pages/11_Review.py")
    assert [s.value for s in review.main.subheader] == ["Tool demo: 트러플 파스타", "Tool demo: 와인 리스트"]  # oldest first
    button(review, key_end="_approve").click().run()
    assert "ran search_menu(트러플 파스타, k=3)" in shown(texts(review))
    review.text_input(key=next(t.key for t in review.text_input if t.key.endswith("_msg"))).set_value("not now")
    button(review, key_end="_reject").click().run()
    assert_clean(review)
    assert "Resumed Tool demo: rejected by the reviewer" in shown(texts(review))
    assert get_registry(app_data).last_run(second)["result"]["termination_message"] == "tool call rejected: not now"
    assert "Nothing is waiting for review." in shown(texts(review))


@needs_adaptive
def test_the_review_page_shows_each_chunk_whole(app_data, scripted, tmp_path, monkeypatch):
    """The model reads the whole chunk, so the reviewer sees it whole (in a box that scrolls)."""
    monkeypatch.setenv("RAG_EMBEDDED_DOC_CHARS", "0")  # no cap for the built-in model: the whole chunk is read
    long_text = add_long_menu_chunk(load_settings(), tmp_path)
    _paused_run(scripted, ANSWER)
    [pending] = pending_reviews(load_settings())
    documents = pending["interrupt"]["documents"]
    assert long_text in [d["text"] for d in documents] and len(long_text) > 600
    review = open_page("pages/11_Review.py")
    shown = [t.value for t in review.main.text]
    assert shown == [d["text"] for d in documents]


BASIC = "pages/1_Basic_RAG.py"
BIRTHDAY = "라 포레스타 셰프의 생일은 1980년 5월 24일입니다."


def _answer_paused(scripted, mode="unsupported"):
    """Ask on the Basic page with answer review on; the draft holds one sentence the menu does not support."""
    scripted.replies = [f"{ANSWER} {BIRTHDAY}"]
    at = open_page(BASIC)
    at.sidebar.selectbox(key="sb_review_answer").set_value(mode).run()
    at.chat_input[0].set_value(QUESTION).run()
    assert_clean(at)
    return at, at.query_params["thread"]


def test_an_answer_paused_in_the_chat_loses_its_unsupported_sentence_with_one_click(app_data, scripted):
    chat, thread_id = _answer_paused(scripted)
    assert get_registry(app_data).get(thread_id)["status"] == "waiting" and chat.chat_input[0].disabled
    page = shown(texts(chat))
    assert "waiting for your review" in page and "Draft answer" in page
    boxes = [c for c in chat.checkbox if "_drop_c" in (c.key or "")]
    assert [c.label.startswith("✅") for c in boxes] == [True, False] and "⚠️" in boxes[1].label
    assert not any(BIRTHDAY in m.value for m in chat.chat_message[1].markdown)  # the draft is not shown as an answer
    button(chat, key_end="_drop_all").click().run()
    assert_clean(chat)
    assert chat.chat_message[-1].markdown[0].value == ANSWER
    [drafts] = [e for e in chat.chat_message[-1].expander if e.label == "Earlier drafts (1)"]
    assert BIRTHDAY in shown(texts(drafts))  # the draft is kept, as the earlier version
    assert get_registry(app_data).get(thread_id)["status"] == "done"
    [turn] = thread_history(load_settings(), thread_id)
    assert turn["answer"] == ANSWER and [c["verdict"] for c in turn["result"]["claims"]] == ["supported"]


def test_the_review_page_lists_an_answer_review_with_its_kind_and_records_the_reviewer(app_data, scripted):
    _answer_paused(scripted, mode="always")
    review = open_page("pages/11_Review.py")
    assert "waits for an answer review" in shown(texts(review))
    review.text_input(key="sb_reviewer").set_value("민지").run()
    editor = next(t for t in review.text_area if t.key.endswith("_answer"))
    editor.set_value("시그니처 스테이크는 ₩99,000입니다 [1].").run()
    button(review, key_end="_save").click().run()
    assert_clean(review)
    assert "Nothing is waiting for review." in shown(texts(review))
    [item] = get_registry(app_data).list()
    done = thread_history(load_settings(), item["thread_id"])[0]["result"]
    assert [c["verdict"] for c in done["claims"]] == ["unsupported"]  # the edit was checked again
    [note] = [e for e in done["trace"] if e["node"] == "review_answer"]
    assert (note["verdict"], note["reviewer"]) == ("edit", "민지")


def test_send_back_with_a_note_shows_the_second_draft_for_review(app_data, scripted):
    second = f"{ANSWER} 셰프의 생일은 문서에 없습니다."
    chat, thread_id = _answer_paused(scripted, mode="always")  # "unsupported" would not pause on a clean second draft
    scripted.replies = [second]
    chat.text_input(key=next(t.key for t in chat.text_input if t.key.endswith("_note"))).set_value("생일은 문서에 없습니다")
    button(chat, key_end="_revise").click().run()
    assert_clean(chat)
    assert get_registry(app_data).get(thread_id)["status"] == "waiting"  # paused again, on the second draft
    editor = next(t for t in chat.text_area if t.key.endswith("_answer"))
    assert editor.value == second
    button(chat, key_end="_approve").click().run()
    assert chat.chat_message[-1].markdown[0].value == second
