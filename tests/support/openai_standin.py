"""HTTP stand-ins for the browser suites: an OpenAI-compatible server with a fixed reply, and a trap that logs fetches.

The Streamlit server under test runs in its own process, so a scripted model cannot be patched in;
it talks to this server through the real `openai-compatible` provider instead (ChatOpenAI over HTTP).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler):
        super().__init__(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


class ChatStandin(_Server):
    """Answers every chat completion with ``reply`` (streamed as server-sent events when asked)."""

    def __init__(self, reply: str, model: str = "scripted"):
        self.reply, self.model = reply, model
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server hook
                self._json({"object": "list", "data": [{"id": server.model, "object": "model"}]})

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if body.get("stream"):
                    self._events(server.reply)
                else:
                    self._json({"id": "c1", "object": "chat.completion", "created": 0, "model": server.model,
                                "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": server.reply}}],
                                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

            def _json(self, data: dict) -> None:
                raw = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _events(self, text: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                words = text.split(" ")
                pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
                for delta, finish in [*[({"role": "assistant", "content": p}, None) for p in pieces], ({}, "stop")]:
                    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": server.model,
                             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, *args):
                pass

        super().__init__(Handler)

    @property
    def url(self) -> str:
        return self.base + "/v1"


class Trap(_Server):
    """Any request a browser makes here is recorded: a page that fetches from it has rendered a remote image."""

    def __init__(self):
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server hook
                server.requests.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(Handler)
