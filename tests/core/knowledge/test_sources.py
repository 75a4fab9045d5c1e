"""Sources: every pattern reaches the user's own collections, never only the samples.

Two small corpora of our own (tests/support/corpora: a Korean public bike-share guide and an English
apiary handbook) are indexed next to the samples with real embeddings and real Chroma; scripted
models show Adaptive routing to them, Self-RAG fanning out to them, both ReAct agents calling
their tools, Agentic searching them and Graph RAG building from the chosen one. With the samples
switched off they are the only routes offered.
"""

import shutil

import pytest
from langchain_core.messages import AIMessage

from core import prompts
from core.config import load_settings
from core.knowledge import entity_graph as eg
from core.knowledge.base import SAMPLE_COLLECTIONS, KnowledgeBase
from core.knowledge.sources import (
    Source,
    SourceError,
    active_sources,
    all_sources,
    check_new_name,
    get_source,
    suggest_description,
    tool_names,
    update_source,
)
from core.patterns import get_pattern
from core.prompts import agents, workflow
from core.run.runner import run
from core.runtime.context import make_context
from support.helpers import kinds, run_script, web_down
from support.paths import CORPORA
from support.scripted import ScriptedChatModel
from support.workflow_script import Script

BIKES, BEES = "hanbit_bikes", "apiary_handbook"
BIKES_Q = "누비라 30일 정기권은 얼마인가요?"
BEES_Q = "When is the honey harvested at Harbor Hill?"
BIKES_DESCRIPTION = "한빛시 공공자전거 누비라: 이용 요금, 정기권, 대여소, 운영 시간, 분실 보상금. Hanbit's bike share."
BEES_DESCRIPTION = "Harbor Hill Apiary handbook: colonies, hive inspections, honey harvest, varroa and wax moth treatment."


@pytest.fixture(scope="module")
def data_dir(sample_data_dir, tmp_path_factory):
    """The indexed samples plus our two corpora, each with its description."""
    data = tmp_path_factory.mktemp("sources") / "data"
    shutil.copytree(sample_data_dir / "chroma", data / "chroma")
    kb = KnowledgeBase(load_settings(data_dir=str(data)))
    for name, description in ((BIKES, BIKES_DESCRIPTION), (BEES, BEES_DESCRIPTION)):
        report = kb.ingest([CORPORA / f"{name}.md"], name)
        assert report.added and not report.errors
        update_source(kb, name, description=description)
    update_source(kb, BEES, display_name="Apiary handbook")
    return data


@pytest.fixture
def s(data_dir):
    settings = load_settings(data_dir=str(data_dir), provider="embedded").with_(k=2)
    kb = KnowledgeBase(settings)
    for name in SAMPLE_COLLECTIONS:
        update_source(kb, name, enabled=True)
    return settings


def samples_off(settings):
    kb = KnowledgeBase(settings)
    for name in SAMPLE_COLLECTIONS:
        update_source(kb, name, enabled=False)


# ---------------------------------------------------------------- the records


def test_descriptions_display_names_and_switches_are_stored_with_the_collections(s):
    kb = KnowledgeBase(s)
    bees = get_source(kb, BEES)
    assert (bees.name, bees.description, bees.enabled, bees.described) == ("Apiary handbook", BEES_DESCRIPTION, True, True)
    assert get_source(kb, BIKES).name == BIKES  # no display name given: the collection name
    menu = get_source(kb, "restaurant_menu")  # the samples ship described in Korean and English
    assert "메뉴" in menu.description and "menu" in menu.description and menu.described
    update_source(kb, BIKES, enabled=False)
    assert BIKES not in [x.id for x in active_sources(kb)] and BIKES in [x.id for x in all_sources(kb)]
    update_source(kb, BIKES, enabled=True)
    assert kb.metadata(BIKES)["embedding_model"] == kb.model_id  # the index's own metadata is kept


