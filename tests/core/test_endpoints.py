"""The server's API keys never go to a URL typed in the browser; shared deployments can hide the URL fields."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.config import Settings, with_visitor_endpoints
from core.llm.models import list_models
from support.app_support import app_data, assert_clean, button, open_page  # noqa: F401

SERVER_KEYS = {"OPENAI_API_KEY": "sk-server-secret", "RAG_COMPAT_API_KEY": "compat-server-secret"}


class Recorder(ThreadingHTTPServer):
    """A stand-in for a visitor's own server: answers /models and records every Authorization header."""

    def __init__(self, address=("127.0.0.1", 0)):
        self.headers_seen: list[str] = []
        self.paths: list[str] = []  # every path asked for, query included
        self.status, self.body = 200, json.dumps({"data": [{"id": "visitor-model"}]}).encode()
        self.redirect_to = ""  # with a 3xx status: where the answer points
        self.post_status = 0  # set: POSTs answer this status with INTERNAL_BODY
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server hook
                recorder.headers_seen.append(self.headers.get("Authorization") or "")
                recorder.paths.append(self.path)
                self.send_response(recorder.status)
                if recorder.redirect_to:
                    self.send_header("Location", recorder.redirect_to)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(recorder.body)))
                self.end_headers()
                self.wfile.write(recorder.body)

            def do_POST(self):  # noqa: N802 - a chat call: read the request, answer like a GET
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if recorder.post_status:  # the model list answers, the model calls fail
                    self.send_response(recorder.post_status)
                    self.send_header("Content-Length", str(len(INTERNAL_BODY)))
                    self.end_headers()
                    self.wfile.write(INTERNAL_BODY)
                    return
                self.do_GET()

            def log_message(self, *args):
                pass

        super().__init__(address, Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}/v1"


def serve() -> Recorder:
    server = Recorder()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def recorder():
    server = serve()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def internal():
    """A second server: the internal service a redirect would lead to."""
    server = serve()
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
    own = with_visitor_endpoints(base, urls={"compat_base_url": "http://mine:1/v1"}, keys={"compat_api_key": " mine-own-key "})
    assert own.compat_api_key == "mine-own-key"
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
    at = open_page("pages/11_Review.py")  # (the home page checks the configured server's status: that is allowed)
    at.selectbox(key="sb_provider").set_value("openai-compatible").run()
    assert_clean(at)
    keys = {w.key for w in at.text_input}
    assert "sb_compat_base_url" not in keys and "sb_model_openai-compatible" in keys  # the model is typed
    assert recorder.headers_seen == []
    assert list_models(Settings(compat_base_url=recorder.url, allow_custom_endpoints=False), "openai-compatible") == []
    assert recorder.headers_seen == []


def test_a_typed_key_too_short_to_be_a_key_is_refused_with_a_message(app_data):
    at = open_page()
    at.selectbox(key="sb_provider").set_value("openai-compatible").run()
    at.text_input(key="sb_compat_api_key").set_value("a").run()
    assert_clean(at)
    assert any("at least 8 characters" in e.value for e in at.sidebar.error)
    at.text_input(key="sb_compat_api_key").set_value("a-real-key-123").run()
    assert not any("at least 8 characters" in e.value for e in at.sidebar.error)


# ---------------------------------------------------------------- typed URLs the server must not call (#21, item 5)

INTERNAL_BODY = b'{"data": [{"id": "internal-admin-SECRET"}], "error": {"message": "internal stack trace SECRET"}}'


def test_both_endpoint_switches_follow_the_app_password_unless_the_operator_sets_them(tmp_path, monkeypatch):
    from core.config import load_settings

    alone = load_settings(root=tmp_path)
    assert alone.allow_custom_endpoints and alone.allow_private_endpoints  # LM Studio on the laptop keeps working
    monkeypatch.setenv("RAG_APP_PASSWORD", "a shared secret")
    shared = load_settings(root=tmp_path)
    assert not shared.allow_custom_endpoints and not shared.allow_private_endpoints and not shared.custom_endpoints
    monkeypatch.setenv("RAG_ALLOW_CUSTOM_ENDPOINTS", "true")
    opened = load_settings(root=tmp_path)
    assert opened.custom_endpoints and not opened.allow_private_endpoints
    monkeypatch.setenv("RAG_ALLOW_PRIVATE_ENDPOINTS", "true")
    assert load_settings(root=tmp_path).allow_private_endpoints
    monkeypatch.delenv("RAG_APP_PASSWORD")
    monkeypatch.setenv("RAG_ALLOW_PRIVATE_ENDPOINTS", "false")
    assert not load_settings(root=tmp_path).allow_private_endpoints  # the operator may forbid it without a password


