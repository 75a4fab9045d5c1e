"""AppTest of grader calibration in the app: the Knowledge page's section, the sidebar's thresholds (issue 32)."""

import pytest

import core.llm.models
from core.config import ReadOnlyError, load_settings
from core.llm.models import model_name
from core.store import calibrations
from core.studio import calibrate
from core.studio.question_set import load_question_set
from support.app_support import app_data, assert_clean, button, open_page, shown, texts  # noqa: F401
from support.scripted import ProbabilityChatModel, ScriptedChatModel

KB = "pages/12_Knowledge_base.py"
BASIC = "pages/1_Basic_RAG.py"


class NamedProbabilityModel(ProbabilityChatModel):
    """A scripted probability model under the name of the configured grader (its calibration is saved under it)."""

    model_name: str = ""


def _sure_of_facts(messages, words):
    """p(yes) 0.8 where the judged text holds a fact of the question asked, 0.3 elsewhere; lookups are lookups."""
    text = messages[-1].content + messages[0].content
    if words == ["yes", "no"]:
        items = load_question_set()
        p = 0.8 if any(f in text for i in items for f in i["facts"] if i["question"] in text) else 0.3
        return {"yes": p, "no": 1 - p}
    if words[0] == "lookup":
        return {"lookup": 0.9, "small_talk": 0.05, "general_knowledge": 0.05}
    return {w: 1 / len(words) for w in words}


def _use(monkeypatch, model) -> None:
    monkeypatch.setattr(core.llm.models, "get_chat_model", lambda settings, role="main": model)


@pytest.fixture
def grader_name(app_data):
    return model_name(load_settings(), role="grader")


def test_calibration_runs_with_progress_is_saved_and_then_shown(app_data, grader_name, monkeypatch):
    _use(monkeypatch, NamedProbabilityModel(model_name=grader_name, probabilities=_sure_of_facts))
    at = open_page(KB)
    page = shown(texts(at))
    assert "Grader calibration" in page
    assert f"{grader_name} has not been calibrated" in page
    button(at, key_end="kb_calibrate").click().run()
    assert_clean(at)
    saved = calibrations.load(load_settings(), grader_name)
    assert saved and saved["thresholds"]["relevance"] == saved["graders"]["relevance"]["threshold"]
    assert any(f"Calibrated {grader_name} and saved its thresholds" in shown(s.value) for s in at.success)
    report = next(d.value for d in at.dataframe if "AUC" in d.value.columns)
    row = report.set_index("Grader").loc["relevance"]
    assert row["AUC"] == saved["graders"]["relevance"]["auc"] and "positives" in row["Held out"]

    again = open_page(KB)  # a new session reads the saved record
    page = shown(texts(again))
    assert f"{grader_name} was calibrated on {saved['at']}" in page
    assert any("AUC" in d.value.columns for d in again.dataframe)


def test_a_model_without_probabilities_is_told_plainly(app_data, monkeypatch):
    _use(monkeypatch, ScriptedChatModel(replies=[]))
    at = open_page(KB)
    button(at, key_end="kb_calibrate").click().run()
    assert_clean(at)
    assert any("no token probabilities" in shown(e.value) for e in at.error)


def test_read_only_mode_offers_no_calibration_and_core_refuses_saving(app_data, grader_name, monkeypatch):
    monkeypatch.setenv("RAG_READ_ONLY", "true")
    at = open_page(KB)
    assert "Grader calibration" in shown(texts(at))
    assert not [b for b in at.button if (b.key or "").endswith("kb_calibrate")]
    assert "Read-only mode: calibrating the graders is switched off" in shown(texts(at))
    with pytest.raises(ReadOnlyError):
        calibrate.save(load_settings(), {"model": grader_name, "thresholds": {"relevance": 0.7}})
    assert calibrations.load(load_settings(), grader_name) is None


def _thresholds_table(at):
    [table] = [d.value for d in at.sidebar.dataframe if "from" in d.value.columns]
    return table.set_index("grader").to_dict("index")


def test_the_sidebar_shows_the_thresholds_in_use_and_takes_an_override_for_the_session(app_data, grader_name):
    calibrate.save(load_settings(), {"model": grader_name, "thresholds": {"relevance": 0.7, "crag": [0.2, 0.8]}})
    at = open_page(BASIC)
    assert f"Grader thresholds for {grader_name}" in shown(texts(at.sidebar))
    table = _thresholds_table(at)
    assert table["relevance"] == {"threshold": "0.7", "from": "calibrated"}
    assert table["crag"] == {"threshold": "0.2–0.8", "from": "calibrated"}
    assert table["grounded"] == {"threshold": "0.5", "from": "default"}

    at.text_input(key="sb_grader_thresholds_text").set_value("relevance=0.4").run()
    assert_clean(at)
    assert _thresholds_table(at)["relevance"] == {"threshold": "0.4", "from": "settings"}
    assert at.session_state["prefs"]["grader_thresholds"] == "relevance=0.4"  # what current_settings() runs with

    at.text_input(key="sb_grader_thresholds_text").set_value("relevance=1.5, crag=0.2:0.7").run()
    assert_clean(at)
    [error] = [shown(e.value) for e in at.sidebar.error]
    assert "\n" not in error and "relevance='1.5'" in error and "previous thresholds stay" in error
    assert at.text_input(key="sb_grader_thresholds_text").value == "relevance=1.5, crag=0.2:0.7"  # nothing lost
    assert at.session_state["prefs"]["grader_thresholds"] == "relevance=0.4"
    assert _thresholds_table(at)["relevance"] == {"threshold": "0.4", "from": "settings"}


def test_the_calibration_texts_are_korean_in_korean(app_data, grader_name):
    at = open_page(KB)
    at.session_state["prefs"]["lang"] = "ko"
    at.run()
    assert_clean(at)
    page = shown(texts(at))
    assert "평가기 보정" in page and f"{grader_name} 모델은 아직 보정되지 않았습니다" in page
    assert f"{grader_name} 모델의 평가기 기준값" in shown(texts(at.sidebar))
    assert any(b.label == "기본 세트 / 내 컬렉션으로 보정" for b in at.button)
