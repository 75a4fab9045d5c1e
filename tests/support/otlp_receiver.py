"""A real OTLP/HTTP trace receiver for tests: POST /v1/traces, protobuf ExportTraceServiceRequest decoded.

Phoenix (arize-phoenix) is the receiver users open, but it is not installed for the tests: it adds 66
packages and about 320 MB, and it pins python-dateutil below 3 while chromadb's kubernetes client needs
3 or newer (see the note in tests/core/run/test_telemetry.py). This server speaks the same protocol on the wire.
"""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class OtlpReceiver:
    """Listens on 127.0.0.1 (a free port); ``bodies`` keeps every raw request, ``spans()`` the decoded spans."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the name http.server calls
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                ok = self.path == "/v1/traces" and self.headers.get("Content-Type") == "application/x-protobuf"
                if ok:
                    with receiver.lock:
                        receiver.bodies.append(body)
                self.send_response(200 if ok else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):  # keep pytest's output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def spans(self) -> list[dict]:
        """Every span received: name, ids, parent, attributes (plain values), events, status, resource."""
        out = []
        with self.lock:
            bodies = list(self.bodies)
        for body in bodies:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource_spans in request.resource_spans:
                resource = _attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    out += [_span(s, resource) for s in scope_spans.spans]
        return out

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _span(span, resource: dict) -> dict:
    return {"name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
            "parent_id": span.parent_span_id.hex(), "attributes": _attributes(span.attributes),
            "events": [{"name": e.name, "attributes": _attributes(e.attributes)} for e in span.events],
            "status": {"code": span.status.code, "message": span.status.message}, "resource": resource}


def _attributes(items) -> dict:
    """OTLP key-values as plain Python values (arrays as lists)."""
    return {item.key: _value(MessageToDict(item.value)) for item in items}


def _value(value: dict):
    if "arrayValue" in value:
        return [_value(v) for v in value["arrayValue"].get("values", [])]
    if "intValue" in value:
        return int(value["intValue"])  # int64 is a string in protobuf's JSON form
    return next(iter(value.values()), None)
