"""The evaluation scorer on known outputs, and the evaluate loop on a scripted runner."""

from core.studio import evaluate

MENU_ITEM = {"id": "menu-01", "question": "스테이크 가격?", "category": "menu", "sources": ["restaurant_menu"],
             "facts": ["35,000", "한우 등심"], "answerable": True}
GREETING = {"id": "general-01", "question": "안녕하세요?", "category": "general", "sources": [], "facts": [],
            "answerable": True}
NOWHERE = {"id": "none-01", "question": "셰프 생일은?", "category": "unanswerable", "sources": [], "facts": [],
           "answerable": False}


def retrieved(collections, answer, cited=(), reason="answered"):
    return {"answer": answer, "termination_reason": reason, "llm_calls": 3, "tokens": 100, "ms": 1500,
            "sources": [{"source": f"{c}.md", "collection": c} for c in cited],
            "searched": sorted(collections)}


def test_a_correct_menu_answer_scores_full_marks():
    score = evaluate.score_item(MENU_ITEM, retrieved(["restaurant_menu"], "한우 등심 스테이크는 ₩35,000 입니다",
                                                     ["restaurant_menu"]))
    assert score["route_ok"] is True and score["source_hit"] is True and score["fact_rate"] == 1.0
    assert score["declined_ok"] is None


def test_wrong_store_missing_fact_and_wrong_source_score_zero():
    score = evaluate.score_item(MENU_ITEM, retrieved(["restaurant_wine"], "₩50,000입니다", ["restaurant_wine"]))
    assert score["route_ok"] is False and score["source_hit"] is False and score["fact_rate"] == 0.0


def test_route_accuracy_compares_collection_names_whatever_the_pattern():
    """A ReAct tool named after a collection counts like a retriever over it: no pattern is capped by wiring."""
    item = {**MENU_ITEM, "sources": ["restaurant_menu", "restaurant_wine"]}
    agent = {"answer": "x", "searched": ["restaurant_menu", "restaurant_wine"]}
    assert evaluate.score_item(item, agent)["route_ok"] is True


def test_key_facts_match_ignoring_spaces_and_case_and_partially():
    score = evaluate.score_item(MENU_ITEM, retrieved(["restaurant_menu"], "가격은 35, 000원", []))
    assert score["fact_rate"] == 0.5


def test_direct_route_is_right_only_without_retrieval():
    assert evaluate.score_item(GREETING, {"answer": "안녕하세요!", "trace": []})["route_ok"] is True
    assert evaluate.score_item(GREETING, retrieved(["restaurant_menu"], "안녕하세요!"))["route_ok"] is False


def test_declining_is_read_from_the_termination_reason_then_judged_never_keyword_matched():
    judged = []

    def judge(question, answer):
        judged.append(answer)
        return "없습니다" in answer  # a stand-in for the model judge

    by_reason = {"answer": "I cannot say that the chef was born in May.", "termination_reason": "not_enough_evidence"}
    assert evaluate.score_item(NOWHERE, by_reason, judge)["declined_ok"] is True and judged == []
    # "cannot" in an answer that states a fact is not a decline: the old substring check counted it as one
    claim = {"answer": "I cannot confirm it, but the chef was born on 3 May.", "termination_reason": "answered"}
    assert evaluate.score_item(NOWHERE, claim, lambda q, a: False)["declined_ok"] is False
    written = {"answer": "그 정보는 문서에 없습니다.", "termination_reason": "answered"}
    assert evaluate.score_item(NOWHERE, written, judge)["declined_ok"] is True and judged == [written["answer"]]
    assert evaluate.score_item(NOWHERE, {"answer": "", "termination_reason": "error", "error": "down"},
                               judge)["declined_ok"] is False
    assert evaluate.score_item(NOWHERE, written)["declined_ok"] is None  # no judge: not scored, not guessed


def test_the_model_judge_reads_a_structured_verdict():
    from support.scripted import ScriptedChatModel

    judge = evaluate.model_judge(ScriptedChatModel(replies=[{"declined": True}, "not json", "still not json"]))
    assert judge("셰프 생일은?", "문서에 나오지 않습니다.") is True
    assert judge("셰프 생일은?", "5월입니다.") is None  # unusable twice: unknown, not a guess


