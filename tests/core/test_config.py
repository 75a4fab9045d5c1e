from core.config import Settings, load_settings


def _project(tmp_path, env_file: str = "", secrets: str = ""):
    if env_file:
        (tmp_path / ".env").write_text(env_file)
    if secrets:
        (tmp_path / ".streamlit").mkdir()
        (tmp_path / ".streamlit" / "secrets.toml").write_text(secrets)
    return tmp_path


def test_defaults_without_any_source(tmp_path, monkeypatch):
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("RAG_K", raising=False)
    settings = load_settings(root=_project(tmp_path))
    assert settings.ollama_host == Settings().ollama_host
    assert settings.k == 3


def test_precedence_explicit_env_dotenv_secrets(tmp_path, monkeypatch):
    root = _project(
        tmp_path,
        env_file="OLLAMA_HOST=http://dotenv:1\nTAVILY_API_KEY=tv-dotenv\nRAG_K=5\n",
        secrets='OLLAMA_HOST = "http://secrets:1"\nTAVILY_API_KEY = "tv-secrets"\nOPENAI_API_KEY = "sk-secrets"\nRAG_K = 4\n',
    )
    monkeypatch.setenv("OLLAMA_HOST", "http://env:1")
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RAG_K", raising=False)
    settings = load_settings(root=root)
    assert settings.ollama_host == "http://env:1"  # environment beats .env and secrets
    assert settings.tavily_api_key == "tv-dotenv"  # .env beats secrets.toml
    assert settings.openai_api_key == "sk-secrets"  # secrets.toml beats the default
    assert settings.k == 5 and isinstance(settings.k, int)
    assert load_settings(root=root, ollama_host="http://explicit:1").ollama_host == "http://explicit:1"


def test_broken_secrets_file_and_bad_numbers_are_tolerated(tmp_path, monkeypatch):
    root = _project(tmp_path, secrets="this is not toml = = =")
    monkeypatch.setenv("RAG_K", "many")
    assert load_settings(root=root).k == 3


def test_secrets_are_masked_in_public_view_and_repr():
    settings = Settings(openai_api_key="sk-very-secret", tavily_api_key="tvly-secret")
    public = settings.public()
    assert public["openai_api_key"] == "***" and public["tavily_api_key"] == "***"
    assert public["compat_api_key"] == ""
    assert "sk-very-secret" not in repr(settings) and "tvly-secret" not in repr(settings)
