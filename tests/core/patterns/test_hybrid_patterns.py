"""Every pattern that reads chunks searches through the hybrid retriever, and its trace and result say so.

Graph RAG is not here: it answers from its entity graph, extracted from the collection's chunks in
document order, and never searches them.
"""

import pytest
from langchain_core.messages import AIMessage

from core.knowledge import hybrid
from core.knowledge.base import KnowledgeBase
from core.run.runner import run
from core.runtime.context import make_context
from support.fakes import HashEmbeddings
from support.scripted import ScriptedChatModel
from support.workflow_script import Script

MENU = """# 메뉴

## 스테이크
시그니처 스테이크의 가격은 35,000원입니다.

## 파스타
트러플 크림 파스타의 가격은 28,000원입니다.
"""
QUESTION = "시그니처 스테이크의 가격은 얼마인가요?"
ANSWER = "시그니처 스테이크는 35,000원입니다 [1]."


def _call(name, call_id="c1"):
    return {"name": name, "args": {"query": "시그니처 스테이크 가격"}, "id": call_id, "type": "tool_call"}


def _script():
    return Script(router={"route": "menu"}, retrieval={"kind": "lookup"}, sources={"sources": ["menu"]},
                  relevance={"relevant": "yes"}, grounded={"grounded": "yes"}, usefulness={"useful": "yes", "score": 5},
                  crag={"grade": "correct", "confidence": 0.9}, contextualize=QUESTION,
                  strip=lambda m: {"verdicts": ["yes"] * sum("<document>" in line for line in m[-1].content.splitlines())},
                  answer=ANSWER)


def _models(pattern):
    """(answering model, grader) scripted for one pattern's path to an answer from the menu."""
    if pattern == "react":
        return ScriptedChatModel(replies=["Thought: 메뉴를 찾는다\nAction: menu\nAction Input: 시그니처 스테이크 가격",
                                          f"Thought: 찾았다\nFinal Answer: {ANSWER}"]), ScriptedChatModel(replies=[])
    if pattern == "react_native":
        return ScriptedChatModel(replies=[AIMessage("", tool_calls=[_call("menu")]), ANSWER]), ScriptedChatModel(replies=[])
    if pattern == "agentic":
        grader = ScriptedChatModel(responder=lambda m: {"relevant": "yes"})
        return ScriptedChatModel(replies=[AIMessage("", tool_calls=[_call("search_documents")]),
                                          "시그니처 스테이크는 35,000원입니다 [Source: menu.md]."]), grader
    model = ScriptedChatModel(responder=_script())
    return model, model


@pytest.fixture
def menu_settings(settings, tmp_path):
    path = tmp_path / "menu.md"
    path.write_text(MENU, encoding="utf-8")
    KnowledgeBase(settings, HashEmbeddings()).ingest([path], "menu")
    return settings.with_(k=2, retrieval="hybrid")


@pytest.mark.parametrize("pattern", ["basic", "adaptive", "self_rag", "corrective", "agentic", "react", "react_native"])
def test_pattern_retrieves_through_the_hybrid_retriever(menu_settings, pattern, monkeypatch):
    calls = []
    real = hybrid.search

    def spy(kb, collections, query, k, mode="dense", explain=False):
        calls.append((tuple(collections), mode))
        return real(kb, collections, query, k, mode, explain)

    monkeypatch.setattr(hybrid, "search", spy)
    llm, grader = _models(pattern)
    ctx = make_context(menu_settings, llm=llm, grader=grader, kb=KnowledgeBase(menu_settings, HashEmbeddings()),
                       web=lambda q: pytest.fail("no web search expected"))
    result = run(pattern, QUESTION, menu_settings, ctx=ctx)
    assert result["error"] is None, result.get("error")
    assert calls and all(c == (("menu",), "hybrid") for c in calls)
    assert result["retrieval"] == "hybrid"
    retrieved = [e for e in result["trace"] if e.get("documents") and e.get("kind") == "tool"]
    assert retrieved and all(e["retrieval"] == "hybrid" for e in retrieved)
    top = retrieved[0]["documents"][0]
    assert top["source"] == "menu.md" and top["fused"]["rank"] == 1
    assert top["keyword"]["rank"] == 1 and top["dense"]["rank"] >= 1  # the fake embedder ranks at random
    source = result["sources"][0]
    assert {"dense", "keyword", "fused"} <= set(source) and source["retrieval"] == "hybrid"


def test_the_setting_chooses_the_mode(menu_settings):
    model = ScriptedChatModel(responder=_script())
    settings = menu_settings.with_(retrieval="keyword")
    ctx = make_context(settings, llm=model, grader=model, kb=KnowledgeBase(settings, HashEmbeddings()))
    result = run("basic", QUESTION, settings, ctx=ctx)
    assert result["retrieval"] == "keyword"
    source = result["sources"][0]
    assert source["keyword"]["rank"] == 1 and "dense" not in source and source["score"] == source["keyword"]["score"]
    assert next(e for e in result["trace"] if e.get("grader") == "sources")["retrieval"] == "keyword"
