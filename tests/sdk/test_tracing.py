"""Trace context through the SDK, against a real `emit dev`, with OpenTelemetry's SDK and an
in-memory exporter: a create inside a span carries its context to the job, and the
worker's handler span is that span's child, in the same trace."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from emit import Emit, HeldJob, NewJob, Release, tracing
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind, StatusCode

from tests.e2e.conftest import DevServer
from tests.sdk.support import FAST, eventually, running

OWN = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@functools.cache
def _exporter() -> InMemorySpanExporter:
    """One exporter for the process: OpenTelemetry's tracer provider is set once, for good."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = _exporter()
    exporter.clear()
    yield exporter
    exporter.clear()


def traceparent_of(context: SpanContext) -> str:
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def handler_span(spans: InMemorySpanExporter, job_id: str) -> ReadableSpan:
    """The worker's span for the job (ended, so exported, before its report is sent)."""
    [span] = of_job(spans, job_id)
    return span


def of_job(spans: InMemorySpanExporter, job_id: str) -> list[ReadableSpan]:
    """The worker's spans for the job's attempts, in the order they started."""
    found = [s for s in spans.get_finished_spans() if (s.attributes or {}).get("emit.job.id") == job_id]
    return sorted(found, key=lambda s: s.start_time or 0)


def settled(client: Emit, job_id: str) -> None:
    eventually(lambda: client.jobs.get(job_id).finished or None)


class Headers(httpx.BaseTransport):
    """Passes every request on, keeping the headers of each create."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.creates: list[httpx.Headers] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith("/jobs"):
            self.creates.append(request.headers)
        return self.inner.handle_request(request)


@pytest.mark.parametrize("kind", ["plain", "async"])
def test_a_create_in_a_span_is_the_parent_of_its_handlers_span(
    client: Emit, spans: InMemorySpanExporter, kind: str
) -> None:
    tracer = trace.get_tracer("tests")
    with tracer.start_as_current_span("produce") as producer:
        job_id = client.jobs.create("traced", {"n": 1}).id
    sent = producer.get_span_context()
    assert client.jobs.get(job_id).traceparent == traceparent_of(sent)
    inside: list[tuple[str | None, SpanContext]] = []

    def work(job: HeldJob[Any]) -> int:
        inside.append((job.traceparent, trace.get_current_span().get_span_context()))
        with tracer.start_as_current_span("step"):
            return 2

    async def work_async(job: HeldJob[Any]) -> int:
        await asyncio.sleep(0)
        return work(job)

    handle = client.worker(names=["traced"], **FAST)(work if kind == "plain" else work_async)
    with running(handle):
        settled(client, job_id)
    span = handler_span(spans, job_id)
    assert span.kind == SpanKind.CONSUMER and span.name == "traced"
    assert span.parent is not None
    assert (span.context.trace_id, span.parent.span_id) == (sent.trace_id, sent.span_id)
    assert span.attributes is not None
    assert span.attributes["emit.job.attempt"] == 1 and span.attributes["emit.space"] == client.space
    [(held, current)] = inside
    assert held == traceparent_of(sent), "HeldJob shows the job's traceparent"
    assert current.span_id == span.context.span_id, "the handler's span is current in the handler"
    [step] = [s for s in spans.get_finished_spans() if s.name == "step"]
    assert step.parent is not None and step.parent.span_id == span.context.span_id


def test_a_batch_create_carries_the_span_to_each_job_and_a_jobs_own_wins(
    client: Emit, spans: InMemorySpanExporter
) -> None:
    with trace.get_tracer("tests").start_as_current_span("produce") as producer:
        made = client.jobs.create_many([NewJob("a"), {"name": "a"}, NewJob("a", traceparent=OWN)])
        own = client.jobs.create("a", traceparent=OWN)
    sent = traceparent_of(producer.get_span_context())
    shown = [client.jobs.get(c.id).traceparent for c in [*made, own]]
    assert shown == [sent, sent, OWN, OWN]


def test_without_an_active_span_nothing_is_sent_and_the_handler_starts_a_trace(
    dev: DevServer, space: str, spans: InMemorySpanExporter
) -> None:
    headers = Headers()
    with Emit(dev.url, dev.token, space, http_transport=headers) as client:
        job_id = client.jobs.create("untraced").id
        client.jobs.create_many([NewJob("untraced")])
        assert [h.get("traceparent") for h in headers.creates] == [None, None]
        assert client.jobs.get(job_id).traceparent is None

        handle = client.worker(names=["untraced"], **FAST)(lambda job: None)
        with running(handle):
            settled(client, job_id)
    span = handler_span(spans, job_id)
    assert span.parent is None and span.kind == SpanKind.CONSUMER


def test_a_failing_handler_marks_its_span_and_a_release_does_not(
    client: Emit, spans: InMemorySpanExporter
) -> None:
    job_id = client.jobs.create("failing", max_attempts=1).id
    released = client.jobs.create("released").id
    gave_back = threading.Event()

    def work(job: HeldJob[Any]) -> None:
        if job.name == "failing":
            raise ValueError("card declined")
        if not gave_back.is_set():
            gave_back.set()
            raise Release()

    handle = client.worker(names=["failing", "released"], **FAST)(work)
    with running(handle):
        settled(client, job_id)
        settled(client, released)
    span = handler_span(spans, job_id)
    assert span.status.status_code == StatusCode.ERROR
    assert [e.name for e in span.events] == ["exception"]
    first, second = of_job(spans, released)
    assert first.status.status_code == StatusCode.UNSET and first.attributes is not None
    assert first.attributes["emit.job.released"] is True
    assert second.status.status_code == StatusCode.UNSET


def test_the_current_traceparent_is_the_active_spans() -> None:
    assert tracing.available()
    assert tracing.current_traceparent() is None and tracing.headers() is None
    _exporter()
    with trace.get_tracer("tests").start_as_current_span("produce") as producer:
        assert tracing.headers() == {"traceparent": traceparent_of(producer.get_span_context())}
