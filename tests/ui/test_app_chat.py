"""AppTest of the chat pages: round trip, settings that persist, errors shown as one clear line."""

import pytest

from core.config import load_settings
from core.patterns import all_patterns, get_pattern
from core.store.history import thread_history
from core.store.threads import get_registry
from support.app_support import app_data, assert_clean, button, mermaid, open_page, scripted, shown, texts  # noqa: F401
from ui.shell.page_index import page_for

BASIC = "pages/1_Basic_RAG.py"
ANSWER = "시그니처 스테이크는 ₩35,000입니다 [1]."


def test_chat_round_trip_shows_answer_citations_trace_badge_graph_and_export(app_data, scripted):
    scripted.replies = [ANSWER]
    at = open_page(BASIC)
    at.chat_input[0].set_value("스테이크 메뉴의 가격은 얼마인가요?").run()
    assert_clean(at)
    user, assistant = at.chat_message
    assert user.markdown[0].value == "스테이크 메뉴의 가격은 얼마인가요?"
    assert assistant.markdown[0].value == ANSWER
    assert "Stopped: answered from the retrieved documents" in shown(texts(assistant))
    # Basic RAG grades nothing: a neutral badge that says so, never a green "answered" claim
    badges = [m.value for m in assistant.markdown if "-badge[" in m.value]
    # Basic grades nothing itself; the claim check found the one sentence in the menu
    assert badges == [":green-badge[✅ answered — every claim supported]", ":green-badge[🔎 1 of 1 claims supported]"]
    assert "Citations [1] match the listed sources." in shown(texts(assistant))
    citations = [e.label for e in assistant.expander if e.label.startswith("[")]  # not the sentence checks
    assert citations and citations[0].startswith("[1] ") and "restaurant_menu.md" in citations[0]
    first = next(e for e in assistant.expander if e.label.startswith("[1] "))
    ranks = " ".join(c.value for c in first.caption)
    assert "Dense #" in ranks and "Fused (RRF) #1 (0." in ranks, ranks  # where each retriever ranked the chunk
    verdicts = assistant.dataframe[0].value
    assert list(verdicts.columns) == ["node", "kind", "grader", "target", "verdict", "score", "p vs threshold", "reason"]
    assert list(verdicts["node"]) == ["contextualize", "retrieve", "generate", "verification"]  # the claim check last
    assert list(verdicts["verdict"]) == ["4 source(s)", "3 documents", "answered from the retrieved documents",
                                         "1 of 1 claims supported, 0 unsupported, 0 unchecked"]
    assert list(verdicts["target"])[2] == "" and list(verdicts["score"]) == ["", "", "", ""]  # empty cells blank, not "None"
    usage = assistant.dataframe[1].value
    assert usage.iloc[0]["node"] == "generate" and usage.iloc[0]["LLM calls"] == 1
    [diagram] = mermaid(at)
    assert "class __start__,contextualize,retrieve,generate,verify,__end__ visited" in diagram  # the check ran too
    assert {d.label for d in at.download_button} == {"Download JSON", "Download Markdown"}
    thread_id = at.query_params["thread"]
    assert get_registry(app_data).get(thread_id)["status"] == "done"

    # a fresh session (as after a server restart) lists the thread and rebuilds it from the checkpointer
    again = open_page(BASIC)
    assert not again.chat_message
    button(again, key_end=f"open_{thread_id}").click().run()
    assert_clean(again)
    assert [m.markdown[0].value for m in again.chat_message] == ["스테이크 메뉴의 가격은 얼마인가요?", ANSWER]


def test_follow_up_in_the_same_thread_keeps_the_conversation(app_data, scripted):
    scripted.replies = ["파스타는 ₩28,000입니다 [1].", "트러플 크림 파스타의 재료는 무엇인가요?", "블랙 트러플입니다 [1]."]
    at = open_page(BASIC)
    at.chat_input[0].set_value("트러플 크림 파스타 가격은?").run()
    at.chat_input[0].set_value("그거 재료는?").run()
    assert_clean(at)
    bubbles = [m.markdown[0].value for m in at.chat_message]
    assert bubbles == ["트러플 크림 파스타 가격은?", "파스타는 ₩28,000입니다 [1].", "그거 재료는?", "블랙 트러플입니다 [1]."]
    assert "follow-up rewritten" in " ".join(at.chat_message[3].dataframe[0].value["reason"])
    assert len(mermaid(at)) == 1  # one diagram per page: the latest turn


