"""AppTest of the Evaluation page: saved reports as tables and a chart, drill-down, running a small evaluation."""

import threading

from core.config import load_settings
from core.studio import evaluate
from support.app_support import app_data, assert_clean, button, charts, happy_script, open_page, scripted, shown, texts  # noqa: F401

EVALUATION = "pages/14_Evaluation.py"
MENU = {"id": "menu-01", "question": "스테이크 가격?", "category": "menu", "sources": ["restaurant_menu"],
        "facts": ["35,000", "한우 등심"], "answerable": True}
GREETING = {"id": "general-01", "question": "안녕하세요?", "category": "general", "sources": [], "facts": [],
            "answerable": True}


def canned(pattern: str, question: str, settings) -> dict:
    """Basic half-answers the menu question; adaptive gets it fully right. Both greet without retrieving."""
    if question == GREETING["question"]:
        return {"answer": "안녕하세요!", "trace": [], "termination_reason": "direct_answer", "llm_calls": 1,
                "tokens": 10, "ms": 400}
    answer = "한우 등심 ₩35,000" if pattern == "adaptive" else "₩35,000"
    return {"answer": answer, "termination_reason": "answered", "llm_calls": 2, "tokens": 80, "ms": 2000,
            "sources": [{"source": "restaurant_menu.md", "collection": "restaurant_menu"}], "searched": ["restaurant_menu"],
            "trace": [{"kind": "tool", "grader": "retriever", "target": "restaurant_menu"}]}


def saved_two_reports() -> tuple[str, str]:
    """An embedded report of two patterns and an 'openai' one of basic; returns (older, newer) file names."""
    settings = load_settings()
    first = evaluate.evaluate(settings, ["basic", "adaptive"], [MENU, GREETING], run_one=canned, set_name="mine.jsonl")
    older = evaluate.save(first, settings).name
    second = {**evaluate.evaluate(settings, ["basic"], [MENU], run_one=canned), "provider": "openai",
              "model": "gpt-4o-mini"}
    newer = evaluate.save(second, settings).name
    return older, newer


def test_saved_reports_are_tabulated_charted_and_drilled_into(app_data, scripted):
    older, newer = saved_two_reports()
    at = open_page(EVALUATION)
    assert "Scores depend on the model" in at.main.info[0].value and "270M demo" not in at.main.info[0].value
    assert at.multiselect(key="eval_reports").value == [newer, older]  # newest first, all selected
    summary = at.main.dataframe[0].value
    assert list(summary.columns[:5]) == ["evaluation", "set", "provider", "model", "pattern"]
    assert list(summary["set"]) == ["builtin.jsonl", "mine.jsonl", "mine.jsonl"]
    assert list(zip(summary["provider"], summary["pattern"])) == [("openai", "basic"), ("embedded", "basic"),
                                                                  ("embedded", "adaptive")]
    assert list(summary["key_fact_rate"]) == [0.5, 0.5, 1.0]
    assert list(summary["route_accuracy"]) == [1.0, 1.0, 1.0] and list(summary["questions"]) == [1, 2, 2]
    [(frontier, [points]), (spec, [data])] = charts(at)
    # the quality/cost frontier: score against mean LLM calls, with the set, provider and model on the chart
    layer = frontier["layer"][0]["encoding"]
    assert (layer["y"]["field"], layer["x"]["field"]) == ("key_fact_rate", "mean_llm_calls")
    assert sorted(frontier["title"]["subtitle"]) == ["builtin.jsonl · openai/gpt-4o-mini",
                                                     "mine.jsonl · embedded/gemma-3-270m"]  # the old name, read as its alias
    assert sorted(zip(points["pattern"], points["mean_llm_calls"])) == [("adaptive", 1.5), ("basic", 1.5), ("basic", 2.0)]
    at.selectbox(key="eval_cost_axis").set_value("mean_tokens").run()
    assert charts(at)[0][0]["layer"][0]["encoding"]["x"]["field"] == "mean_tokens"
    csv = next(b for b in at.get("download_button") if b.proto.label == "Download CSV")
    assert csv is not None
    button(at, key_end="eval_png_make").click().run()
    assert_clean(at)  # the rendered PNG sits under its own state key, not the download button's
    assert [b.proto.label for b in at.get("download_button")].count("Download PNG") == 1
    assert spec["facet"]["column"]["field"] == "metric" and spec["spec"]["encoding"]["xOffset"]["field"] == "evaluation"
    adaptive = data[data["pattern"] == "adaptive"].set_index("metric")["value"]
    assert adaptive.to_dict() == {"key_fact_rate": 1.0, "route_accuracy": 1.0}
    assert set(data["evaluation"]) == set(summary["evaluation"])

    # drill into the older report's adaptive run
    at.selectbox(key="eval_drill_report").set_value(older).run()
    at.selectbox(key=f"eval_drill_pattern_{older}").set_value("adaptive").run()
    assert_clean(at)
    items = at.main.dataframe[1].value
    assert list(items["id"]) == ["menu-01", "general-01"]
    assert list(items["fact_rate"].fillna(-1)) == [1.0, -1] and list(items["searched"]) == ["restaurant_menu", ""]
    assert "Why the runs stopped: answered 1, direct_answer 1" in shown(texts(at))

    # one report only: the table and chart follow the selection
    at.multiselect(key="eval_reports").set_value([older]).run()
    assert list(at.main.dataframe[0].value["pattern"]) == ["basic", "adaptive"]
    at.multiselect(key="eval_reports").set_value([]).run()
    assert at.warning[0].value == "Choose at least one evaluation." and not at.main.dataframe


