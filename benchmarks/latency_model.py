"""A measuring chat model: a fixed latency per call and the happy-path reply (benchmarks and their tests only)."""

from __future__ import annotations

import json
import threading
import time

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda

from core.patterns.tools import new_call

LATENCY = 1.0  # seconds per injected model call: a typical hosted or local model call


class LatencyModel(BaseChatModel):
    """A measuring instrument, not a model: sleeps a fixed latency per call, returns a preset reply.

    Structured output returns the happy-path verdict for the schema (so each pattern takes its
    shortest accepted path). With tools bound, the first call of a turn calls the first tool and
    the call after its result answers; under the ReAct text protocol (``stop`` at "Observation:")
    it writes one Action, then a Final Answer. Plain calls return a short cited sentence. Call
    intervals are kept, so the critical path (calls that could not overlap) can be counted.
    """

    latency: float = LATENCY
    verdicts: dict = {}
    answer: str = "시그니처 스테이크는 ₩35,000입니다 [1]."
    react_tool: str = "japan_ict"  # the tool a ReAct text reply names
    query: str = "스테이크 가격"  # what its tool calls search for

    def model_post_init(self, __context) -> None:
        object.__setattr__(self, "_intervals", [])
        object.__setattr__(self, "_lock", threading.Lock())

    @property
    def _llm_type(self) -> str:
        return "latency-bench"

    def _sleep(self) -> None:
        start = time.perf_counter()
        time.sleep(self.latency)
        with self._lock:
            self._intervals.append((start, time.perf_counter()))

    def _reply(self, messages, stop, schema_name: str, tool_names: list[str] | None) -> AIMessage:
        if schema_name:
            return AIMessage(json.dumps(self.verdicts[schema_name], ensure_ascii=False))
        if tool_names:  # native tool calling: call a tool once, answer once its result is back
            if any(m.type == "tool" for m in messages):
                return AIMessage(self.answer)
            return AIMessage("", tool_calls=[new_call(tool_names[0], self.query)])
        if stop and any("Observation" in s for s in stop):  # the ReAct text protocol
            if any(m.type == "human" and str(m.content).startswith("Observation:") for m in messages):
                return AIMessage(f"Thought: the report answers it.\nFinal Answer: {self.answer}")
            return AIMessage(f"Thought: search the report.\nAction: {self.react_tool}\nAction Input: {self.query}")
        return AIMessage(self.answer)

    def _generate(self, messages, stop=None, run_manager=None, schema_name: str = "",
                  tool_names: list[str] | None = None, **kwargs) -> ChatResult:
        self._sleep()
        message = self._reply(messages, stop, schema_name, tool_names)
        message.usage_metadata = {"input_tokens": 100, "output_tokens": 12, "total_tokens": 112}
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools, **kwargs):
        names = [t.get("function", t).get("name") if isinstance(t, dict) else getattr(t, "name", str(t)) for t in tools]
        return self.bind(tool_names=names)

    def with_structured_output(self, schema, **kwargs):
        parse = RunnableLambda(lambda message: schema.model_validate_json(message.content))
        return self.bind(schema_name=schema.__name__) | parse

    def critical_calls(self) -> int:
        """The longest run of calls made one after another (none overlapping the next).

        Concurrent calls count once; a worker pool of c over n calls counts ceil(n / c). Wall time
        can never be below this many latencies, so the ratio measures everything else the run costs.
        """
        chain, end = 0, float("-inf")
        for start, stop in sorted(self._intervals, key=lambda interval: interval[1]):  # earliest end first
            if start >= end:
                chain += 1
                end = stop
        return chain


HAPPY = {
    "Route": {"route": "restaurant_menu"}, "Sources": {"sources": ["restaurant_menu", "restaurant_wine"]},
    "Complexity": {"complexity": "compare"},
    "SubQuestions": {"questions": ["스테이크 가격은?", "파스타 가격은?"]}, "RetrievalNeed": {"retrieve": "yes"},
    "Relevance": {"relevant": "yes"}, "CragGrade": {"grade": "ambiguous", "confidence": 0.6},
    "Grounded": {"grounded": "yes"}, "Usefulness": {"useful": "yes", "score": 5},
    "Rewrite": {"question": "스테이크 가격"},
    "BatchExtraction": {"t": [{"c": 1, "s": "시그니처 스테이크", "r": "가격", "o": "₩35,000"}]},
    "QuestionEntities": {"entities": ["시그니처 스테이크"]},
    "SearchQueries": {"queries": ["스테이크 가격", "시그니처 스테이크 메뉴 가격"]},
}
