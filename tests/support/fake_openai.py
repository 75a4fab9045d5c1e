"""A scripted OpenAI-compatible HTTP server, for browser tests that need deterministic model replies.

The app under test talks to it through its real `openai-compatible` provider (ChatOpenAI over
HTTP), so everything but the model's choice is real. ``responder(messages) -> str`` picks each
reply from the request's messages; structured output is the reply's JSON text, sent as content
(json_schema / json_mode) or as the arguments of the forced tool call (function calling).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "local-model"


class FakeOpenAI:
    def __init__(self, responder: Callable[[list[dict]], str], logprobs: Callable[[list[dict]], list] | str | None = None):
        self.responder = responder
        # optional: (messages) -> [{"token", "logprob"}, ...], the first reply token's top logprobs, sent when a
        # request asks for logprobs (as OpenAI and vLLM do); "error": such a request gets HTTP 500; None: ignored
        self.logprobs = logprobs
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet test output
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server.requests.append(body)
                if body.get("logprobs") and server.logprobs == "error":  # as llama-cpp-python's server without logits_all
                    self._send(500, {"error": {"message": "logprobs is not supported for models created with "
                                                          "logits_all=False"}})
                    return
                text = server.responder(body.get("messages") or [])
                forced = (body.get("tool_choice") or {}) if isinstance(body.get("tool_choice"), dict) else {}
                name = (forced.get("function") or {}).get("name")
                message = ({"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": name, "arguments": text}}]}
                    if name else {"role": "assistant", "content": text})
                if body.get("stream"):
                    self._stream(message)
                else:
                    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if name else "stop"}
                    if body.get("logprobs") and server.logprobs:
                        top = server.logprobs(body.get("messages") or [])
                        choice["logprobs"] = {"content": [{**top[0], "top_logprobs": top}]}
                    self._send(200, {"id": "c1", "object": "chat.completion", "created": int(time.time()), "model": MODEL,
                                     "choices": [choice],
                                     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

            def _stream(self, message: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "c1", "object": "chat.completion.chunk", "created": int(time.time()), "model": MODEL}
                deltas = [{"role": "assistant", "content": ""}]
                if message.get("tool_calls"):
                    call = message["tool_calls"][0]
                    deltas.append({"tool_calls": [{"index": 0, **call}]})
                else:
                    words = message["content"].split(" ")
                    deltas += [{"content": w + (" " if i < len(words) - 1 else "")} for i, w in enumerate(words)]
                chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
                chunks.append({**base, "choices": [{"index": 0, "delta": {},
                                                     "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}]})
                chunks.append({**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                                                "total_tokens": 15}})
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