def test_an_evaluation_started_from_the_page_runs_saves_and_is_listed(app_data, scripted):
    scripted.responder = happy_script()
    at = open_page(EVALUATION)
    assert "No evaluation saved yet" in at.main.info[1].value
    assert at.multiselect(key="eval_patterns").value == ["basic"]
    at.number_input(key="eval_limit_builtin.jsonl").set_value(2)
    at.selectbox(key="eval_category_builtin.jsonl").set_value("menu")
    button(at, "Run and save").click().run()
    assert_clean(at)
    [report] = evaluate.saved_reports(load_settings())
    assert shown(at.success[0].value) == f"Saved the evaluation as {report['file']}."
    assert report["provider"] == "embedded" and list(report["patterns"]) == ["basic"] and report["set"] == "builtin.jsonl"
    assert [i["id"] for i in report["patterns"]["basic"]["items"]] == ["menu-01", "menu-02"]
    summary = report["patterns"]["basic"]["summary"]
    assert summary["questions"] == 2 and summary["route_accuracy"] == 1.0
    assert summary["key_fact_rate"] == 0.5  # the scripted answer carries menu-01's price, nothing of menu-02
    assert at.multiselect(key="eval_reports").value == [report["file"]]
    table = at.main.dataframe[0].value
    assert list(table["pattern"]) == ["basic"] and list(table["key_fact_rate"]) == [0.5]
    assert len(scripted.calls) == 2  # basic: one answer per question


def test_starting_without_a_pattern_is_one_clear_message(app_data, scripted):
    at = open_page(EVALUATION)
    at.multiselect(key="eval_patterns").set_value([])
    button(at, "Run and save").click().run()
    assert_clean(at)
    assert [e.value for e in at.error] == ["Choose at least one pattern."]
    assert evaluate.saved_reports(load_settings()) == [] and not scripted.calls
    at.sidebar.button_group(key="sb_lang").set_value("ko").run()
    assert at.title[0].value == "평가" and "점수는 모델에 따라 달라집니다" in at.main.info[0].value


def test_an_uploaded_question_set_is_checked_run_and_named_in_the_report(app_data, scripted):
    scripted.responder = happy_script()
    at = open_page(EVALUATION)
    at.file_uploader(key="eval_set_file").set_value(("broken.jsonl", b'{"question": "a"}\n{oops}\n', "application/json"))
    at.run()
    assert [shown(e.value) for e in at.error] == ["broken.jsonl line 2: not valid JSON (Expecting property name enclosed in "
                                          "double quotes); each line must be one JSON object"]
    mine = ('{"id": "steak", "question": "스테이크 가격은?", "sources": ["restaurant_menu"], "facts": ["35,000"]}\n'
            '{"question": "누비라 요금은?", "sources": ["hanbit_bikes"]}\n').encode()
    at.file_uploader(key="eval_set_file").set_value(("mine.jsonl", mine, "application/json"))
    at.run()
    assert "mine.jsonl · 2" in shown(texts(at))
    at.number_input(key="eval_limit_mine.jsonl").set_value(2)
    button(at, "Run and save").click().run()
    assert_clean(at)
    assert "The set expects collections that do not exist here: hanbit_bikes." in shown(texts(at))
    [report] = evaluate.saved_reports(load_settings())
    assert report["set"] == "mine.jsonl" and report["set_questions"] == 2
    items = report["patterns"]["basic"]["items"]
    assert [i["id"] for i in items] == ["steak", "q002"] and items[0]["fact_rate"] == 1.0
    assert items[1]["route_ok"] is False  # the collection does not exist: counted as a miss, not skipped


