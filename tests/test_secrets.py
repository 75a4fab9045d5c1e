"""Keys stay in memory: nothing the app writes to disk contains them."""

from pathlib import Path

import pytest
from helpers import web_ok
from scripted import ScriptedChatModel
from workflow_script import Script

from core.knowledge.base import SAMPLES_DIR, KnowledgeBase
from core.run.runner import resume, run
from core.runtime.context import make_context

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
    assert loaded.with_(openai_api_key="sk-x \n").openai_api_key == "sk-x"


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
    from helpers import run_script
    from workflow_script import Script

    from core.knowledge.web_search import web_search
    from core.studio.export import to_json, to_markdown

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
    from ui.sidebar import KEY_FIELDS
    from ui.state import SECRET_KEYS

    assert {f.name for f in fields(Settings) if f.name.endswith(("_key", "_password"))} == set(SECRET_FIELDS)
    assert set(SECRET_KEYS) == set(KEY_FIELDS.values()) == set(PROVIDER_KEY_FIELDS.values()) <= set(SECRET_FIELDS)
    shown = Settings(openai_api_key="a1", tavily_api_key="b2", compat_api_key="c3", app_password="d4").public()
    assert all(shown[name] == "***" for name in SECRET_FIELDS)
