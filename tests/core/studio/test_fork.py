"""What if? Fork runs at a step with a change (scripted models, real Chroma and SQLite); the original never moves."""

import shutil

import pytest
from langchain_core.messages import AIMessage

from core.config import load_settings
from core.run.runner import resume, run
from core.runtime.context import make_context
from core.store.checkpoint import get_checkpointer
from core.store.fork_store import fork_info, forks_of
from core.store.history import thread_history
from core.store.threads import get_registry
from core.studio.fork import ForkError, fork
from core.studio.fork_diff import compare_runs
from core.studio.steps import turn_steps
from support.helpers import kinds, run_script, web_down
from support.scripted import ScriptedChatModel
from support.workflow_script import Script, judged_document

STEAK = "스테이크 메뉴의 가격은 얼마인가요?"


@pytest.fixture
def s(sample_data_dir, tmp_path):
    """The indexed samples in a data directory of this test's own: no thread of another test is in sight."""
    shutil.copytree(sample_data_dir / "chroma", tmp_path / "data" / "chroma")
    return load_settings(data_dir=str(tmp_path / "data"), provider="embedded", k=2, max_rewrites=2, max_generations=2)


def ctx_for(settings, script, web=web_down):
    model = ScriptedChatModel(responder=script)
    return make_context(settings, llm=model, grader=model, web=web)


def seen(settings, thread_id) -> dict:
    """All a user can see of a thread: its chat history, its run records, its checkpoints."""
    saver = get_checkpointer(settings.data_path)
    return {"history": thread_history(settings, thread_id),
            "runs": get_registry(settings.data_path).runs(thread_id),
            "checkpoints": [t.config["configurable"]["checkpoint_id"]
                            for t in saver.list({"configurable": {"thread_id": thread_id}})]}


def step_of(settings, thread_id, node, nth=0):
    return [st for st in turn_steps(settings, thread_id)["steps"] if st["node"] == node][nth]


def answer_by_source(messages):
    """The answer names the files it was given, so a test sees which branch wrote it."""
    system = messages[0].content
    return "from " + ", ".join(name for name in ("restaurant_menu.md", "restaurant_wine.md") if name in system)


# ---------------------------------------------------------------- the four patterns of the issue


def test_adaptive_fork_at_the_router_takes_the_other_branch(s):
    script = Script(router={"route": "restaurant_menu"}, answer=answer_by_source)
    original = run_script("adaptive", STEAK, s, script)
    assert original["answer"] == "from restaurant_menu.md"
    before = seen(s, original["thread_id"])
    router = step_of(s, original["thread_id"], "route_question")
    assert router["wrote"] == {"route": "restaurant_menu"}
    assert router["editable"]["route"]["choices"] == ["japan_ict", "restaurant_menu", "restaurant_wine", "usa_ict",
                                                      "web", "direct"]  # the run's sources, then web and direct

    forked = fork(s, original["thread_id"], router["n"], {"route": "restaurant_wine"}, ctx=ctx_for(s, script))
    assert forked["error"] is None
    assert forked["path"] == ["contextualize", "route_question", "search_collection", "generate"]
    assert forked["answer"] == "from restaurant_wine.md"
    assert {src["collection"] for src in forked["sources"]} == {"restaurant_wine"}
    assert forked["forked_from"] == {"thread": original["thread_id"], "turn": 0, "step": router["n"],
                                     "node": "route_question", "checkpoint_id": router["checkpoint_id"],
                                     "changes": {"route": "restaurant_wine"}, "replay": False}
    [note] = [e for e in forked["trace"] if e.get("grader") == "what_if"]
    assert note["target"] == "route" and note["verdict"] == "restaurant_wine" and "was restaurant_menu" in note["reason"]
    assert seen(s, original["thread_id"]) == before  # the original thread did not move
    thread = get_registry(s.data_path).get(forked["thread_id"])
    assert thread["origin"] == "fork" and thread["status"] == "done"
    diff = compare_runs(original, forked)
    # one retrieval node serves every collection: the paths match, the route and the retrieval differ
    assert diff["path"]["diverges_at"] == 4 and not diff["same"] and diff["answer_changed"]
    assert {"node": "route_question", "grader": "what_if", "target": "route", "original": "—", "fork": "restaurant_wine"} \
        in diff["decisions"]