def test_an_advice_shows_its_recommendation_rule_and_per_question_links(app_data, scripted):
    from core.studio import advise
    from core.studio.question_set import save_question_set

    settings = load_settings()
    items = [dict(MENU, kind="single"), dict(GREETING, kind="small_talk")]
    save_question_set(settings, "menu", items)
    advice_id = advise.start(settings, items, ["basic", "adaptive"], "menu.jsonl", run_one=canned,
                             judge=lambda q, a: False)
    for worker in [t for t in threading.enumerate() if t.name == f"advise-{advice_id}"]:
        worker.join(60)  # the advice ends in its thread (the canned runs take no time)
    assert advise.load_advice(settings, advice_id)["status"] == "done"
    at = open_page(EVALUATION)
    assert at.selectbox(key="advise_set").value == "menu.jsonl"
    assert any("Recommended: " in s.value for s in at.success)
    assert "cheapest of the" in shown(texts(at)) and "within 0.05 of the best" in shown(texts(at))
    table = at.main.dataframe[-1].value
    assert list(table["id"]) == ["menu-01", "general-01"] and table["adaptive"][0] == 1.0
    assert table["basic trace"][0] is None or table["basic trace"][0].startswith("/Basic_RAG?thread=")
    button(at, "Chart as PNG").click().run()
    assert_clean(at)
    png = next(b for b in at.get("download_button") if b.proto.label == "Download PNG")
    assert png.proto.url  # the rendered chart is offered for download (its bytes are tested in test_advise_chart)
    assert "Status: done" in shown(texts(at))
    at.sidebar.button_group(key="sb_lang").set_value("ko").run()
    assert "상태: 완료" in shown(texts(at)) and "done" not in at.selectbox(key="advise_pick").options[0]
    assert {m.proto.placeholder for m in at.multiselect} == {"선택하세요"}  # not Streamlit's English placeholder


def test_questions_generated_from_a_collection_are_shown_with_their_chunk_saved_and_offered_to_advise(app_data, scripted):
    from core.studio.question_set import load_saved_question_set
    from support.question_writer import combined

    scripted.responder = combined(happy_script())
    at = open_page(EVALUATION)
    button(at, "Generate").click().run()
    assert [e.value for e in at.error] == ["Choose at least one collection."]
    at.multiselect(key="gen_collections").set_value(["restaurant_menu"])
    at.number_input(key="gen_count").set_value(3)
    button(at, "Generate").click().run()
    assert_clean(at)
    assert "Kept 3 of 3 written questions" in shown(texts(at)) and "Stopped" not in shown(texts(at))
    streamed = [c.value for c in at.code if c.value.startswith("single: kept g001 ")]  # one line per question
    assert streamed and streamed[0].splitlines()[1].startswith("two_chunks: kept g002 ")
    picked = at.selectbox(key="gen_chunk_pick")
    assert picked.options == ["g001", "g002", "g003"]
    picked.set_value("g002").run()  # a two-chunk question: both of its chunks are shown
    chunks = [c.value for c in at.code]
    assert len(chunks) == 2 and all(chunks)
    at.text_input(key="gen_set_name").set_value("menu questions")
    button(at, "Save the set").click().run()
    assert_clean(at)
    assert shown(at.success[0].value) == "Saved as menu-questions.jsonl."
    assert at.selectbox(key="advise_set").value == "menu-questions.jsonl"
    picked.set_value("g001").run()  # the next rerun (any widget) keeps the confirmation: the table is what was saved
    assert [shown(s.value) for s in at.success] == ["Saved as menu-questions.jsonl."]
    saved = load_saved_question_set(load_settings(), "menu-questions.jsonl")
    assert [i["kind"] for i in saved] == ["single", "two_chunks", "unanswerable"]
    assert all(fact in "\n".join(chunks) for fact in saved[1]["facts"])  # quoted from the chunks shown
    assert saved[1]["provenance"][0]["collection"] == "restaurant_menu"
    at.sidebar.button_group(key="sb_lang").set_value("ko").run()
    assert "컬렉션에서 질문 만들기" in [s.value for s in at.subheader]


