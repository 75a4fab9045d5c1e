"""OpenTelemetry export of runs: spans in the OpenInference conventions, sent to ``RAG_OTLP_ENDPOINT``.

Off unless the setting is set, and then the OpenTelemetry packages are imported on the first run only
(``core.run.spans`` holds everything that needs them). Spans leave through a batch processor on a
background thread with a timeout per request, so an endpoint that is down, slow or wrong never holds up
or fails a run: its spans are dropped and the exporter logs why.
"""

from __future__ import annotations

import logging
import threading

from core.config import Settings
from core.endpoints import url_problem

PROJECT = "agentic-rag-studio"  # the project name Phoenix files the traces under
EXPORT_TIMEOUT_SECONDS = 5.0  # one export request; the batch thread gives up on the batch after it
SCHEDULE_DELAY_MS = 1000  # how long finished spans wait to be sent in one batch
log = logging.getLogger(__name__)
_providers: dict[str, object] = {}  # endpoint -> its TracerProvider, one per process (thread-safe to share)
_lock = threading.Lock()
_warned: set[str] = set()


def endpoint_problem(endpoint: str) -> str:
    """Why the OTLP endpoint cannot be used, or '' when it can (credentials go in OTEL_EXPORTER_OTLP_HEADERS)."""
    return url_problem(endpoint)


def run_tracer(settings: Settings, pattern_id: str, thread_id: str, run_id: int, question: str | None,
               resuming: bool = False):
    """A callback that records the run as spans (``finish`` ends it), or None when telemetry is off or unusable."""
    endpoint = settings.otlp_endpoint
    if not endpoint:
        return None
    problem = endpoint_problem(endpoint)
    if problem:
        _warn_once(endpoint, f"RAG_OTLP_ENDPOINT is not used: {problem}")
        return None
    try:
        from core.run.spans import RunSpans

        return RunSpans(_provider(endpoint).get_tracer(__name__), settings, pattern_id=pattern_id,
                        thread_id=thread_id, run_id=run_id, question=question, resuming=resuming)
    except Exception as exc:  # a broken OpenTelemetry install costs the spans, never the run
        _warn_once(endpoint, f"OpenTelemetry export is off: {exc}")
        return None


def flush(endpoint: str, timeout_seconds: float = 10.0) -> bool:
    """Send the spans waiting for ``endpoint`` now; False when they could not all be sent in time."""
    provider = _providers.get(endpoint)
    return provider is None or provider.force_flush(int(timeout_seconds * 1000))


def _provider(endpoint: str):
    """The process's TracerProvider for ``endpoint``, made on first use. It is never set as the global
    provider: chromadb uses OpenTelemetry too, and its spans are not ours to send."""
    with _lock:
        if endpoint not in _providers:
            from openinference.semconv.resource import ResourceAttributes
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            resource = Resource.create({"service.name": PROJECT, ResourceAttributes.PROJECT_NAME: PROJECT})
            provider = TracerProvider(resource=resource)
            exporter = OTLPSpanExporter(endpoint=endpoint, timeout=EXPORT_TIMEOUT_SECONDS)
            provider.add_span_processor(BatchSpanProcessor(
                exporter, schedule_delay_millis=SCHEDULE_DELAY_MS,
                export_timeout_millis=int(EXPORT_TIMEOUT_SECONDS * 1000)))
            _providers[endpoint] = provider
        return _providers[endpoint]


def _warn_once(endpoint: str, message: str) -> None:
    if endpoint not in _warned:
        _warned.add(endpoint)
        log.warning(message)
