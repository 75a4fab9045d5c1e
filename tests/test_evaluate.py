"""The evaluation scorer on known outputs, and the evaluate loop on a scripted runner."""

from core import evaluate

MENU_ITEM = {"id": "menu-01", "question": "스테이크 가격?", "category": "menu", "expected_route": "menu",
             "expected_collections": ["restaurant_menu"], "expected_sources": ["restaurant_menu.md"],
             "key_facts": ["35,000", "한우 등심"], "must_decline": False}
GREETING = {"id": "general-01", "question": "안녕하세요?", "category": "general", "expected_route": "direct",
            "expected_collections": [], "expected_sources": [], "key_facts": [], "must_decline": False}
NOWHERE = {"id": "none-01", "question": "셰프 생일은?", "category": "unanswerable", "expected_route": "direct",
           "expected_collections": [], "expected_sources": [], "key_facts": [], "must_decline": True}


def retrieved(collections, answer, sources=(), reason="answered"):
    return {"answer": answer, "termination_reason": reason, "llm_calls": 3, "tokens": 100, "ms": 1500,
            "sources": [{"source": s} for s in sources],
            "trace": [{"kind": "tool", "grader": "retriever", "target": ",".join(collections)}]}


def test_a_correct_menu_answer_scores_full_marks():
    score = evaluate.score_item(MENU_ITEM, retrieved(["restaurant_menu"], "한우 등심 스테이크는 ₩35,000 입니다",
                                                     ["restaurant_menu.md"]))
    assert score["route_ok"] is True and score["source_hit"] is True and score["fact_rate"] == 1.0
    assert score["declined_ok"] is None


def test_wrong_store_missing_fact_and_wrong_source_score_zero():
    score = evaluate.score_item(MENU_ITEM, retrieved(["restaurant_wine"], "₩50,000입니다", ["restaurant_wine.md"]))
    assert score["route_ok"] is False and score["source_hit"] is False and score["fact_rate"] == 0.0


def test_key_facts_match_ignoring_spaces_and_case_and_partially():
    score = evaluate.score_item(MENU_ITEM, retrieved(["restaurant_menu"], "가격은 35, 000원", []))
    assert score["fact_rate"] == 0.5


def test_direct_route_is_right_only_without_retrieval():
    assert evaluate.score_item(GREETING, {"answer": "안녕하세요!", "trace": []})["route_ok"] is True
    assert evaluate.score_item(GREETING, retrieved(["restaurant_menu"], "안녕하세요!"))["route_ok"] is False


def test_declining_is_recognised_by_words_or_by_termination_reason():
    assert evaluate.score_item(NOWHERE, {"answer": "그 정보는 문서에 없습니다.", "trace": []})["declined_ok"] is True
    assert evaluate.score_item(NOWHERE, {"answer": "...", "termination_reason": "not_enough_evidence"})["declined_ok"]
    assert evaluate.score_item(NOWHERE, {"answer": "셰프의 생일은 5월 3일입니다.", "trace": []})["declined_ok"] is False


def test_web_tool_counts_as_the_web_collection():
    result = {"answer": "", "trace": [{"kind": "tool", "grader": "web_search", "target": "서울 날씨"}]}
    assert evaluate.searched_collections(result) == {"web"}


def test_evaluate_summarises_per_pattern_and_saves(settings):
    canned = {
        "menu-01": retrieved(["restaurant_menu"], "한우 등심 ₩35,000", ["restaurant_menu.md"]),
        "general-01": {"answer": "안녕하세요!", "trace": [], "termination_reason": "direct_answer", "llm_calls": 1,
                       "tokens": 10, "ms": 500},
        "none-01": retrieved(["restaurant_menu"], "셰프 생일은 5월입니다"),
    }
    questions = {i["question"]: i["id"] for i in (MENU_ITEM, GREETING, NOWHERE)}
    report = evaluate.evaluate(settings, ["basic"], [MENU_ITEM, GREETING, NOWHERE],
                               run_one=lambda pattern, question, s: canned[questions[question]])
    summary = report["patterns"]["basic"]["summary"]
    assert summary["questions"] == 3
    assert summary["route_accuracy"] == 1.0  # menu right, greeting right; the unanswerable item has no route score
    assert summary["source_hit_rate"] == 1.0 and summary["key_fact_rate"] == 1.0
    assert summary["correct_decline_rate"] == 0.0
    assert summary["mean_llm_calls"] == round(7 / 3, 3)
    assert summary["terminations"] == {"answered": 2, "direct_answer": 1}
    assert report["provider"] == "embedded"
    path = evaluate.save(report, settings)
    assert evaluate.saved_reports(settings)[0]["file"] == path.name
    assert "basic" in evaluate.render(report)


def test_the_shipped_question_set_is_well_formed():
    items = evaluate.load_evalset()
    assert len(items) >= 40
    assert len({i["id"] for i in items}) == len(items)
    assert {"menu", "wine", "pairing", "menu_wine", "policy_one", "policy_both", "general", "web",
            "unanswerable"} <= {i["category"] for i in items}
    assert sum(i["lang"] == "ko" for i in items) > sum(i["lang"] == "en" for i in items) > 0


def test_a_limited_run_takes_questions_in_turn_from_every_category():
    from core.evaluate import load_evalset, spread

    items = load_evalset()
    categories = list(dict.fromkeys(i["category"] for i in items))
    ten = spread(items, 10)
    assert [i["category"] for i in ten] == categories + categories[:10 - len(categories)]
    assert ten[0]["id"] == "menu-01" and ten[len(categories)]["id"] == "menu-02"  # file order within a category
    assert spread(items, None) == items and len(spread(items, 1000)) == len(items)