def test_the_edited_table_becomes_the_set_keeping_provenance_and_reading_blank_cells_of_added_rows():
    import pandas as pd

    from ui.screens.advise import EDIT_COLUMNS, _items

    generated = {"g001": {"id": "g001", "question": "정기권은 얼마인가요?", "kind": "single", "lang": "ko",
                          "facts": ["5,000원"], "sources": ["bikes"], "answerable": True,
                          "provenance": [{"collection": "bikes", "file": "fees.md", "chunk_id": "c1"}]},
                 "g002": {"id": "g002", "question": "삭제될 질문", "kind": "single", "facts": [], "sources": [],
                          "answerable": True}}
    edited = pd.DataFrame([
        {"id": "g001", "question": "누비라 30일 정기권의 가격은?", "kind": "single", "lang": "ko", "facts": "5,000원 | 30일",
         "sources": "bikes", "answerable": True},
        {"id": None, "question": "헬멧은 무료인가요?", "kind": None, "lang": None, "facts": None, "sources": None,
         "answerable": None},
        {"id": None, "question": float("nan"), "kind": None, "lang": None, "facts": None, "sources": None,
         "answerable": None},  # an added row left empty
    ], columns=EDIT_COLUMNS)
    items = _items(edited, generated)
    assert [i["id"] for i in items] == ["g001", "e002"]  # g002 deleted, the empty row dropped
    assert items[0]["question"] == "누비라 30일 정기권의 가격은?" and items[0]["facts"] == ["5,000원", "30일"]
    assert items[0]["provenance"] == generated["g001"]["provenance"]
    assert items[1] == {"id": "e002", "question": "헬멧은 무료인가요?", "facts": [], "sources": [], "answerable": True,
                        "kind": "single", "category": "single", "lang": ""}


def test_advising_on_a_set_about_an_undescribed_collection_warns_first(app_data, scripted, tmp_path):
    from core.knowledge.base import KnowledgeBase
    from core.studio.question_set import save_question_set

    settings = load_settings()
    faq = tmp_path / "faq.md"
    faq.write_text("## Deleted files\nDeleted files are kept for 90 days on every plan.", encoding="utf-8")
    assert not KnowledgeBase(settings).ingest([faq], "my_faq").errors  # no description given
    save_question_set(settings, "faq", [{"id": "f1", "question": "How long are deleted files kept?",
                                         "sources": ["my_faq"], "facts": ["90 days"], "answerable": True,
                                         "category": "single", "kind": "single", "lang": "en"}])
    save_question_set(settings, "menu", [dict(MENU, kind="single")])
    at = open_page(EVALUATION)
    at.selectbox(key="advise_set").set_value("faq.jsonl").run()
    assert_clean(at)
    assert any(shown(w.value).startswith("my_faq has no description") for w in at.warning)
    at.selectbox(key="advise_set").set_value("menu.jsonl").run()
    assert not any("no description" in w.value for w in at.warning)  # the samples are described


def test_question_writing_evaluation_and_advice_past_their_limits_are_one_line_each_and_write_nothing(
        app_data, scripted, monkeypatch):
    from core.studio import advise
    from core.studio.question_set import save_question_set

    monkeypatch.setenv("RAG_MAX_SET_QUESTIONS", "2")
    monkeypatch.setenv("RAG_MAX_SET_RUNS", "3")
    settings = load_settings()
    save_question_set(settings, "menu", [dict(MENU, kind="single"), dict(GREETING, kind="small_talk")])
    at = open_page(EVALUATION)
    at.multiselect(key="gen_collections").set_value(["restaurant_menu"])
    at.number_input(key="gen_count").set_value(3)
    button(at, "Generate").click().run()
    assert_clean(at)
    assert [shown(e.value) for e in at.error] == [
        "refused: 3 questions would pass the limit of 2 questions per set (RAG_MAX_SET_QUESTIONS); ask for fewer"]
    assert not scripted.calls and "Kept" not in shown(texts(at))

    at.multiselect(key="eval_patterns").set_value(["basic", "adaptive"])
    at.number_input(key="eval_limit_builtin.jsonl").set_value(2)
    button(at, "Run and save").click().run()
    assert_clean(at)
    assert shown(at.error[0].value) == ("refused: 2 questions x 2 patterns = 4 runs would pass the limit of 3 runs per "
                                        "evaluation or advice (RAG_MAX_SET_RUNS); choose fewer questions or patterns")
    assert evaluate.saved_reports(settings) == [] and not scripted.calls

    at.multiselect(key="advise_patterns_0").set_value(["basic", "adaptive"])
    button(at, "Advise").click().run()
    assert_clean(at)
    assert any("2 questions x 2 patterns = 4 runs" in shown(e.value) and "RAG_MAX_SET_RUNS" in shown(e.value)
               for e in at.error)
    assert advise.list_advice(settings) == [] and not scripted.calls