def test_threads_are_renamed_opened_and_deleted_from_the_sidebar(app_data, scripted):
    scripted.replies = [ANSWER, "두 번째 답입니다."]
    at = open_page(BASIC)
    at.chat_input[0].set_value("스테이크 가격?").run()
    first = at.query_params["thread"]
    button(at, key_end="sb_new_chat").click().run()
    assert not at.chat_message and "thread" not in at.query_params
    at.chat_input[0].set_value("와인 추천?").run()
    second = at.query_params["thread"]
    assert second != first
    assert [b.label.split(" · ")[0] for b in at.sidebar.button if (b.key or "").startswith("sb_open_")] == [
        "✅ 와인 추천?", "✅ 스테이크 가격?"]  # newest first, with status
    at.sidebar.text_input(key=f"sb_title_{second}").set_value("와인 상담")
    button(at, key_end=f"sb_rename_{second}").click().run()
    assert get_registry(app_data).get(second)["title"] == "와인 상담"
    assert button(at, key_end=f"sb_open_{second}").label.startswith("✅ 와인 상담 · ")
    assert button(at, key_end=f"sb_delete_{second}").disabled  # needs the confirmation first
    at.sidebar.checkbox(key=f"sb_sure_{second}").check().run()
    button(at, key_end=f"sb_delete_{second}").click().run()
    assert_clean(at)
    assert get_registry(app_data).get(second) is None and not at.chat_message
    assert thread_history(load_settings(), second) == []  # the checkpoints went with it
    button(at, key_end=f"sb_open_{first}").click().run()
    assert [m.markdown[0].value for m in at.chat_message] == ["스테이크 가격?", ANSWER]


def test_settings_persist_across_reruns_page_switches_and_provider_changes(app_data, scripted):
    at = open_page(BASIC)
    at.sidebar.slider(key="sb_k").set_value(5).run()
    at.sidebar.number_input(key="sb_max_tokens").set_value(256).run()
    at.sidebar.selectbox(key="sb_provider").set_value("openai-compatible").run()
    assert_clean(at)
    at.sidebar.text_input(key="sb_model_openai-compatible").set_value("qwen2.5-7b-instruct").run()
    at.sidebar.text_input(key="sb_compat_base_url").set_value("http://127.0.0.1:9/v1").run()
    at.switch_page("pages/3_Adaptive_RAG.py").run()
    assert_clean(at)
    assert at.sidebar.selectbox(key="sb_provider").value == "openai-compatible"
    assert at.sidebar.text_input(key="sb_model_openai-compatible").value == "qwen2.5-7b-instruct"
    assert at.sidebar.text_input(key="sb_compat_base_url").value == "http://127.0.0.1:9/v1"
    assert at.sidebar.slider(key="sb_k").value == 5
    assert at.sidebar.number_input(key="sb_max_tokens").value == 256
    # back to the embedded model: the other choices stay, and the run uses them
    at.sidebar.selectbox(key="sb_provider").set_value("embedded").run()
    at.switch_page(BASIC).run()
    assert at.sidebar.slider(key="sb_k").value == 5
    at.sidebar.slider(key="sb_embedded_k").set_value(4).run()  # the built-in model reads at most 4 of the 5
    scripted.replies = [ANSWER]
    at.chat_input[0].set_value("스테이크 가격?").run()
    assert_clean(at)
    trace = at.chat_message[1].dataframe[0].value
    assert list(trace[trace["node"] == "retrieve"]["verdict"]) == ["4 documents"]  # the built-in model's cap of 4
    at.sidebar.selectbox(key="sb_provider").set_value("openai-compatible").run()
    assert at.sidebar.text_input(key="sb_model_openai-compatible").value == "qwen2.5-7b-instruct"