@pytest.mark.parametrize("suffix", ["/internal/admin?x=", "/internal/admin#x", "/v1?"])
def test_a_typed_url_with_a_query_or_fragment_is_refused_and_never_called(recorder, suffix):
    base = Settings(compat_base_url="http://127.0.0.1:9/v1")  # configured: nothing listens there
    typed = recorder.url.rsplit("/v1", 1)[0] + suffix
    settings = with_visitor_endpoints(base, urls={"compat_base_url": typed}, keys={})
    assert settings.compat_base_url == base.compat_base_url and "query" in settings.refused_urls["compat_base_url"]
    list_models(settings, "openai-compatible")
    assert recorder.paths == []


def test_user_info_and_other_schemes_are_refused():
    from core.endpoints import url_problem

    assert "user name" in url_problem("http://me:pw@93.184.215.14/v1")
    assert "http://" in url_problem("file:///etc/passwd") and "http://" in url_problem("gopher://93.184.215.14/")
    assert "backslash" in url_problem("http://93.184.215.14\\@127.0.0.1/")
    assert url_problem("https://93.184.215.14:8443/v1") == ""


def test_with_a_password_loopback_and_private_addresses_are_refused_by_every_resolved_address(recorder, monkeypatch):
    import socket

    from core.config import load_settings

    monkeypatch.setenv("RAG_APP_PASSWORD", "a shared secret")
    monkeypatch.setenv("RAG_ALLOW_CUSTOM_ENDPOINTS", "true")
    base = load_settings()
    port = recorder.url.split(":")[-1].split("/")[0]
    for url in (recorder.url, f"http://localhost:{port}/v1", f"http://[::1]:{port}/v1", "http://10.1.2.3/v1",
                "http://169.254.169.254/latest", "http://[::ffff:127.0.0.1]/v1", "http://0.0.0.0:1/v1"):
        settings = with_visitor_endpoints(base, urls={"compat_base_url": url, "ollama_host": url}, keys={})
        assert set(settings.refused_urls) == {"compat_base_url", "ollama_host"}, url
        assert "private" in settings.refused_urls["compat_base_url"]
        for provider in ("openai-compatible", "ollama"):
            list_models(settings, provider)
    assert recorder.paths == []
    real = socket.getaddrinfo

    def mixed(host, *args, **kwargs):  # a name with one public and one private address (a rebinding setup)
        if host == "mixed.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in ("93.184.215.14", "192.168.1.5")]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", mixed)
    assert "private" in with_visitor_endpoints(base, urls={"compat_base_url": "http://mixed.example/v1"},
                                               keys={}).refused_urls["compat_base_url"]
    public = with_visitor_endpoints(base, urls={"compat_base_url": "http://93.184.215.14/v1"}, keys={})
    assert public.compat_base_url == "http://93.184.215.14/v1" and not public.refused_urls


def test_the_operator_may_allow_private_addresses_for_a_shared_deployment(recorder, monkeypatch):
    from core.config import load_settings

    for name, value in (("RAG_APP_PASSWORD", "a shared secret"), ("RAG_ALLOW_CUSTOM_ENDPOINTS", "true"),
                        ("RAG_ALLOW_PRIVATE_ENDPOINTS", "true")):
        monkeypatch.setenv(name, value)
    settings = with_visitor_endpoints(load_settings(), urls={"compat_base_url": recorder.url}, keys={})
    assert settings.compat_base_url == recorder.url
    assert list_models(settings, "openai-compatible") == ["visitor-model"] and recorder.paths == ["/v1/models"]


def test_an_error_body_from_a_typed_endpoint_never_reaches_the_chat(recorder):
    from core.llm.models import friendly_error, get_chat_model

    recorder.status, recorder.body = 500, INTERNAL_BODY
    settings = with_visitor_endpoints(Settings(provider="openai-compatible", model="m", max_tokens=8),
                                      urls={"compat_base_url": recorder.url}, keys={})
    with pytest.raises(Exception) as failure:
        get_chat_model(settings).invoke("hello")
    shown = friendly_error(failure.value, settings)
    assert "the server answered HTTP 500" in shown and "SECRET" not in shown and "stack trace" not in shown


def test_the_sidebar_says_why_a_typed_url_is_refused_and_never_calls_it(app_data, recorder):
    at = open_page()
    at.selectbox(key="sb_provider").set_value("openai-compatible").run()
    at.text_input(key="sb_compat_base_url").set_value(recorder.url + "/internal/admin?x=").run()
    assert_clean(at)
    assert any("may not have a query" in e.value for e in at.sidebar.error)
    button(at, key_end="sb_test").click().run()
    assert recorder.paths == []