def relevant_if_price_of_steak(messages):
    """Relevance by content: only the chunk holding the steak's price is relevant."""
    return {"relevant": "yes" if "₩35,000" in judged_document(messages) else "no"}


def test_self_rag_fork_with_a_relevance_verdict_flipped_to_no_rewrites_and_searches_again(s):
    script = Script(retrieval={"kind": "lookup"}, sources={"sources": ["restaurant_menu"]}, relevance=relevant_if_price_of_steak,
                    answer="시그니처 스테이크는 ₩35,000입니다 [1].", grounded={"grounded": "yes"},
                    usefulness={"useful": "yes", "score": 5}, rewrite={"question": "시그니처 스테이크 가격"})
    original = run_script("self_rag", STEAK, s, script)
    assert "rewrite_question" not in original["path"] and original["path"].count("multi_search") == 1
    before = seen(s, original["thread_id"])
    grading = step_of(s, original["thread_id"], "grade_documents")
    kept = grading["editable"]["documents"]
    assert len(kept["value"]) == 1 and len(kept["candidates"]) == 2  # one yes, one no

    forked = fork(s, original["thread_id"], grading["n"], {"documents": []}, ctx=ctx_for(s, script))
    assert forked["path"][grading["n"]:] == ["rewrite_question", "select_sources", "multi_search", "grade_documents",
                                             "generate", "grade_hallucination", "grade_usefulness", "accept"]
    assert forked["path"].count("multi_search") == 2
    assert "no relevant documents: rewrite 1 of 2" in kinds(forked, "rewrite")[0]["reason"]
    searches = [e["reason"] for e in forked["trace"] if e["node"] == "search_source"]
    assert searches == [STEAK, "시그니처 스테이크 가격"]  # a second retrieval, for the rewritten query
    assert forked["termination_reason"] == "accepted"
    assert seen(s, original["thread_id"]) == before
    steps = turn_steps(s, forked["thread_id"])["steps"]
    changed = [st for st in steps if st["changed_by_user"]]
    assert [(st["node"], st["wrote"]) for st in changed] == [("grade_documents", {"documents": []})]


def crag_by_content(messages):
    return {"grade": "incorrect", "confidence": 0.9}


def test_crag_fork_at_a_document_grade_refines_and_answers_instead_of_the_web(s):
    script = Script(crag=crag_by_content, web_rewrite={"question": "스테이크 가격"}, answer="₩35,000 [1].",
                    strip=lambda m: {"verdicts": ["yes" if "가격" in line else "no" for line in m[-1].content.splitlines()
                                                  if "<document>" in line]})
    original = run_script("corrective", STEAK, s, script)
    assert original["termination_reason"] == "web_unavailable" and "refine_knowledge" not in original["path"]
    before = seen(s, original["thread_id"])
    grading = step_of(s, original["thread_id"], "grade_documents")
    first = grading["editable"]["kept"]["candidates"][0]["id"]

    forked = fork(s, original["thread_id"], grading["n"], {"verdict": "correct", "kept": first}, ctx=ctx_for(s, script))
    assert forked["path"][grading["n"]:] == ["refine_knowledge", "generate"]
    assert forked["termination_reason"] == "answered" and forked["answer"] == "₩35,000 [1]."
    assert [src["chunk_id"] for src in forked["sources"]] == [first]  # only the document graded correct
    assert forked["forked_from"]["changes"] == {"verdict": "correct", "kept": [first]}
    assert seen(s, original["thread_id"]) == before


def _text_step(tool, query):
    return f"Thought: 찾아본다\nAction: {tool}\nAction Input: {query}"


