"""The agents' next step read from the model's probabilities (issue 51): a confident reading decides the tool or the
answer, an unsure one leaves the written step, and a model without probabilities keeps its written choice."""

import pytest
from langchain_core.messages import AIMessage

from core.llm.tool_choice import ANSWER
from core.run.runner import run
from core.runtime.context import make_context
from support.scripted import ProbabilityChatModel, ScriptedChatModel

STEAK_Q = "스테이크 메뉴의 가격은 얼마인가요?"


def _text_step(tool, query, thought="찾아봐야 한다"):
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {query}"


class BindingRecorder(ScriptedChatModel):
    """A scripted model that records how its tools were bound (tool_choice) for each agent reply."""

    def bind_tools(self, tools, **kwargs):
        self._limits.append(("bind", kwargs.get("tool_choice")))
        return self


KINDS = ["lookup", "small_talk", "general_knowledge"]


def _reader(first: dict[str, float] | None = None, *later: dict[str, float], lookup: float = 0.9):
    """A grader whose readings give: p(lookup) ``lookup`` for the first step's "does it need looking up?", ``first``
    for both of its tool readings (the agent's prompt, the router's), then ``later`` in turn for each later step."""
    left = list(later)

    def probabilities(messages, words):
        if words == KINDS:
            return {"lookup": lookup, "small_talk": 1 - lookup}
        if words == ["yes", "no"]:  # Agentic's relevance grades: every document relevant
            return {"yes": 0.9, "no": 0.1}
        if not set(words) - {ANSWER} <= TOOLS:  # another verdict (relevance, ...): not asked in these runs
            raise AssertionError(f"unexpected verdict {words}")
        after_results = any(m.type == "tool" or str(m.content).startswith("Observation:") for m in messages)
        choice = (left.pop(0) if len(left) > 1 else left[0]) if after_results else first
        return {w: choice.get(w, 0.0) for w in words}
    return ProbabilityChatModel(probabilities=probabilities)


TOOLS = {"restaurant_menu", "restaurant_wine", "usa_ict", "japan_ict", "web_search", "search_documents"}


def _run(settings, pattern, llm, grader, question=STEAK_Q):
    ctx = make_context(settings, llm=llm, grader=grader)
    return run(pattern, question, settings, ctx=ctx)


def _choices(result):
    return [e for e in result["trace"] if e.get("grader") == "tool_choice"]


def _observed(result):
    return [e["grader"] for e in result["trace"] if e.get("step") == "observation"]


def test_a_confident_reading_takes_its_tool_with_the_written_query(sample_settings):
    llm = ScriptedChatModel(replies=[_text_step("restaurant_wine", "스테이크 가격"),
                                     "Thought: 안다\nFinal Answer: 시그니처 스테이크는 ₩35,000입니다."])
    grader = _reader({"restaurant_menu": 0.9, "restaurant_wine": 0.05, ANSWER: 0.05}, {ANSWER: 0.9})
    result = _run(sample_settings, "react", llm, grader)
    assert _observed(result) == ["restaurant_menu"]  # the wine list the model wrote is not searched
    first = _choices(result)[0]
    assert first["method"] == "probability" and first["threshold"] == 0.5
    # both readings favour the menu; multiplied, the wine list keeps 0.05 x 0.05/0.95 against the menu's 0.9 x 0.9/0.95
    assert first["p"] == pytest.approx(0.81 / (0.81 + 0.0025), abs=1e-3) and "lookup 0.90 ≥ 0.50" in first["reason"]
    assert first["p_choices"]["answer"] == pytest.approx(0.1)
    assert first["verdict"] == "restaurant_menu" and "the agent wrote restaurant_wine" in first["reason"]
    action = [e for e in result["trace"] if e.get("step") == "action"][0]
    assert action["tool_input"] == {"query": "스테이크 가격"}  # the query is still the model's own
    assert result["termination_reason"] == "answered"


def test_a_query_written_for_the_tool_the_reading_overrules_is_not_searched_in_the_one_it_takes(sample_settings):
    # Qwen 1.5B wrote Action: pottery with the pottery tool's topics as its input for a question about the walks;
    # read, the step went to the walks' tool with that input, which shares no word with the question
    llm = ScriptedChatModel(replies=[_text_step("restaurant_wine", "wine styles, grape varieties, bottle prices"),
                                     "Thought: 안다\nFinal Answer: 시그니처 스테이크는 ₩35,000입니다."])
    grader = _reader({"restaurant_menu": 0.9, "restaurant_wine": 0.05, ANSWER: 0.05}, {ANSWER: 0.9})
    result = _run(sample_settings, "react", llm, grader)
    action = [e for e in result["trace"] if e.get("step") == "action"][0]
    assert action["target"] == "restaurant_menu" and action["tool_input"] == {"query": STEAK_Q}