def test_web_tool_counts_as_the_web_collection():
    assert evaluate.searched_collections({"answer": "", "searched": ["web"]}) == {"web"}


def test_what_a_run_searched_is_carried_by_its_state_not_read_from_its_trace(sample_settings):
    """Retrievers, a web fallback and agent tools each record what they searched; the trace plays no part."""
    from support.helpers import run_script, web_ok
    from support.workflow_script import Script

    s = sample_settings.with_(k=2)
    basic = run_script("basic", "스테이크 가격?", s, Script(answer="₩35,000 [1]."), source_ids=["restaurant_menu"])
    assert basic["searched"] == ["restaurant_menu"]
    crag = run_script("corrective", "오늘 서울 날씨는?", s, Script(crag={"grade": "incorrect", "confidence": 0.9},
                      web_rewrite={"question": "서울 날씨"}, answer="맑음 [1]."), web=web_ok("sunny"))
    assert "web" in crag["searched"] and "restaurant_menu" in crag["searched"]
    assert evaluate.searched_collections({**crag, "trace": []}) == set(crag["searched"])


def test_evaluate_summarises_per_pattern_and_saves(settings):
    canned = {
        "menu-01": retrieved(["restaurant_menu"], "한우 등심 ₩35,000", ["restaurant_menu"]),
        "general-01": {"answer": "안녕하세요!", "trace": [], "termination_reason": "direct_answer", "llm_calls": 1,
                       "tokens": 10, "ms": 500},
        "none-01": retrieved(["restaurant_menu"], "셰프 생일은 5월입니다"),
    }
    questions = {i["question"]: i["id"] for i in (MENU_ITEM, GREETING, NOWHERE)}
    report = evaluate.evaluate(settings, ["basic"], [MENU_ITEM, GREETING, NOWHERE],
                               run_one=lambda pattern, question, s: canned[questions[question]],
                               set_name="mine.jsonl", judge=lambda q, a: False)
    summary = report["patterns"]["basic"]["summary"]
    assert summary["questions"] == 3
    assert summary["route_accuracy"] == 1.0  # menu right, greeting right; the unanswerable item has no route score
    assert summary["source_hit_rate"] == 1.0 and summary["key_fact_rate"] == 1.0
    assert summary["correct_decline_rate"] == 0.0
    assert summary["mean_llm_calls"] == round(7 / 3, 3)
    assert summary["terminations"] == {"answered": 2, "direct_answer": 1}
    assert report["provider"] == "embedded" and report["set"] == "mine.jsonl" and report["set_questions"] == 3
    path = evaluate.save(report, settings)
    assert evaluate.saved_reports(settings)[0]["file"] == path.name
    assert "basic" in evaluate.render(report) and "mine.jsonl" in evaluate.render(report)


def test_the_answer_language_is_the_script_most_letters_are_in():
    korean, english = {**MENU_ITEM, "lang": "ko"}, {**MENU_ITEM, "lang": "en"}
    assert evaluate.language_ok(korean, "시그니처 스테이크는 ₩35,000입니다.") is True
    assert evaluate.language_ok(korean, "The Signature Steak costs ₩35,000.") is False
    assert evaluate.language_ok(english, "The 시그니처 스테이크 costs ₩35,000 on the menu.") is True  # a quoted name
    assert evaluate.language_ok(english, "시그니처 스테이크는 ₩35,000입니다.") is False
    assert evaluate.language_ok(korean, "₩35,000") is None and evaluate.language_ok(MENU_ITEM, "네") is None


def test_answered_rate_language_and_step_parse_rate_are_summarised():
    item = {**MENU_ITEM, "lang": "ko"}
    runs = [  # three agent replies, one of them not a well-formed step, as the agent's state counted them
        {**retrieved(["restaurant_menu"], "₩35,000입니다"), "iterations": 3, "parse_errors": 1},
        retrieved(["restaurant_menu"], "It costs ₩35,000.", reason="retry_budget_exhausted"),
    ]
    scores = [evaluate.score_item(item, r) for r in runs]
    assert [s["answered"] for s in scores] == [True, False] and [s["language_ok"] for s in scores] == [True, False]
    assert (scores[0]["parsed_steps"], scores[0]["agent_replies"]) == (2, 3)
    summary = evaluate.summarise(scores + [evaluate.score_item(NOWHERE, retrieved([], "모릅니다"))])
    assert summary["answered_rate"] == 0.5  # the unanswerable question does not count
    assert summary["language_match_rate"] == 0.5  # NOWHERE names no language
    assert summary["step_parse_rate"] == round(2 / 3, 3)
    assert evaluate.summarise([scores[1]])["step_parse_rate"] is None  # no agent replies, no rate
    direct = {"answer": "안녕하세요!", "trace": [], "termination_reason": "direct_answer"}
    assert evaluate.score_item(GREETING, direct)["answered"] is True  # nothing to look up: a direct answer is one
    assert evaluate.score_item(item, direct)["answered"] is False  # a price question answered without looking