@pytest.mark.parametrize("pattern", ["react", "react_native"])
def test_react_fork_at_a_tool_call_with_edited_arguments(s, pattern):
    first = (_text_step("web_search", "미국 반도체") if pattern == "react" else
             AIMessage("", tool_calls=[{"name": "web_search", "args": {"query": "미국 반도체"}, "id": "a", "type": "tool_call"}]))
    final = "Thought: 안다\nFinal Answer: 527억 달러입니다." if pattern == "react" else "527억 달러입니다."
    llm = ScriptedChatModel(replies=[first, final])
    ctx = make_context(s, llm=llm, grader=ScriptedChatModel(replies=[]), web=web_down)
    original = run(pattern, "미국의 반도체 지원 예산은?", s, ctx=ctx)
    assert [e["grader"] for e in original["trace"] if e.get("step") == "observation"] == ["web_search"]
    before = seen(s, original["thread_id"])
    agent = step_of(s, original["thread_id"], "agent")
    assert agent["editable"]["pending"]["value"][0]["args"] == {"query": "미국 반도체"}

    llm.replies = [final]
    edit = '[{"name": "usa_ict", "args": {"query": "CHIPS 법 예산"}}]'
    forked = fork(s, original["thread_id"], agent["n"], {"pending": edit}, ctx=ctx)
    observed = [(e["grader"], e["target"]) for e in forked["trace"] if e.get("step") == "observation"]
    assert observed == [("usa_ict", "CHIPS 법 예산")]
    assert forked["termination_reason"] == "answered"
    assert {src["source"] for src in forked["sources"]} == {"usa_ict_policy.pdf"}
    if pattern == "react_native":  # the model's own message now asks for what actually ran
        asked = [m for m in llm.calls[-1] if m.type == "ai"][0].tool_calls
        assert [(c["name"], c["args"], c["id"]) for c in asked] == [("usa_ict", {"query": "CHIPS 법 예산"}, "a")]
    assert seen(s, original["thread_id"]) == before


# ---------------------------------------------------------------- paused, failed, forks of forks, replays


def test_a_paused_run_is_forked_and_the_fork_pauses_and_resumes_on_its_own(s):
    script = Script(router={"route": "restaurant_menu"}, answer=answer_by_source)
    ctx = ctx_for(s, script)
    paused = run("adaptive", STEAK, s, ctx=ctx, review=True)
    steps = turn_steps(s, paused["thread_id"])["steps"]
    assert steps[-1]["status"] == "paused" and steps[-1]["node"] == "review_documents"
    before = seen(s, paused["thread_id"])

    router = step_of(s, paused["thread_id"], "route_question")["n"]
    forked = fork(s, paused["thread_id"], router, {"route": "restaurant_wine"}, ctx=ctx)
    assert forked["interrupted"] and forked["path"][-1] == "search_collection"
    assert get_registry(s.data_path).get(forked["thread_id"])["status"] == "waiting"
    done = resume(forked["thread_id"], {"action": "approve"}, s, ctx=ctx)
    assert done["answer"] == "from restaurant_wine.md"
    resumed = turn_steps(s, forked["thread_id"])
    assert resumed["turns"] == 1 and [st["node"] for st in resumed["steps"]][-3:] == ["review_documents", "generate",
                                                                                             "verify"]
    assert fork_info(s, forked["thread_id"])["result"]["forked_from"]["changes"] == {"route": "restaurant_wine"}
    retrieval = step_of(s, paused["thread_id"], "search_collection")  # the checkpoint the run paused on
    kept = retrieval["editable"]["documents"]["value"][:1]
    fewer = fork(s, paused["thread_id"], retrieval["n"], {"documents": kept}, ctx=ctx)
    assert fewer["interrupted"] and [d["id"] for d in fewer["interrupt"]["documents"]] == kept
    assert seen(s, paused["thread_id"]) == before  # still waiting for its own review
    assert get_registry(s.data_path).get(paused["thread_id"])["status"] == "waiting"


