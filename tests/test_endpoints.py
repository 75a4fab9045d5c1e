"""The server's API keys never go to a URL typed in the browser; shared deployments can hide the URL fields."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from app_support import app_data, assert_clean, button, open_page  # noqa: F401

from core.config import Settings, with_visitor_endpoints
from core.llm.models import list_models

SERVER_KEYS = {"OPENAI_API_KEY": "sk-server-secret", "RAG_COMPAT_API_KEY": "compat-server-secret"}


class Recorder(ThreadingHTTPServer):
    """A stand-in for a visitor's own server: answers /models and records every Authorization header."""

    def __init__(self):
        self.headers_seen: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server hook
                recorder.headers_seen.append(self.headers.get("Authorization") or "")
                body = json.dumps({"data": [{"id": "visitor-model"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}/v1"


@pytest.fixture
def recorder():
    server = Recorder()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def server_keys(app_data, monkeypatch):
    for name, value in SERVER_KEYS.items():
        monkeypatch.setenv(name, value)


def leaked(recorder: Recorder) -> list[str]:
    return [h for h in recorder.headers_seen if any(key in h for key in SERVER_KEYS.values())]


def test_a_typed_url_gets_the_visitors_key_or_none_never_the_servers():
    base = Settings(openai_api_key="sk-server", compat_api_key="compat-server", compat_base_url="http://lab:1234/v1")
    same = with_visitor_endpoints(base, urls={"compat_base_url": "http://lab:1234/v1/"}, keys={})
    assert same.compat_api_key == "compat-server"  # the configured URL keeps the configured key
    typed = with_visitor_endpoints(base, urls={"compat_base_url": "http://evil:1/v1", "openai_base_url": "http://evil:2"},
                                   keys={})
    assert (typed.compat_base_url, typed.compat_api_key) == ("http://evil:1/v1", "")
    assert (typed.openai_base_url, typed.openai_api_key) == ("http://evil:2", "")
    own = with_visitor_endpoints(base, urls={"compat_base_url": "http://mine:1/v1"}, keys={"compat_api_key": " mine "})
    assert own.compat_api_key == "mine"
    shared = with_visitor_endpoints(base.with_(allow_custom_endpoints=False),
                                    urls={"compat_base_url": "http://evil:1/v1", "ollama_host": "http://evil:3"}, keys={})
    assert shared.compat_base_url == "http://lab:1234/v1" and shared.compat_api_key == "compat-server"
    assert shared.ollama_host == base.ollama_host
    read_only = with_visitor_endpoints(base.with_(read_only=True), urls={"ollama_host": "http://evil:3"}, keys={})
    assert read_only.ollama_host == base.ollama_host


def test_the_sidebar_never_sends_the_servers_key_to_a_url_the_visitor_typed(server_keys, recorder):
    at = open_page()
    at.selectbox(key="sb_provider").set_value("openai-compatible").run()
    at.text_input(key="sb_compat_base_url").set_value(recorder.url).run()
    assert_clean(at)
    assert "visitor-model" in at.selectbox(key="sb_model_openai-compatible").options  # the list was fetched...
    button(at, key_end="sb_test").click().run()
    at.selectbox(key="sb_provider").set_value("openai").run()
    at.text_input(key="sb_openai_base_url").set_value(recorder.url).run()
    button(at, key_end="sb_test").click().run()
    assert_clean(at)
    assert len(recorder.headers_seen) >= 2
    assert leaked(recorder) == []  # ...without the server's key
    at.text_input(key="sb_openai_api_key").set_value("sk-visitors-own").run()
    button(at, key_end="sb_test").click().run()
    assert recorder.headers_seen[-1] == "Bearer sk-visitors-own"


def test_with_custom_endpoints_off_there_is_no_url_field_and_no_probing(server_keys, recorder, monkeypatch):
    monkeypatch.setenv("RAG_ALLOW_CUSTOM_ENDPOINTS", "false")
    monkeypatch.setenv("RAG_COMPAT_BASE_URL", recorder.url)  # the configured server
    at = open_page("pages/8_Review.py")  # (the home page checks the configured server's status: that is allowed)
    at.selectbox(key="sb_provider").set_value("openai-compatible").run()
    assert_clean(at)
    keys = {w.key for w in at.text_input}
    assert "sb_compat_base_url" not in keys and "sb_model_openai-compatible" in keys  # the model is typed
    assert recorder.headers_seen == []
    assert list_models(Settings(compat_base_url=recorder.url, allow_custom_endpoints=False), "openai-compatible") == []
    assert recorder.headers_seen == []