def test_a_rebuilt_sample_keeps_the_users_description_and_switch(s):
    kb = KnowledgeBase(s)
    update_source(kb, "restaurant_wine", description="Our cellar.", display_name="Cellar", enabled=False)
    kb.set_metadata("restaurant_wine", sample_digest="stale")  # as after a shipped file changed
    try:
        assert kb.ensure_samples() == ["restaurant_wine"]
        wine = get_source(kb, "restaurant_wine")
        assert (wine.description, wine.name, wine.enabled) == ("Our cellar.", "Cellar", False)
    finally:
        kb.set_metadata("restaurant_wine", description="", display_name="", enabled=True)


def test_bad_descriptions_and_reserved_names_are_refused(s):
    kb = KnowledgeBase(s)
    with pytest.raises(SourceError, match="under 600"):
        update_source(kb, BIKES, description="x" * 601)
    assert get_source(kb, BIKES).description == BIKES_DESCRIPTION  # nothing lost
    for name in ("web", "direct"):
        with pytest.raises(SourceError, match="reserved"):
            check_new_name(name)


def test_a_run_chooses_among_enabled_sources_only(s):
    kb = KnowledgeBase(s)
    assert {x.id for x in active_sources(kb)} == {BIKES, BEES, *SAMPLE_COLLECTIONS}
    assert [x.id for x in active_sources(kb, [BEES, "no_such_collection"])] == [BEES]
    samples_off(s)
    assert {x.id for x in active_sources(kb)} == {BIKES, BEES}


def test_tool_names_are_safe_and_unique():
    sources = [Source("my.docs v2", "a", "d"), Source("my_docs_v2", "b", "d"), Source("web_search", "c", "d"),
               Source("x" * 63, "e", "d")]
    names = tool_names(sources, taken=("web_search",))
    assert names["my.docs v2"] == "my_docs_v2" and names["my_docs_v2"] == "my_docs_v2_2"
    assert names["web_search"] == "web_search_2"
    assert all(len(n) <= 64 and n.replace("_", "").replace("-", "").isalnum() for n in names.values())


def test_suggest_drafts_a_description_from_the_first_chunks(s):
    script = Script()  # the describe prompt is not a workflow role: answer it directly
    model = ScriptedChatModel(responder=lambda m: {"description": "공공자전거 누비라의 요금과 대여소. Bike-share fees."})
    draft = suggest_description(KnowledgeBase(s), model, BIKES)
    assert draft == "공공자전거 누비라의 요금과 대여소. Bike-share fees."
    shown = model.calls[0][-1].content
    assert "hanbit_bikes.md" in shown and "5,000원" in shown  # the first chunks reached the prompt
    assert "At most 600 characters" in model.calls[0][0].content  # the limit the schema enforces is stated
    assert script.log == []


def test_prompts_name_no_sample_domain():
    nouns = ("restaurant", "la foresta", "menu", "wine", "japan", " ict", "레스토랑", "메뉴", "와인", "일본")
    texts = [v for module in (prompts, workflow, agents) for k, v in vars(module).items()
             if k.isupper() and isinstance(v, str)]
    assert len(texts) > 20
    for text in texts:
        assert not any(noun in text.lower() for noun in nouns), text[:120]


def test_bounds_count_the_sources_where_the_fan_out_depends_on_them(s):
    self_rag, graph_rag, adaptive = (get_pattern(p) for p in ("self_rag", "graph_rag", "adaptive"))
    assert self_rag.max_llm_calls(s, 1) < self_rag.max_llm_calls(s, 2) < self_rag.max_llm_calls(s, 3)
    assert self_rag.max_llm_calls(s, 3) == self_rag.max_llm_calls(s, 30) == self_rag.max_llm_calls(s)  # capped
    assert graph_rag.max_llm_calls(s, 1) == graph_rag.max_llm_calls(s, 4)  # extraction is a background build's
    assert adaptive.max_llm_calls(s, 1) == adaptive.max_llm_calls(s, 20)  # one source per route


# ---------------------------------------------------------------- Adaptive


def test_adaptive_routes_to_a_user_collection_and_shows_its_display_name(s):
    script = Script(router={"route": BEES}, answer="Late July [1].")
    r = run_script("adaptive", BEES_Q, s, script)
    assert r["path"] == ["contextualize", "route_question", "search_collection", "generate"]
    route = kinds(r, "route")[0]
    assert route["target"] == BEES and route["verdict"] == "Apiary handbook"
    assert {src["collection"] for src in r["sources"]} == {BEES}
    assert "late July" in script.prompts["answer"][0][0].content
    router_prompt = script.prompts["router"][0][0].content
    assert f"- {BEES}: Apiary handbook. {BEES_DESCRIPTION}" in router_prompt  # descriptions listed
    assert "- restaurant_menu:" in router_prompt  # the samples are sources like any other