def test_a_failed_run_is_replayed_from_the_step_that_failed(s):
    model = ScriptedChatModel(replies=[{"route": "restaurant_menu"}, ConnectionError("Connection refused")])
    ctx = make_context(s, llm=model, grader=model, web=web_down)
    failed = run("adaptive", STEAK, s, ctx=ctx)
    assert failed["error"]
    last = turn_steps(s, failed["thread_id"])["steps"][-1]
    assert (last["status"], last["node"]) == ("failed", "generate") and "Connection refused" in last["error"]
    model.replies = ["다시 답합니다 [1]."]
    again = fork(s, failed["thread_id"], last["n"], ctx=ctx)
    assert again["answer"] == "다시 답합니다 [1]." and again["error"] is None
    assert again["path"] == ["contextualize", "route_question", "search_collection", "generate"]
    assert again["forked_from"]["replay"] is True
    assert again["llm_calls"] == 1 and list(again["usage"]) == ["generate"]  # only the failed step ran again
    assert get_registry(s.data_path).get(failed["thread_id"])["status"] == "failed"


def test_a_fork_of_a_fork_and_the_forks_listed_on_each_thread(s):
    script = Script(router={"route": "restaurant_menu"}, answer=answer_by_source, direct="안녕하세요")
    ctx = ctx_for(s, script)
    original = run("adaptive", STEAK, s, ctx=ctx)
    router = step_of(s, original["thread_id"], "route_question")["n"]
    wine = fork(s, original["thread_id"], router, {"route": "restaurant_wine"}, ctx=ctx)
    changed = step_of(s, wine["thread_id"], "route_question", nth=1)  # the fork's own, changed step
    assert changed["changed_by_user"] and changed["editable"]["route"]["value"] == "restaurant_wine"
    direct = fork(s, wine["thread_id"], changed["n"], {"route": "direct"}, ctx=ctx)
    assert direct["path"][-1] == "direct_answer" and direct["answer"] == "안녕하세요"
    assert [f["thread_id"] for f in forks_of(s, original["thread_id"])] == [wine["thread_id"]]
    assert [f["thread_id"] for f in forks_of(s, wine["thread_id"])] == [direct["thread_id"]]
    assert forks_of(s, wine["thread_id"])[0]["forked_from"]["thread"] == wine["thread_id"]


def test_replay_says_whether_the_run_repeated(s):
    grades = iter(["yes", "yes", "no", "no"])  # the second round of grading disagrees with the first
    script = Script(retrieval={"kind": "lookup"}, sources={"sources": ["restaurant_menu"]},
                    relevance=lambda m: {"relevant": next(grades, "no")}, answer="₩35,000 [1].",
                    grounded={"grounded": "yes"}, usefulness={"useful": "yes", "score": 5},
                    rewrite={"question": "스테이크 가격"})
    original = run_script("self_rag", STEAK, s, script)
    grading = step_of(s, original["thread_id"], "grade_documents")["n"]
    replay = fork(s, original["thread_id"], grading, ctx=ctx_for(s, script))
    diff = compare_runs(original, replay)
    assert not diff["same"] and "rewrite_question" in replay["path"]
    flipped = [r for r in diff["decisions"] if r["grader"] == "relevance" and r["original"] != "—"]
    assert len(flipped) == 2 and all(r["original"].startswith("yes") and r["fork"].startswith("no") for r in flipped)
    stable = fork(s, original["thread_id"], grading + 1, ctx=ctx_for(s, script))  # generate again: same answer
    assert compare_runs(original, stable)["same"]