def test_an_unsure_reading_leaves_the_written_step(sample_settings):
    llm = ScriptedChatModel(replies=[_text_step("restaurant_wine", "스테이크 와인"),
                                     "Thought: 안다\nFinal Answer: 바롤로입니다."])
    grader = _reader({"restaurant_menu": 0.36, "restaurant_wine": 0.34, "japan_ict": 0.3}, {ANSWER: 0.9})
    result = _run(sample_settings, "react", llm, grader)
    assert _observed(result) == ["restaurant_wine"]
    first = _choices(result)[0]
    assert first["method"] == "probability" and first["verdict"] == "restaurant_wine"
    assert "not sure enough" in first["reason"] and "0.39 < 0.50" in first["reason"]


def test_without_probabilities_the_written_choice_stands_and_the_trace_says_so(sample_settings):
    llm = ScriptedChatModel(replies=[_text_step("restaurant_wine", "스테이크 와인"),
                                     "Thought: 안다\nFinal Answer: 바롤로입니다."])
    result = _run(sample_settings, "react", llm, ScriptedChatModel(replies=[]))
    assert _observed(result) == ["restaurant_wine"]
    first = _choices(result)[0]
    assert first["method"] == "text" and "no probabilities" in first["reason"]


def test_a_confident_answer_to_a_greeting_searches_nothing(sample_settings):
    # Qwen 1.5B searched the menu for "안녕하세요?" (docs/BENCHMARKS.md): read as an answer, nothing is searched
    llm = ScriptedChatModel(replies=[_text_step("restaurant_menu", "안녕하세요"), "안녕하세요! 무엇을 도와드릴까요?"])
    grader = _reader(lookup=0.1)  # asked nothing else: a message that needs no looking up is answered
    result = _run(sample_settings, "react", llm, grader, question="안녕하세요?")
    assert _observed(result) == []
    assert result["termination_reason"] == "direct_answer"
    assert result["answer"] == "안녕하세요! 무엇을 도와드릴까요?"


def test_native_tools_bind_the_one_tool_read_then_none_to_answer(sample_settings):
    llm = BindingRecorder(replies=[
        AIMessage("", tool_calls=[{"name": "restaurant_menu", "args": {"query": "스테이크 가격"}, "id": "a",
                                   "type": "tool_call"}]),
        "시그니처 스테이크는 ₩35,000입니다."])
    grader = _reader({"restaurant_menu": 0.8, ANSWER: 0.2}, {"restaurant_menu": 0.1, ANSWER: 0.9})
    result = _run(sample_settings, "react_native", llm, grader)
    assert [x for x in llm.limits if isinstance(x, tuple)] == [("bind", "restaurant_menu"), ("bind", "none")]
    assert _observed(result) == ["restaurant_menu"]
    assert [e["verdict"] for e in _choices(result)] == ["restaurant_menu", "answer"]
    assert result["termination_reason"] == "answered" and result["answer"] == "시그니처 스테이크는 ₩35,000입니다."


def test_native_tools_unsure_leave_every_tool_to_the_model(sample_settings):
    llm = BindingRecorder(replies=["안녕하세요!"])
    grader = _reader({"restaurant_menu": 0.36, "restaurant_wine": 0.34, "japan_ict": 0.3})
    result = _run(sample_settings, "react_native", llm, grader, question="안녕하세요?")
    assert [x for x in llm.limits if isinstance(x, tuple)] == [("bind", "auto")]
    assert result["termination_reason"] == "direct_answer"


def test_agentic_reads_retrieve_or_answer(sample_settings):
    llm = BindingRecorder(replies=["안녕하세요! 무엇을 도와드릴까요?"])
    grader = _reader(lookup=0.2)
    result = _run(sample_settings, "agentic", llm, grader, question="안녕하세요?")
    assert [x for x in llm.limits if isinstance(x, tuple)] == [("bind", "none")]
    assert result["termination_reason"] == "direct_answer"
    assert _choices(result)[0]["p_choices"] == {"answer": 0.8, "lookup": 0.2}


def test_agentic_looks_up_with_its_one_tool_without_reading_which(sample_settings):
    llm = BindingRecorder(replies=[
        AIMessage("", tool_calls=[{"name": "search_documents", "args": {"query": "스테이크 가격"}, "id": "a",
                                   "type": "tool_call"}]), "시그니처 스테이크는 ₩35,000입니다 [Source: menu.md]."])
    grader = _reader(lookup=0.9)
    result = _run(sample_settings, "agentic", llm, grader)
    assert [x for x in llm.limits if isinstance(x, tuple)][0] == ("bind", "search_documents")
    assert _choices(result)[0]["verdict"] == "search_documents"