def test_the_built_in_set_is_a_jsonl_question_set():
    from core.studio.question_set import BUILTIN, load_question_set

    items = load_question_set()
    assert BUILTIN.suffix == ".jsonl" and len(items) >= 40
    assert len({i["id"] for i in items}) == len(items)
    assert {"menu", "wine", "pairing", "menu_wine", "policy_one", "policy_both", "general", "web",
            "unanswerable"} <= {i["category"] for i in items}
    assert sum(i["lang"] == "ko" for i in items) > sum(i["lang"] == "en" for i in items) > 0
    names = {"restaurant_menu", "restaurant_wine", "japan_ict", "usa_ict", "web"}
    assert {s for i in items for s in i["sources"]} == names
    assert all(not i["sources"] for i in items if not i["answerable"])


def test_a_limited_run_takes_questions_in_turn_from_every_category():
    from core.studio.question_set import load_question_set, spread

    items = load_question_set()
    categories = list(dict.fromkeys(i["category"] for i in items))
    n = len(categories) + 3  # every category once, then from the first three again
    some = spread(items, n)
    assert [i["category"] for i in some] == categories + categories[:3]
    assert some[0]["id"] == "menu-01" and some[len(categories)]["id"] == "menu-02"  # file order within a category
    assert spread(items, None) == items and len(spread(items, 1000)) == len(items)


def test_a_question_set_of_our_own_parses_with_defaults():
    from core.studio.question_set import parse_question_set, unknown_sources

    text = ('# bikes\n{"question": "누비라 정기권은?", "sources": ["hanbit_bikes"], "facts": ["5,000원"]}\n\n'
            '{"question": "Who won?", "answerable": false}\n{"question": "안녕?", "sources": []}\n')
    items = parse_question_set(text, "bikes.jsonl")
    assert [i["id"] for i in items] == ["q002", "q004", "q005"]
    assert [i["category"] for i in items] == ["hanbit_bikes", "unanswerable", "direct"]
    assert items[0]["answerable"] is True and items[1]["sources"] == []
    assert unknown_sources(items, ["restaurant_menu"]) == ["hanbit_bikes"]


def test_broken_question_sets_say_which_line_and_why():
    import pytest

    from core.studio.question_set import QuestionSetError, parse_question_set

    cases = {'{"question": "a"}\n{"question": "b"\n': "line 2: not valid JSON",
             '{"sources": ["x"]}': "line 1: 'question' is missing",
             '{"question": "a", "facts": "x", "answerable": "yes"}': "'answerable' must be true or false",
             '{"question": "a", "sources": [1]}': "'sources' must be a list of strings",
             '["question"]': "expected a JSON object",
             '{"id": "a", "question": "x"}\n{"id": "a", "question": "y"}': "used twice",
             "\n# nothing\n": "no questions found"}
    for text, message in cases.items():
        with pytest.raises(QuestionSetError, match=message.replace("(", r"\(")):
            parse_question_set(text, "set.jsonl")


