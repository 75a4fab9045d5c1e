"""AppTest of the what-if panel: steps of a run, a fork with a changed route, a replay, after a restart too."""

from app_support import app_data, assert_clean, button, happy_script, mermaid, open_page, scripted, shown, texts  # noqa: F401
from workflow_script import Script

from core.config import load_settings
from core.store.fork_store import forks_of
from core.store.history import thread_history

ADAPTIVE = "pages/2_Adaptive_RAG.py"
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
    assert list(steps["Node"]) == ["__start__", "contextualize", "route_question", "search_collection", "generate"]
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
