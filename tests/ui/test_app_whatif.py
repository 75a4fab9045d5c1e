"""AppTest of the what-if panel: steps of a run, a fork with a changed route, a replay, after a restart too; a fork
with other grader thresholds."""

import core.llm.models
from core.config import load_settings
from core.store.fork_store import forks_of
from core.store.history import thread_history
from support.app_support import app_data, assert_clean, button, happy_script, mermaid, open_page, scripted, shown, texts  # noqa: F401
from support.scripted import ProbabilityChatModel
from support.workflow_script import Script

ADAPTIVE = "pages/3_Adaptive_RAG.py"
STEAK = "스테이크 메뉴의 가격은 얼마인가요?"


def _answer_by_source(messages):
    system = messages[0].content
    return "from " + ", ".join(n for n in ("restaurant_menu.md", "restaurant_wine.md") if n in system)


def test_steps_fork_and_replay_beside_the_original(app_data, scripted):
    scripted.responder = Script(router={"route": "restaurant_menu"}, answer=_answer_by_source)
    at = open_page(ADAPTIVE)
    at.chat_input[0].set_value(STEAK).run()
    thread_id = at.query_params["thread"]
    at.toggle(key=f"{thread_id}_0_whatif").set_value(True).run()
    assert_clean(at)
    steps = at.chat_message[1].dataframe[-1].value
    assert list(steps["Node"]) == ["__start__", "contextualize", "route_question", "search_collection", "generate",
                                   "verify"]  # the claim check: every graph's shared tail
    assert steps["Can change"][2] == "route"
    assert at.selectbox(key=f"{thread_id}_0_wi_pick").value == 2  # the form opens on the first decision
    at.radio(key=f"{thread_id}_0_wi_2_route").set_value("restaurant_wine")
    button(at, label="Change and continue from here").click().run()
    assert_clean(at)
    page = texts(at)
    assert "This run and its forks" in page and "Fork at step 2 (route_question)" in page
    assert "from restaurant_menu.md" in page and "from restaurant_wine.md" in page
    assert "`route_question` → `search_collection` → `generate`" in page  # one retrieval node for every collection
    [decisions] = [d.value for d in at.dataframe if "fork" in d.value.columns]
    assert decisions.to_dict("records") == [
        {"decision": "search_collection · retriever · restaurant_menu", "original": "3 documents", "fork": "—"},
        {"decision": "route_question · what_if · route", "original": "—", "fork": "restaurant_wine"},
        {"decision": "search_collection · retriever · restaurant_wine", "original": "—", "fork": "3 documents"}]
    [graph] = [m for m in mermaid(at) if "classDef forked" in m]
    visited = next(line for line in graph.splitlines() if line.strip().startswith("class ") and line.endswith(" visited"))
    assert "search_collection" in visited  # both runs went through the one retrieval node
    assert thread_history(load_settings(), thread_id)[0]["answer"] == "from restaurant_menu.md"  # unchanged

    button(at, label="Run again from here").click().run()  # replays step 2: the router decides again
    assert_clean(at)
    assert "Replay from step 2 (route_question)" in shown(texts(at)) and "repeated the original exactly" in shown(texts(at))
    assert len(forks_of(load_settings(), thread_id)) == 2

    # a new session (as after a server restart) shows the same forks from disk
    again = open_page(ADAPTIVE)
    button(again, key_end=f"open_{thread_id}").click().run()
    again.toggle(key=f"{thread_id}_0_whatif").set_value(True).run()
    assert_clean(again)
    page = shown(texts(again))
    assert "Fork at step 2 (route_question)" in page and "Replay from step 2 (route_question)" in page


def test_a_change_that_cannot_be_made_is_one_message(app_data, scripted):
    scripted.responder = happy_script()
    at = open_page(ADAPTIVE)
    at.chat_input[0].set_value(STEAK).run()
    thread_id = at.query_params["thread"]
    at.toggle(key=f"{thread_id}_0_whatif").set_value(True).run()
    at.selectbox(key=f"{thread_id}_0_wi_pick").set_value(1).run()  # contextualize: the question
    at.text_input(key=f"{thread_id}_0_wi_1_standalone_question").set_value("   ")
    button(at, label="Change and continue from here").click().run()
    assert_clean(at)
    assert "standalone_question cannot be empty" in shown(texts(at))
    assert not forks_of(load_settings(), thread_id)


def test_a_fork_with_other_thresholds_flips_a_graders_verdict(app_data, monkeypatch):
    script = Script(web_rewrite={"question": "스테이크 가격"}, answer="스테이크는 ₩35,000입니다 [1].")
    model = ProbabilityChatModel(responder=script, probabilities=lambda m, words: (
        {"yes": 0.5, "no": 0.5} if words == ["yes", "no"] else None))
    monkeypatch.setattr(core.llm.models, "get_chat_model", lambda settings, role="main": model)
    at = open_page("pages/5_Corrective_RAG.py")
    at.chat_input[0].set_value(STEAK).run()
    thread_id = at.query_params["thread"]
    at.toggle(key=f"{thread_id}_0_whatif").set_value(True).run()
    steps = at.chat_message[1].dataframe[-1].value
    step = int(steps[steps["Node"] == "grade_documents"]["Step"].iloc[0])
    at.selectbox(key=f"{thread_id}_0_wi_pick").set_value(step).run()
    at.text_input(key=f"{thread_id}_0_wi_thresholds").set_value("crag=0.7:0.9").run()  # p 0.5: ambiguous -> incorrect
    button(at, label="Run again from here").click().run()
    assert_clean(at)
    [fork] = forks_of(load_settings(), thread_id)
    assert fork["forked_from"]["thresholds"] == "crag=0.7:0.9" and not fork["forked_from"]["replay"]
    page = shown(texts(at))
    assert "thresholds: crag=0.7:0.9" in page and f"Fork at step {step} (grade_documents)" in page
    [decisions] = [d.value for d in at.dataframe if "fork" in d.value.columns]
    crag = [r for r in decisions.to_dict("records") if " · crag · " in r["decision"]]
    assert crag and all(r["original"] == "ambiguous (0.5)" and r["fork"] == "incorrect (0.5)" for r in crag)

    at.text_input(key=f"{thread_id}_0_wi_thresholds").set_value("crag=2").run()  # refused in one line, nothing forked
    button(at, label="Run again from here").click().run()
    assert_clean(at)
    assert any("crag='2'" in shown(e.value) for e in at.error) and len(forks_of(load_settings(), thread_id)) == 1