def test_a_saved_set_never_replaces_another_of_the_same_name_without_being_asked(settings):
    """Two visitors saving under the default name "my-questions": the second used to replace the first silently."""
    from core.studio.question_set import load_saved_question_set, save_question_set, saved_question_sets

    first = [{"question": "스테이크는 얼마인가요?"}]
    second = [{"question": "와인은 있나요?"}]
    assert save_question_set(settings, "my-questions", first) == "my-questions.jsonl"
    assert save_question_set(settings, "my-questions", second) == "my-questions-2.jsonl"
    assert load_saved_question_set(settings, "my-questions.jsonl")[0]["question"] == "스테이크는 얼마인가요?"
    assert save_question_set(settings, "my-questions", second, replace=True) == "my-questions.jsonl"  # asked for
    assert load_saved_question_set(settings, "my-questions.jsonl")[0]["question"] == "와인은 있나요?"
    read_only = settings.with_(read_only=True)
    assert save_question_set(read_only, "my-questions", first, replace=True) == "my-questions-3.jsonl"
    assert saved_question_sets(settings) == ["my-questions-2.jsonl", "my-questions-3.jsonl", "my-questions.jsonl"]


def test_coverage_is_the_share_of_facts_found_for_questions_that_match_several_items(settings):
    steaks = {"id": "items-01", "question": "스테이크 메뉴의 가격은?", "category": "several_items",
              "sources": ["restaurant_menu"], "facts": ["시그니처 스테이크", "35,000", "키즈 미니 함박 스테이크", "14,000"],
              "answerable": True}
    canned = {"menu-01": retrieved(["restaurant_menu"], "한우 등심 ₩35,000", ["restaurant_menu"]),
              "items-01": retrieved(["restaurant_menu"], "키즈 미니 함박 스테이크는 ₩14,000입니다.", ["restaurant_menu"])}
    questions = {i["question"]: i["id"] for i in (MENU_ITEM, steaks)}
    report = evaluate.evaluate(settings, ["basic"], [MENU_ITEM, steaks],
                               run_one=lambda pattern, question, s: canned[questions[question]], judge=lambda q, a: False)
    summary = report["patterns"]["basic"]["summary"]
    assert summary["coverage"] == 0.5  # one of two steaks named and priced; menu-01 does not count
    assert summary["key_fact_rate"] == 0.75
    only_menu = evaluate.summarise([evaluate.score_item(MENU_ITEM, canned["menu-01"])])
    assert only_menu["coverage"] is None


def test_the_built_in_set_asks_for_several_items_with_each_items_name_and_figure():
    from core.studio.question_set import BUILTIN, load_question_set

    several = [i for i in load_question_set(BUILTIN) if i["category"] == evaluate.SEVERAL_ITEMS]
    assert len(several) >= 3
    steaks = next(i for i in several if i["question"] == "스테이크 메뉴의 가격은 얼마인가요?")
    each = {"시그니처 스테이크", "35,000", "그릴드 연어 스테이크", "29,000", "키즈 미니 함박 스테이크", "14,000"}
    assert each <= set(steaks["facts"])


def _agent_trace(*actions):
    tools = [{"name": "restaurant_menu", "collections": ["restaurant_menu"]},
             {"name": "restaurant_wine", "collections": ["restaurant_wine"]}]
    return [{"node": "agent", "kind": "info", "step": "tools", "tools": tools}] + \
        [{"node": "agent", "kind": "route", "step": "action", "target": a} for a in actions]


def test_an_agents_first_tool_is_scored_from_its_first_action():
    wine_first = {**retrieved(["restaurant_menu", "restaurant_wine"], "₩35,000"),
                  "trace": _agent_trace("restaurant_wine", "restaurant_menu")}
    menu_first = {**wine_first, "trace": _agent_trace("restaurant_menu")}
    # both searched the menu in the end (route_ok); only one went there first
    assert evaluate.score_item(MENU_ITEM, wine_first)["first_tool_ok"] is False
    assert evaluate.score_item(MENU_ITEM, menu_first)["first_tool_ok"] is True
    greeted = {**retrieved([], "안녕하세요!", reason="direct_answer"), "trace": _agent_trace()}
    searched = {**greeted, "trace": _agent_trace("restaurant_menu")}
    assert evaluate.score_item(GREETING, greeted)["first_tool_ok"] is True
    assert evaluate.score_item(GREETING, searched)["first_tool_ok"] is False
    # a workflow pattern lists no tools: not scored
    assert evaluate.score_item(MENU_ITEM, retrieved(["restaurant_menu"], "₩35,000"))["first_tool_ok"] is None
    summary = evaluate.summarise([evaluate.score_item(MENU_ITEM, r) for r in (wine_first, menu_first)])
    assert summary["first_tool_accuracy"] == 0.5 and summary["median_seconds"] == 1.5
