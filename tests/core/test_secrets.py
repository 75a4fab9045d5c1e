"""Keys stay in memory: nothing the app writes to disk contains them."""

from pathlib import Path

import pytest

from core.knowledge.base import SAMPLES_DIR, KnowledgeBase
from core.run.runner import resume, run
from core.runtime.context import make_context
from support.helpers import web_ok
from support.scripted import ScriptedChatModel
from support.workflow_script import Script

SECRETS = ("sk-test-SECRET-123", "tvly-SECRET-456", "compat-SECRET-789")


def test_no_secret_reaches_checkpoints_threads_or_the_vector_store(settings):
    settings = settings.with_(openai_api_key=SECRETS[0], tavily_api_key=SECRETS[1], compat_api_key=SECRETS[2], k=2)
    KnowledgeBase(settings).ingest([SAMPLES_DIR / "restaurant_menu.md"], "restaurant_menu")
    script = Script(router={"route": "restaurant_menu"}, answer="₩35,000 [1].")
    model = ScriptedChatModel(responder=script)
    ctx = make_context(settings, llm=model, grader=model, web=web_ok("x"))
    paused = run("adaptive", "스테이크 가격?", settings, ctx=ctx, review=True)
    done = resume(paused["thread_id"], {"action": "approve"}, settings, ctx=ctx)
    assert done["answer"] == "₩35,000 [1]."
    assert all(secret not in str(done) for secret in SECRETS)
    files = [p for p in Path(settings.data_dir).rglob("*") if p.is_file()]
    assert any(p.name == "checkpoints.sqlite" for p in files) and any(p.name == "threads.sqlite" for p in files)
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} found in {path}"


# ---------------------------------------------------------------- keys with whitespace, keys inside error texts

KEY = "tvly-SECRET-456"
# the forms an error text gives a key: escaped in a repr, JSON-escaped, quoted, URL-encoded, behind Bearer
LEAKS = [
    f"Invalid leading whitespace, reserved character(s), or return character(s) in header value: 'Bearer {KEY}\\n'",
    f'{{"detail": "Unauthorized", "request": {{"headers": {{"Authorization": "Bearer {KEY}\\n"}}}}}}',
    f"GET https://api.tavily.com/search?api_key={KEY}%0A failed",
    f"api_key='{KEY}\\n' rejected",
    "Authorization: Bearer  tvly-another-unknown-token",
]


def test_keys_are_stripped_however_they_arrive(tmp_path, monkeypatch):
    from core.config import Settings, load_settings

    (tmp_path / ".env").write_text('OPENAI_API_KEY=" sk-test-SECRET-123 "\n', encoding="utf-8")
    monkeypatch.setenv("TAVILY_API_KEY", KEY + "\n")
    loaded = load_settings(root=tmp_path, compat_api_key="\tcompat-SECRET-789\r\n")
    assert (loaded.openai_api_key, loaded.tavily_api_key, loaded.compat_api_key) == (
        "sk-test-SECRET-123", KEY, "compat-SECRET-789")
    assert Settings(tavily_api_key=f" {KEY}\n").tavily_api_key == KEY
    assert loaded.with_(openai_api_key="sk-x-long \n").openai_api_key == "sk-x-long"


@pytest.mark.parametrize("text", LEAKS)
def test_an_error_text_is_shown_without_the_key_in_any_form(settings, text):
    from core.llm.models import friendly_error
    from core.studio.export import to_json, to_markdown

    settings = settings.with_(tavily_api_key=KEY + "\n")
    shown = friendly_error(RuntimeError(text), settings)
    result = {"pattern": "basic", "question": "q", "answer": "", "error": text, "trace": [{"node": "web_search",
              "kind": "error", "reason": text}]}
    for out in (shown, to_json(result, settings), to_markdown(result, settings)):
        assert KEY not in out and "another-unknown-token" not in out
        assert "***" in out