@pytest.mark.parametrize("provider", ["openai-compatible", "openai", "ollama"])
def test_model_calls_follow_no_redirect_to_another_server(recorder, internal, provider):
    from core.llm.models import friendly_error, get_chat_model

    recorder.status, recorder.redirect_to = 302, internal.url + "/internal/admin"
    url_field = {"openai-compatible": "compat_base_url", "openai": "openai_base_url", "ollama": "ollama_host"}[provider]
    settings = with_visitor_endpoints(Settings(provider=provider, model="m", max_tokens=8), urls={url_field: recorder.url},
                                      keys={"openai_api_key": "sk-visitors-own"})
    with pytest.raises(Exception) as failure:  # the 302 is an error, not a way to another server
        get_chat_model(settings).invoke("hello")
    assert recorder.paths and internal.paths == []
    assert "internal" not in friendly_error(failure.value, settings)


def test_the_connection_test_of_a_typed_endpoint_shows_no_error_body(recorder):
    from core.llm.models import check

    recorder.body, recorder.post_status = json.dumps({"data": [{"id": "m"}]}).encode(), 500
    settings = with_visitor_endpoints(Settings(provider="openai-compatible", model="m", max_tokens=8),
                                      urls={"compat_base_url": recorder.url}, keys={})
    status = check(settings, "openai-compatible", negotiate=True)  # the sidebar's "test connection"
    assert "SECRET" not in status.line() + " ".join(status.notes) and "stack trace" not in status.line()


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_embedding_calls_follow_no_redirect_and_show_no_error_body(recorder, internal, provider):
    """Both embedding clients were built to follow redirects: a 307 led to an internal service, and its body was
    in the error the Knowledge page shows."""
    from core.llm.embeddings import get_embeddings

    recorder.status, recorder.redirect_to = 307, internal.url + "/metadata"
    recorder.body = internal.body = json.dumps({"secret": "internal-metadata"}).encode()
    url_field = {"ollama": "ollama_host", "openai": "openai_base_url"}[provider]
    settings = with_visitor_endpoints(Settings(embedding_provider=provider, embedding_model="e", request_timeout=10),
                                      urls={url_field: recorder.url}, keys={"openai_api_key": "sk-visitors-own"})
    with pytest.raises(Exception) as failure:
        get_embeddings(settings).embed_documents(["menu"])
    assert recorder.paths and internal.paths == []
    assert "internal-metadata" not in str(failure.value) and "secret" not in str(failure.value)
    assert "HTTP 307" in str(failure.value)


@pytest.mark.parametrize("url", ["http://[64:ff9b::a00:1]/", "http://[2002:a9fe:a9fe::1]/", "http://[::a00:1]/v1",
                                 "http://[64:ff9b:1::808:808]/", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
                                 "http://[64:ff9b::7f00:1]:11434/"])
def test_nat64_6to4_and_other_embedded_ipv4_forms_are_checked_as_the_address_they_carry(url):
    from core.endpoints import typed_endpoint_problem

    assert "private" in typed_endpoint_problem(url, allow_private=False)


def test_an_embedded_public_ipv4_address_is_still_public():
    from core.endpoints import typed_endpoint_problem

    for url in ("http://[64:ff9b::808:808]/v1", "http://[2002:808:808::1]/v1", "http://[2606:4700::1111]/v1"):
        assert typed_endpoint_problem(url, allow_private=False) == "", url


@pytest.fixture
def default_ollama():
    """A listener on Ollama's default address (localhost:11434): what a default URL would reach."""
    import errno

    try:
        server = Recorder(("127.0.0.1", 11434))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            pytest.skip("something else listens on localhost:11434")
        raise
    server.body = json.dumps({"models": [{"name": "qwen2.5:7b"}]}).encode()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_shared_deployment_calls_no_ollama_url_the_operator_did_not_configure(tmp_path, monkeypatch, default_ollama):
    from core.config import load_settings
    from core.llm.embeddings import get_embeddings
    from core.llm.models import ProviderError, check, get_chat_model, resolve_provider

    monkeypatch.setenv("RAG_APP_PASSWORD", "a shared secret")
    for name in ("OLLAMA_HOST", "RAG_OLLAMA_HOST", "RAG_PROVIDER", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(root=tmp_path, provider="ollama", embedding_provider="ollama")
    status = check(settings, "ollama")  # the sidebar's and the home page's status, on picking "ollama"
    assert status.status == "not configured" and "set OLLAMA_HOST" in status.detail
    with pytest.raises(ProviderError, match="not configured on this server"):
        get_chat_model(settings)
    with pytest.raises(ValueError, match="not configured on this server"):
        get_embeddings(settings)
    assert resolve_provider(settings.with_(provider="")) == "embedded"  # the automatic choice does not probe it
    assert default_ollama.paths == []
    monkeypatch.setenv("OLLAMA_HOST", "http://localhost:11434")  # configured: called
    assert check(load_settings(root=tmp_path, provider="ollama"), "ollama").status == "ok"
    assert default_ollama.paths == ["/api/tags"]
