"""Shared deployments: a password asked once per browser session, and a read-only mode enforced in core."""

import pytest
from streamlit.testing.v1 import AppTest

import core.knowledge.base
import core.store.access_limit
from core.cli.main import main
from core.config import load_settings
from core.knowledge.base import KnowledgeBase, ReadOnlyError
from core.store.access_limit import FREE_ATTEMPTS, AccessLimiter, MemoryCounters
from core.store.threads import get_registry
from support.app_support import app_data, assert_clean, button, open_page, texts  # noqa: F401
from ui.shell.access import password_matches

APP = str(open_page.__globals__["APP"])
PASSWORD = "open sesame"


def gate(at: AppTest) -> bool:
    return any(w.key == "access_password" for w in at.text_input)


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def counters(monkeypatch) -> Clock:
    """Fresh wrong-password counters per test (they are process-wide), on a clock the test moves."""
    clock = Clock()
    monkeypatch.setattr(core.store.access_limit, "_limiters", {"": AccessLimiter(MemoryCounters(), clock)})
    return clock


def guess(at: AppTest, password: str) -> AppTest:
    at.text_input(key="access_password").set_value(password)
    return at.button[0].click().run()


def test_the_password_is_asked_once_per_session_before_any_page_renders(app_data, monkeypatch):
    monkeypatch.setenv("RAG_APP_PASSWORD", PASSWORD)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert_clean(at)
    assert gate(at) and not at.sidebar.button and not at.expander  # nothing of the app behind it
    at.text_input(key="access_password").set_value("open sesame ").run()
    at.button[0].click().run()
    assert gate(at) and at.error[0].value == "Wrong password."
    at.text_input(key="access_password").set_value(PASSWORD)
    at.button[0].click().run()
    assert_clean(at)
    assert not gate(at) and "Agentic RAG Studio" in texts(at) and at.sidebar.button
    at.switch_page("pages/12_Knowledge_base.py").run()  # the same session is not asked again
    assert not gate(at) and at.expander
    deep_link = AppTest.from_file(APP, default_timeout=60)  # a new session on any page is asked again
    deep_link.switch_page("pages/12_Knowledge_base.py").run()
    assert gate(deep_link) and not deep_link.expander


def test_wrong_guesses_count_across_sessions_and_a_locked_out_guess_is_not_checked(app_data, monkeypatch, counters):
    monkeypatch.setenv("RAG_APP_PASSWORD", PASSWORD)
    guesser = AppTest.from_file(APP, default_timeout=60).run()
    for _ in range(FREE_ATTEMPTS):
        assert guess(guesser, "steak").error[0].value == "Wrong password."
    other = AppTest.from_file(APP, default_timeout=60).run()  # another session from the same address
    guess(other, PASSWORD)
    assert_clean(other)
    assert gate(other) and "wait 1 s" in other.error[0].value  # the right password was not even checked
    counters.now += 1
    guess(other, PASSWORD)
    assert not gate(other) and other.sidebar.button


def test_password_comparison_is_exact():
    assert password_matches(PASSWORD, PASSWORD)
    assert not password_matches(PASSWORD + " ", PASSWORD) and not password_matches("", PASSWORD)
    assert not password_matches("열려라 참깨", PASSWORD)


def test_read_only_mode_refuses_changes_in_core_but_still_indexes_the_samples(tmp_path, monkeypatch):
    from support.fakes import HashEmbeddings

    monkeypatch.setattr(core.knowledge.base, "SAMPLE_COLLECTIONS", {"restaurant_wine": "restaurant_wine.md"})
    writable = KnowledgeBase(load_settings(data_dir=str(tmp_path / "data")), HashEmbeddings())
    writable.ingest([], "notes", files={"a.md": "# A\n\n메모".encode()})
    kb = KnowledgeBase(load_settings(data_dir=str(tmp_path / "data"), read_only=True), HashEmbeddings(model_id="test:other"))
    assert kb.ensure_samples() == ["restaurant_wine"]  # the app needs its samples, even read-only
    for change in (lambda: kb.ingest([], "notes", files={"b.md": b"# B"}), lambda: kb.delete_source("notes", "a.md"),
                   lambda: kb.delete_collection("notes"), lambda: kb.reindex("notes")):
        with pytest.raises(ReadOnlyError, match="read-only mode"):
            change()
    assert writable.info("notes")["sources"] == ["a.md"] and writable.info("notes")["embedding_model"] == "test:hash"


def test_read_only_mode_holds_for_the_cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_READ_ONLY", "true")
    note = tmp_path / "note.md"
    note.write_text("# 메모\n\n내용", encoding="utf-8")
    assert main(["--data-dir", str(tmp_path / "data"), "ingest", str(note), "--collection", "notes"]) == 2
    assert "read-only mode (RAG_READ_ONLY)" in capsys.readouterr().err


def test_read_only_pages_offer_no_upload_delete_reindex_or_custom_url(app_data, monkeypatch):
    monkeypatch.setenv("RAG_READ_ONLY", "true")
    at = open_page("pages/12_Knowledge_base.py")
    assert "Read-only mode: uploads, deletions and re-indexing are switched off." in texts(at)
    assert not at.get("file_uploader")
    assert not [b for b in at.button if (b.key or "").startswith(("kb_del", "kb_reindex", "kb_index"))]
    at.selectbox(key="sb_provider").set_value("ollama").run()
    assert "sb_ollama_host" not in {w.key for w in at.text_input}
    registry = get_registry(app_data)
    registry.touch("t-read-only", "basic", "![x](http://attacker.example/t.png) 주차 질문", "done")
    at.switch_page("pages/1_Basic_RAG.py")
    at.query_params["thread"] = "t-read-only"
    at.run()
    assert_clean(at)
    label = button(at, key_end="sb_open_t-read-only").label
    assert "![" not in label and "`http://attacker.example/t.png`" in label  # a title is shown, never fetched
    assert not [b for b in at.button if (b.key or "").startswith(("sb_delete_", "sb_rename_"))]


@pytest.mark.parametrize("password", ["pw", "seven77"])
def test_a_password_shorter_than_eight_characters_keeps_the_app_closed_with_one_line(app_data, monkeypatch, password,
                                                                                    capsys):
    monkeypatch.setenv("RAG_APP_PASSWORD", password)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert_clean(at)
    assert not gate(at) and not at.sidebar.button  # no form to guess at, and nothing of the app
    from core.store.access_limit import password_problem
    from core.studio.render import plain_markdown

    assert password_problem(password) == ("RAG_APP_PASSWORD is refused: a password has at least 8 characters; set a "
                                          "longer one (the app stays closed until then)")
    assert [e.value for e in at.error] == [plain_markdown(password_problem(password))]
    main(["--data-dir", str(app_data), "doctor"])
    assert "password gate  : refused - RAG_APP_PASSWORD is refused: a password has at least 8" in capsys.readouterr().out


def test_a_malformed_trusted_proxies_setting_keeps_the_app_closed(app_data, monkeypatch):
    monkeypatch.setenv("RAG_APP_PASSWORD", PASSWORD)
    monkeypatch.setenv("RAG_TRUSTED_PROXIES", "127.0.0.1, nginx.internal")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not gate(at) and "is not an IP address" in at.error[0].value and "nginx" in at.error[0].value