def test_a_key_in_a_web_search_error_reaches_no_answer_trace_database_or_export(settings):
    """A Tavily key with a trailing newline, quoted back by the failing client: redacted before anything keeps it."""
    from core.knowledge.web_search import web_search
    from core.studio.export import to_json, to_markdown
    from support.helpers import run_script
    from support.workflow_script import Script

    settings = settings.with_(tavily_api_key=KEY + "\n", k=2)
    KnowledgeBase(settings).ingest([SAMPLES_DIR / "restaurant_menu.md"], "restaurant_menu")

    class RejectingClient:
        def invoke(self, _query):
            raise RuntimeError(" | ".join(LEAKS))

    script = Script(crag=[{"grade": "incorrect", "confidence": 0.9}], web_rewrite={"question": "스테이크 가격"})
    result = run_script("corrective", "스테이크 가격?", settings, script,
                        web=lambda q: web_search(q, settings, client=RejectingClient()))
    assert result["termination_reason"] == "web_unavailable"
    reasons = " ".join(str(e.get("reason", "")) for e in result["trace"])
    assert "web search failed" in reasons and "***" in reasons
    texts = [str(result), to_json(result, settings), to_markdown(result, settings)]
    texts += [p.read_bytes().decode("utf-8", "replace") for p in Path(settings.data_dir).rglob("*.sqlite*")]
    for text in texts:
        assert KEY not in text and "another-unknown-token" not in text


def test_one_list_names_every_secret_setting():
    from dataclasses import fields

    from core.config import Settings
    from core.secrets import PROVIDER_KEY_FIELDS, SECRET_FIELDS
    from ui.shell.sidebar import KEY_FIELDS
    from ui.shell.state import SECRET_KEYS

    assert {f.name for f in fields(Settings) if f.name.endswith(("_key", "_password"))} == set(SECRET_FIELDS)
    assert set(SECRET_KEYS) == set(KEY_FIELDS.values()) == set(PROVIDER_KEY_FIELDS.values()) <= set(SECRET_FIELDS)
    shown = Settings(openai_api_key="a1-key-long", tavily_api_key="b2-key-long", compat_api_key="c3-key-long",
                     app_password="d4").public()
    assert all(shown[name] == "***" for name in SECRET_FIELDS)


# ---------------------------------------------------------------- redaction that leaves ordinary text alone (#21)


def test_the_app_password_is_never_redacted_from_answers_but_stays_masked_in_settings(settings):
    from core.secrets import redact, redact_all
    from core.studio.export import to_markdown

    settings = settings.with_(app_password="steak")
    answer = "The signature steak costs ₩35,000 [1]."
    assert redact(answer, settings) == answer
    assert redact_all({"answer": answer}, settings) == {"answer": answer}
    assert "The signature steak costs" in to_markdown({"pattern": "basic", "question": "steak?", "answer": answer,
                                                      "trace": []}, settings)
    assert settings.public()["app_password"] == "***" and "steak" not in repr(settings)


def test_a_key_shorter_than_eight_characters_is_refused_as_a_key(tmp_path, monkeypatch):
    from core.config import Settings, load_settings, with_visitor_endpoints
    from core.secrets import MIN_KEY_CHARS, key_problem, redact

    assert MIN_KEY_CHARS == 8
    assert "at least 8 characters" in key_problem("openai_api_key", "a")
    assert key_problem("openai_api_key", "sk-long-enough") == "" and key_problem("openai_api_key", "") == ""
    monkeypatch.setenv("OPENAI_API_KEY", "short")
    loaded = load_settings(root=tmp_path)
    assert loaded.openai_api_key == "" and loaded.refused_keys == ("openai_api_key",)
    typed = with_visitor_endpoints(Settings(), urls={"compat_base_url": "http://mine:1/v1"}, keys={"compat_api_key": "a"})
    assert typed.compat_api_key == "" and typed.refused_keys == ("compat_api_key",)
    text = "The answer: a bank"
    assert redact(text, Settings(compat_api_key="a")) == text  # never "The ***nswer: *** b***nk"


def test_the_provider_check_says_a_configured_key_was_refused(tmp_path, monkeypatch):
    from core.config import load_settings
    from core.llm.models import check

    monkeypatch.setenv("OPENAI_API_KEY", "short")
    status = check(load_settings(root=tmp_path, provider="openai"), "openai")
    assert status.status == "bad key" and "at least 8 characters" in status.detail


@pytest.mark.parametrize(("text", "shown"), [
    ("Bearer bonds are bearer instruments", "Bearer bonds are bearer instruments"),
    ("The bearer of this note, bearer cheque", "The bearer of this note, bearer cheque"),
    # a longer token that merely starts with the key is another token; the key itself is masked
    ("sk-test-SECRET-1234 is not sk-test-SECRET-123", "sk-test-SECRET-1234 is not ***"),
])
def test_redaction_leaves_words_and_longer_tokens_alone(text, shown):
    from core.secrets import redact

    assert redact(text, [SECRETS[0]]) == shown