def test_unreachable_provider_is_one_clear_message_and_the_thread_stays_usable(app_data, scripted, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    at = open_page(BASIC)
    at.sidebar.selectbox(key="sb_provider").set_value("ollama").run()
    assert at.sidebar.text_input(key="sb_ollama_host").value == "http://127.0.0.1:9"
    at.chat_input[0].set_value("스테이크 가격?").run()
    assert_clean(at)
    [error] = at.chat_message[1].error
    assert error.value.startswith("Cannot reach the model server")
    assert "Traceback" not in shown(texts(at))
    thread_id = at.query_params["thread"]
    assert get_registry(app_data).get(thread_id)["status"] == "failed"
    # switch to a working model and retry the same question in the same thread
    at.sidebar.selectbox(key="sb_provider").set_value("embedded").run()
    scripted.replies = [ANSWER]
    button(at, "Try again").click().run()
    assert_clean(at)
    assert at.query_params["thread"] == thread_id
    assert at.chat_message[-1].markdown[0].value == ANSWER
    assert get_registry(app_data).get(thread_id)["status"] == "done"


def test_test_connection_reports_an_unreachable_server(app_data, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    at = open_page(BASIC)
    at.sidebar.selectbox(key="sb_provider").set_value("ollama").run()
    button(at, key_end="sb_test").click().run()
    [error] = at.sidebar.error
    assert "unreachable" in error.value and "127.0.0.1:9" in error.value


def test_a_refused_question_goes_back_into_the_one_chat_input(app_data, scripted, monkeypatch):
    monkeypatch.setenv("RAG_MAX_QUESTION_CHARS", "50")  # the page's limit is the setting, and its refusal says so
    at = open_page(BASIC)
    too_long = "가" * 51
    at.chat_input[0].set_value(too_long).run()
    assert_clean(at)
    assert "the limit is 50 characters (RAG_MAX_QUESTION_CHARS)" in shown(at.error[0].value)
    assert not at.text_area
    [box] = at.chat_input  # one input, holding the refused question for editing
    assert box.value == too_long and box.proto.set_value
    scripted.replies = [ANSWER]
    box.set_value("스테이크 가격은?").run()
    assert_clean(at)
    assert [m.markdown[0].value for m in at.chat_message] == ["스테이크 가격은?", ANSWER]
    assert not at.error


def test_a_blank_question_says_so_above_the_one_input(app_data, scripted):
    at = open_page(BASIC)
    at.chat_input[0].set_value("   ").run()
    assert_clean(at)
    assert at.error[0].value == "The question is empty: type a question first."
    assert not at.text_area and len(at.chat_input) == 1 and not at.chat_message
    assert not [b for b in at.button if b.label == "Send"]  # no second "Question / Send" box
    scripted.replies = [ANSWER]
    at.chat_input[0].set_value("스테이크 가격은?").run()
    assert [m.markdown[0].value for m in at.chat_message] == ["스테이크 가격은?", ANSWER] and not at.error


def test_the_ui_speaks_korean_and_says_the_default_is_a_demo_model(app_data, scripted):
    at = open_page(BASIC)
    assert "`gemma-3-270m`" in at.sidebar.info[0].value and "OPENAI_API_KEY" in at.sidebar.info[0].value
    assert "in the sidebar" in at.sidebar.info[0].value and "above" not in at.sidebar.info[0].value
    at.sidebar.button_group(key="sb_lang").set_value("ko").run()
    assert at.chat_input[0].placeholder == "질문을 입력하세요"
    assert "내장 모델" in at.sidebar.info[0].value and "사이드바에서" in at.sidebar.info[0].value
    assert at.caption[0].value.startswith("모든 컬렉션에서 상위 k개 청크를 검색해")  # the pattern's description
    scripted.replies = [ANSWER]
    at.chat_input[0].set_value("스테이크 메뉴의 가격은 얼마인가요?").run()
    assert_clean(at)
    answer = texts(at.chat_message[1])
    assert "종료 사유: 검색한 문서로 답변함 — 검색한 청크 3개로 답했습니다" in answer  # the run's own sentence too
    assert ":green-badge[✅ 답변 — 모든 주장이 근거 있음]" in answer and ":green-badge[🔎 주장 1개 중 1개 근거 있음]" in answer
    verdicts = at.chat_message[1].dataframe[0].value
    assert list(verdicts.columns) == ["노드", "종류", "평가기", "대상", "판정", "점수", "확률 대 기준값", "이유"]
    assert list(verdicts["판정"]) == ["출처 4개", "문서 3개", "검색한 문서로 답변함",
                                    "주장 1개 중 1개 근거 있음, 0개 근거 없음, 0개 확인 안 함"]
    assert list(verdicts["종류"]) == ["정보", "도구", "종료", "판정"]


@pytest.mark.parametrize("pattern_id", [p.id for p in all_patterns() if page_for(p.id)])
def test_every_pattern_page_opens_with_its_title_description_and_chat_input(app_data, scripted, pattern_id):
    at = open_page(page_for(pattern_id))
    pattern = get_pattern(pattern_id)
    assert at.title[0].value == pattern.title
    assert pattern.description.split("\n")[0] in at.caption[0].value
    assert at.chat_input[0].placeholder == "Ask a question"
    review = at.sidebar.toggle(key="sb_review")
    assert not review.disabled and not review.help  # every pattern retrieves, so every pattern offers review


def test_every_registered_pattern_has_a_page():
    assert [p.id for p in all_patterns() if not page_for(p.id)] == []


def test_a_long_step_reports_its_progress_in_words():
    from ui.run.live import progress_label

    graph = {"node": "load_graph", "step": "extract_graph", "subject": "wine", "done": 3, "total": 17}
    assert progress_label(graph) == "Waiting for the wine knowledge graph: 3 of 17 chunks read"
    other = {"node": "n", "step": "index", "subject": "docs", "done": 1, "total": 2}
    assert progress_label(other) == "n: index docs, 1 of 2"  # a step without wording of its own


def test_the_sources_multiselect_narrows_a_run_per_page_and_is_kept(app_data, scripted):
    from support.app_support import happy_script

    scripted.responder = happy_script()  # the router picks restaurant_menu
    adaptive, samples = "pages/3_Adaptive_RAG.py", {"restaurant_menu", "restaurant_wine", "japan_ict", "usa_ict"}
    at = open_page(adaptive)
    assert set(at.sidebar.multiselect(key="sb_sources_adaptive").value) == samples  # every enabled collection
    at.sidebar.multiselect(key="sb_sources_adaptive").set_value(["restaurant_menu", "restaurant_wine"]).run()
    at.chat_input[0].set_value("스테이크 메뉴의 가격은 얼마인가요?").run()
    assert_clean(at)
    router = next(m[0].content for m in scripted.calls if m[0].content.startswith("You route"))
    assert "- restaurant_wine:" in router and "japan_ict" not in router  # only the chosen sources are routes
    record = get_registry(app_data).runs(at.query_params["thread"])[-1]["result"]
    recorded = next(e for e in record["trace"] if e.get("grader") == "sources")
    assert recorded["sources"] == ["restaurant_menu", "restaurant_wine"]  # exports and resumed runs say so

    at.switch_page(BASIC).run()  # the choice is per page
    assert set(at.sidebar.multiselect(key="sb_sources_basic").value) == samples
    at.switch_page(adaptive).run()  # and kept across page switches and reruns
    assert at.sidebar.multiselect(key="sb_sources_adaptive").value == ["restaurant_menu", "restaurant_wine"]


def test_basic_rag_pauses_for_review_when_asked_and_answers_from_the_kept_chunks(app_data, scripted):
    scripted.replies = [ANSWER]
    at = open_page(BASIC)
    at.sidebar.toggle(key="sb_review").set_value(True).run()
    at.chat_input[0].set_value("스테이크 메뉴의 가격은 얼마인가요?").run()
    assert_clean(at)
    assert "This run is waiting for your review." in shown(texts(at)) and scripted.replies == [ANSWER]  # nothing answered yet
    keeps = [c for c in at.checkbox if c.label.startswith("keep: ")]
    assert len(keeps) == 3
    keeps[2].uncheck()
    button(at, key_end="_approve").click().run()
    assert_clean(at)
    assert at.chat_message[-1].markdown[0].value == ANSWER
    assert [e.label[:3] for e in at.chat_message[-1].expander if e.label.startswith("[")] == ["[1]", "[2]"]
    assert "approved 2 document(s), dropped 1" in " ".join(at.chat_message[-1].dataframe[0].value["reason"])
