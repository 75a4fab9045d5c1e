"""Shared back ends (issue #14) that need no server: settings, masking, and the default staying on files."""

from core.config import Settings, load_settings
from core.secrets import mask_url, redact, secret_values

URL = "postgresql://rag:p%40ss-SECRET-42@db.example:5432/rag"


def test_database_and_chroma_urls_are_read_like_every_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_DATABASE_URL", URL + "\n")
    monkeypatch.setenv("RAG_CHROMA_URL", "http://chroma.example:8000")
    loaded = load_settings(root=tmp_path)
    assert (loaded.database_url, loaded.chroma_url) == (URL, "http://chroma.example:8000")
    assert (Settings().database_url, Settings().chroma_url) == ("", "")  # unset: the embedded files


def test_the_url_password_is_a_secret_masked_everywhere():
    settings = Settings(database_url=URL, chroma_url="https://team:chroma-SECRET-7@chroma.example")
    assert settings.public()["database_url"] == "postgresql://rag:***@db.example:5432/rag"
    assert settings.public()["chroma_url"] == "https://team:***@chroma.example"
    assert "SECRET" not in repr(settings)
    assert {"p@ss-SECRET-42", "chroma-SECRET-7"} <= set(secret_values(settings))
    error = f"connection to {URL} failed: password 'p@ss-SECRET-42' rejected"
    assert "SECRET" not in redact(error, settings)
    assert mask_url("http://chroma.example:8000") == "http://chroma.example:8000"  # nothing to hide