def test_forking_an_earlier_turn_keeps_only_the_conversation_up_to_it(s):
    script = Script(router={"route": "restaurant_menu"}, answer=answer_by_source, contextualize="와인 리스트의 가격은?")
    ctx = ctx_for(s, script)
    first = run("adaptive", STEAK, s, ctx=ctx)
    second = run("adaptive", "그럼 와인은?", s, ctx=ctx, thread_id=first["thread_id"])
    assert turn_steps(s, first["thread_id"])["turns"] == 2
    router = step_of(s, first["thread_id"], "route_question")["n"]
    late = fork(s, first["thread_id"], router, {"route": "restaurant_wine"}, ctx=ctx)  # the last turn by default
    history = thread_history(s, late["thread_id"])
    assert [t["question"] for t in history] == [STEAK, "그럼 와인은?"]
    assert history[0]["result"]["answer"] == first["answer"] and history[1]["answer"] == "from restaurant_wine.md"
    early = fork(s, first["thread_id"], router, {"route": "restaurant_wine"}, turn=0, ctx=ctx)
    assert [t["question"] for t in thread_history(s, early["thread_id"])] == [STEAK]
    assert forks_of(s, first["thread_id"], turn=0)[0]["thread_id"] == early["thread_id"]
    assert second["thread_id"] == first["thread_id"]


# ---------------------------------------------------------------- changes that cannot be made


@pytest.mark.parametrize("changes, message", [
    ({"rout": "restaurant_wine"}, "The adaptive state has no field 'rout'. At step 2 (route_question) you can change: route."),
    ({"documents": "x"}, "'documents' cannot be changed at step 2 (route_question). At step 2 (route_question) you can "
                         "change: route. 'documents' can be changed at step(s) 3 (search_collection)."),
    ({"route": "beer"}, "Step 2 (route_question): route must be one of japan_ict, restaurant_menu, restaurant_wine, "
                        "usa_ict, web, direct; got beer"),
    ({"route": "restaurant_menu"}, "Nothing changes at step 2"),
])
def test_a_change_the_step_cannot_take_is_refused_with_what_it_can(s, changes, message):
    original = run_script("adaptive", STEAK, s, Script(router={"route": "restaurant_menu"}, answer="답 [1]."))
    before = seen(s, original["thread_id"])
    threads = len(get_registry(s.data_path).list())
    with pytest.raises(ForkError) as refused:
        fork(s, original["thread_id"], 2, changes)
    assert message in str(refused.value)
    assert len(get_registry(s.data_path).list()) == threads  # nothing was written
    assert seen(s, original["thread_id"]) == before


def test_bad_steps_documents_and_tool_calls_are_refused(s):
    original = run_script("adaptive", STEAK, s, Script(router={"route": "restaurant_menu"}, answer="답 [1]."))
    tid = original["thread_id"]
    with pytest.raises(ForkError, match="This turn has steps 0 to 5; got step 9"):
        fork(s, tid, 9, {"route": "restaurant_wine"})
    with pytest.raises(ForkError, match=r"unknown document id\(s\) nope; the documents at this step are: "):
        fork(s, tid, 3, {"documents": "nope"})
    with pytest.raises(ForkError, match="you can change: nothing"):
        fork(s, tid, 5, {"answer": "x"})  # the last step (the claim check): nothing runs after it
    with pytest.raises(ForkError, match="Unknown thread 'nope'"):
        fork(s, "nope", 1)
    get_registry(s.data_path).set_status(tid, "running")
    with pytest.raises(ForkError, match="still running"):
        fork(s, tid, 2, {"route": "restaurant_wine"})
    get_registry(s.data_path).set_status(tid, "done")
    llm = ScriptedChatModel(replies=[_text_step("usa_ict", "CHIPS"), "Final Answer: 527억"])
    react = run("react", "미국 반도체?", s, ctx=make_context(s, llm=llm, grader=llm, web=web_down))
    agent = step_of(s, react["thread_id"], "agent")["n"]
    with pytest.raises(ForkError, match="pending: not valid JSON"):
        fork(s, react["thread_id"], agent, {"pending": "[{broken"})
    with pytest.raises(ForkError, match=r"pending\[0\] needs a tool \"name\" and an \"args\" object"):
        fork(s, react["thread_id"], agent, {"pending": '[{"args": {}}]'})