def test_with_the_samples_off_only_our_collections_are_routes(s):
    samples_off(s)
    script = Script(router={"route": BIKES}, answer="5,000원입니다 [1].")
    r = run_script("adaptive", BIKES_Q, s, script)
    route = kinds(r, "route")[0]
    assert route["offered"] == [BEES, BIKES] and route["target"] == BIKES
    assert "restaurant" not in script.prompts["router"][0][0].content
    assert {src["collection"] for src in r["sources"]} == {BIKES}
    # the schema is an enum of the offered ids: a disabled sample is not a valid route
    wrong = Script(router={"route": "restaurant_menu"}, direct="?")
    r = run_script("adaptive", BIKES_Q, s, wrong)
    assert wrong.count("router") == 2 and kinds(r, "error")[0]["target"] == "direct"


def test_the_sidebar_choice_narrows_the_routes_and_is_recorded(s):
    script = Script(router={"route": BIKES}, answer="5,000원 [1].")
    r = run_script("adaptive", BIKES_Q, s, script, source_ids=[BIKES])
    assert kinds(r, "route")[0]["offered"] == [BIKES]
    recorded = [e for e in r["trace"] if e.get("grader") == "sources"][0]
    assert recorded["sources"] == [BIKES] and "chosen for this run" in recorded["reason"]


def test_more_than_eight_sources_offer_the_eight_closest(s):
    kb = KnowledgeBase(s)
    extra = {f"extra_{i}": text for i, text in enumerate([
        "Tax forms and deadlines for small businesses.", "Cooking recipes for soups and stews.",
        "Football league results and player statistics.", "Astronomy: planets, moons and telescopes.",
        "Medieval European history: castles and kings.", "Car maintenance: oil changes and tyres."])}
    for name, text in extra.items():
        kb.store(name, create=True)
        update_source(kb, name, description=text)
    try:
        script = Script(router={"route": BIKES}, answer="5,000원 [1].")
        r = run_script("adaptive", BIKES_Q, s, script)
        shortlist = [e for e in r["trace"] if e.get("grader") == "source_shortlist"][0]
        assert shortlist["verdict"] == "8 of 12 offered" and len(shortlist["offered"]) == 8
        assert BIKES in shortlist["offered"]
        listed = [line for line in script.prompts["router"][0][0].content.splitlines() if line.startswith("- ")]
        assert len(listed) == 8 + 2  # eight collections, web and direct
        assert kinds(r, "route")[0]["target"] == BIKES
    finally:
        for name in extra:
            kb.delete_collection(name)


def test_adaptive_complexity_sub_questions_retrieve_from_the_enabled_sources(s):
    samples_off(s)
    script = Script(complexity={"complexity": "compare"},
                    decompose={"questions": ["누비라 정기권 요금은?", "How much honey does a colony yield?"]},
                    answer="답 [1].", synthesise="종합 [1].")
    r = run_script("adaptive", "누비라 요금과 꿀 수확량을 비교해 주세요", s, script, variant="complexity")
    searched = {e["target"] for e in r["trace"] if e["node"] == "answer_sub_question" and e["kind"] == "tool"}
    assert searched == {f"{BEES},{BIKES}"}


# ---------------------------------------------------------------- Self-RAG, Agentic


def test_self_rag_fans_out_to_our_collections(s):
    samples_off(s)
    script = Script(retrieval={"kind": "lookup"}, sources={"sources": [BIKES, BEES]}, relevance={"relevant": "yes"},
                    grounded={"grounded": "yes"}, usefulness={"useful": "yes", "score": 5}, answer="5,000원 [1].")
    r = run_script("self_rag", BIKES_Q, s, script)
    assert r["termination_reason"] == "accepted"
    searched = sorted(e["target"] for e in r["trace"] if e["node"] == "search_source")
    assert searched == [BEES, BIKES]
    prompt = script.prompts["sources"][0][0].content
    assert BIKES_DESCRIPTION in prompt and "restaurant" not in prompt