@pytest.mark.parametrize("text", [
    "Authorization: Bearer abc123def", "Authorization: Bearer tvly-another-unknown-token",
    "header 'Bearer sk-test-SECRET-123\\n'", "key=sk-test-SECRET-123.", "(sk-test-SECRET-123)",
])
def test_redaction_still_masks_token_shaped_text(text):
    from core.secrets import redact

    out = redact(text, [SECRETS[0]])
    assert "SECRET" not in out and "abc123def" not in out and "unknown-token" not in out and "***" in out


def test_keys_with_regex_metacharacters_are_masked():
    from core.secrets import redact

    key = "k3y.+*?[(|$^\\"
    assert redact(f"failed with {key} here", [key]) == "failed with *** here"
    assert redact("failed with k3yX+*?[(|$^\\ here", [key]) == "failed with k3yX+*?[(|$^\\ here"


def test_a_key_typed_into_a_question_or_echoed_in_an_answer_is_stored_redacted(settings):
    """Redacted in spans and CLI output already; the question and the answer went into threads.sqlite and
    checkpoints.sqlite as typed."""
    import sqlite3

    settings = settings.with_(openai_api_key=SECRETS[0], k=2)
    KnowledgeBase(settings).ingest([SAMPLES_DIR / "restaurant_menu.md"], "restaurant_menu")
    script = Script(router={"route": "restaurant_menu"}, answer=f"Your key {SECRETS[0]} works; ₩35,000 [1].")
    model = ScriptedChatModel(responder=script)
    ctx = make_context(settings, llm=model, grader=model, web=web_ok("x"))
    done = run("adaptive", f"my key is {SECRETS[0]}: 스테이크 가격?", settings, ctx=ctx)
    assert done["answer"] == "Your key *** works; ₩35,000 [1]." and done["question"] == "my key is ***: 스테이크 가격?"
    for name in ("threads.sqlite", "checkpoints.sqlite"):
        path = Path(settings.data_dir) / name
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL's pages into the file read below
        data = b"".join(p.read_bytes() for p in path.parent.glob(name + "*"))
        assert SECRETS[0].encode() not in data and b"works; " in data, name


def test_a_key_after_a_percent_escape_is_redacted():
    from core.secrets import redact

    url = f"https://proxy.example/?target=https%3A%2F%2Fapi.example%2F%3Fkey%3D{SECRETS[1]}%26q%3D1"
    assert redact(url, [SECRETS[1]]) == "https://proxy.example/?target=https%3A%2F%2Fapi.example%2F%3Fkey%3D***%26q%3D1"
    assert redact(f"key%3D{SECRETS[1]}x", [SECRETS[1]]) == f"key%3D{SECRETS[1]}x"  # a longer token stays


def test_a_too_short_key_is_reported_as_refused_where_it_is_read_not_as_missing(tmp_path, monkeypatch, capsys):
    """``OPENAI_API_KEY=a ... ask --provider openai`` said "OpenAI needs OPENAI_API_KEY: set it"; doctor "no TAVILY_API_KEY"."""
    from core.cli.main import main
    from core.config import load_settings
    from core.knowledge.web_search import web_search, web_status
    from core.llm.embeddings import get_embeddings

    monkeypatch.setenv("OPENAI_API_KEY", "a")
    monkeypatch.setenv("TAVILY_API_KEY", "abc")
    settings = load_settings(root=tmp_path, data_dir=str(tmp_path / "data"), embedding_provider="openai")
    assert web_status(settings) == ("unavailable: TAVILY_API_KEY is refused: a key has at least 8 characters; set the "
                                    "real key, or leave it empty")
    assert "is refused: a key has at least 8" in web_search("menu", settings).reason
    with pytest.raises(ValueError, match="OPENAI_API_KEY is refused: a key has at least 8 characters"):
        get_embeddings(settings)
    assert main(["--data-dir", str(tmp_path / "data"), "ask", "--provider", "openai", "--pattern", "basic",
                 "스테이크 가격?"]) != 0
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY is refused: a key has at least 8 characters" in err and "needs OPENAI_API_KEY" not in err
