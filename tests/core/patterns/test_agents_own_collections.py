"""The agent patterns on the default model (Qwen2.5-Coder 1.5B, for real), over two collections added in the test.

What a new user does first: add documents of their own with a description, ask one fact. The tool choice is
read from the model's probabilities over the tools offered (core.llm.tool_choice), so the first search goes to
the collection that holds the fact, not to the web or to the other collection; the answer states the fact.
Graph RAG builds its graph of the new collection first (one chunk each: one extraction call).
"""

from __future__ import annotations

import pytest

from core.patterns import get_pattern
from core.run.runner import run

pytestmark = pytest.mark.real_model

QWEN = "qwen2.5-coder-1.5b-instruct"
WALKS = ("# 숲길 산책 모임\n\n숲길 산책 모임은 매주 토요일 오전 8시에 북문 주차장에서 모입니다. "
         "참가비는 3,000원이고 우천 시에는 쉽니다. 모임의 길잡이는 자원봉사자 한도윤 씨입니다.\n")
POTTERY = ("# Clayhouse Pottery Studio\n\nThe wheel-throwing course runs for six Tuesday evenings and costs $180, "
           "clay and two firings included. Open studio time is $15 an hour for members.\n")


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """A fresh data directory holding only the two collections a user added, each with its description."""
    from core.config import load_settings
    from core.knowledge.base import KnowledgeBase
    from core.knowledge.sources import update_source

    folder = tmp_path_factory.mktemp("own-collections")
    settings = load_settings(data_dir=str(folder / "data"), provider="embedded", model=QWEN)
    kb = KnowledgeBase(settings)
    for name, text, description in (("walks", WALKS, "숲길 산책 모임 안내: 모이는 때와 곳, 참가비, 길잡이"),
                                    ("pottery", POTTERY, "Clayhouse Pottery Studio: courses, prices, studio time")):
        path = folder / f"{name}.md"
        path.write_text(text, encoding="utf-8")
        assert not kb.ingest([path], name).errors
        update_source(kb, name, description=description)
    return settings.with_(k=2, max_tokens=128, graph_wait=True, tavily_api_key="")


def _first_action(result: dict) -> str | None:
    return next((e.get("target") for e in result["trace"] if e.get("step") == "action"), None)


@pytest.mark.parametrize("pattern", ["react", "react_native", "agentic"])
def test_an_agent_searches_the_collection_that_holds_the_fact_and_states_it(own, pattern):
    result = run(pattern, "숲길 산책 모임의 참가비는 얼마인가요?", own)
    assert result["error"] is None, result["error"]
    listed = next(e["tools"] for e in result["trace"] if e.get("step") == "tools")
    searches = {t["name"]: t.get("collections") or [] for t in listed}
    first = searches.get(_first_action(result))
    # ReAct's tools are one per collection; Agentic's one retriever searches both, merged by score
    assert first == (["pottery", "walks"] if pattern == "agentic" else ["walks"]), (_first_action(result), searches)
    steps = [(e.get("step"), e.get("target"), str(e.get("reason"))[:80]) for e in result["trace"] if e.get("step")][4:]
    assert result["termination_reason"] == "answered", (result["termination_reason"], steps)
    assert "3,000" in result["answer"] or "3000" in result["answer"], result["answer"]
    assert 0 < result["llm_calls"] <= get_pattern(pattern).max_llm_calls(own)


def test_graph_rag_answers_from_the_new_collections_graph(own):
    result = run("graph_rag", "How much does the wheel-throwing course at Clayhouse Pottery Studio cost?", own)
    assert result["error"] is None, result["error"]
    assert result["termination_reason"] == "answered", (result["termination_reason"], result["trace"][-1])
    assert "180" in result["answer"], result["answer"]