def test_agentic_searches_the_enabled_collections(s):
    samples_off(s)
    llm = ScriptedChatModel(replies=[
        AIMessage("", tool_calls=[{"name": "search_documents", "args": {"query": "누비라 정기권"}, "id": "c1"}]),
        "30일 정기권은 5,000원입니다 [Source: hanbit_bikes.md]."])
    grader = ScriptedChatModel(responder=lambda m: {"relevant": "yes"})
    ctx = make_context(s, llm=llm, grader=grader, web=web_down)
    r = run("agentic", BIKES_Q, s, ctx=ctx)
    listed = [e for e in r["trace"] if e.get("step") == "tools"][0]
    assert listed["tools"][0]["collections"] == [BEES, BIKES]
    assert r["termination_reason"] == "answered" and "hanbit_bikes.md" in r["answer"]
    assert {src["collection"] for src in r["sources"]} <= {BEES, BIKES}


# ---------------------------------------------------------------- ReAct


def test_text_react_has_one_tool_per_collection_and_calls_ours(s):
    samples_off(s)
    llm = ScriptedChatModel(replies=["Thought: 요금표를 찾자\nAction: hanbit_bikes\nAction Input: 30일 정기권 요금",
                                     "Thought: 이제 안다\nFinal Answer: 5,000원입니다."])
    ctx = make_context(s, llm=llm, grader=ScriptedChatModel(replies=[]), web=web_down)
    r = run("react", BIKES_Q, s, ctx=ctx)
    listed = [e for e in r["trace"] if e.get("step") == "tools"][0]
    assert [t["name"] for t in listed["tools"]] == [BEES, BIKES, "web_search"]
    system = llm.calls[0][0].content
    assert f"{BIKES}: {BIKES_DESCRIPTION}" in system  # a collection without a display name is not named twice
    observation = [e for e in r["trace"] if e.get("step") == "observation"][0]
    assert observation["collections"] == [BIKES] and observation["verdict"] == "1 documents"  # the guide is one chunk
    assert r["termination_reason"] == "answered"


def test_native_react_calls_both_of_our_tools_at_once(s):
    samples_off(s)
    llm = ScriptedChatModel(replies=[
        AIMessage("", tool_calls=[{"name": BIKES, "args": {"query": "정기권"}, "id": "a"},
                                  {"name": BEES, "args": {"query": "honey harvest"}, "id": "b"}]),
        "누비라 정기권은 5,000원, 꿀은 7월 말에 수확합니다."])
    ctx = make_context(s, llm=llm, grader=ScriptedChatModel(replies=[]), web=web_down)
    r = run("react_native", "누비라 정기권 요금과 꿀 수확 시기는?", s, ctx=ctx)
    observed = sorted(c for e in r["trace"] if e.get("step") == "observation" for c in e["collections"])
    assert observed == [BEES, BIKES]
    assert r["termination_reason"] == "answered"


# ---------------------------------------------------------------- Graph RAG


def test_graph_rag_builds_from_the_chosen_collection_only(s):
    def responder(messages):
        system = messages[0].content
        if system.startswith(agents.GRAPH_EXTRACT_SYSTEM[:40]):
            return {"t": [{"c": 1, "s": "Harbor Hill Apiary", "r": "harvests honey in", "o": "late July"}]}
        if system.startswith(agents.GRAPH_ENTITIES_SYSTEM[:40]):
            return {"entities": ["Harbor Hill Apiary"]}
        return "Late July."

    model = ScriptedChatModel(responder=responder)
    ctx = make_context(s, llm=model, grader=model, web=web_down)
    r = run("graph_rag", BEES_Q, s, ctx=ctx, source_ids=[BEES], graph_wait=True)
    built = [e for e in r["trace"] if e["node"] == "load_graph"]
    assert [e["target"] for e in built] == [BEES]
    assert eg.graph_path(s, BEES).exists() and not eg.graph_path(s, BIKES).exists()
    assert r["termination_reason"] == "answered" and "late July" in r["sources"][0]["text"]
