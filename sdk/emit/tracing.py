"""W3C trace context through OpenTelemetry, when it is installed (the `otel` extra).

A producer's create sends the current span's context as the `traceparent` header, which
emit keeps on each job the create makes (a job's own `traceparent` wins), and hands to
the worker in the claim's answer; the worker runs each handler in a span (kind CONSUMER,
named after the job's name) whose parent is the producer's span. So a handler's spans,
and whatever it calls, continue the producer's trace.

Only the OpenTelemetry API is used: what becomes of spans (sampled, exported, where) is
the application's own TracerProvider's to say. Without OpenTelemetry nothing is sent and
the worker runs handlers as it always did; nothing here fails for its absence.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from emit.control import Release

if TYPE_CHECKING:
    from emit.held import HeldJob

try:
    from opentelemetry import propagate, trace
except ImportError:  # not installed: tracing is off
    propagate = None  # type: ignore[assignment]
    trace = None  # type: ignore[assignment]

TRACEPARENT = "traceparent"
INSTRUMENTATION = "emit"
"""The tracer's name (OpenTelemetry's instrumentation scope) for the worker's spans."""


def available() -> bool:
    """Whether OpenTelemetry's API can be imported here."""
    return propagate is not None and trace is not None


def current_traceparent() -> str | None:
    """The current OpenTelemetry context as a `traceparent`, when a span is active (a valid
    span context: a recording span, or a context extracted from a caller); else None."""
    if not available() or not trace.get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    propagate.inject(carrier)  # the application's propagators: W3C Trace Context by default
    return carrier.get(TRACEPARENT)


def headers() -> dict[str, str] | None:
    """The headers a create sends for the current context (None: none to send)."""
    traceparent = current_traceparent()
    return {TRACEPARENT: traceparent} if traceparent is not None else None


@contextlib.contextmanager
def handler_span(job: HeldJob[Any]) -> Iterator[None]:
    """The span one attempt's handler runs in, current for the block (and, through the
    context a plain handler's thread is given, on that thread): its parent is the span
    the job's `traceparent` names, or none (a trace of its own). A handler's exception,
    other than `Release`, marks it failed; the exception goes on as it was."""
    if not available():
        yield
        return
    parent = propagate.extract({TRACEPARENT: job.traceparent}) if job.traceparent else None
    attributes: dict[str, Any] = {
        "messaging.system": "emit",
        "messaging.operation.type": "process",
        "messaging.destination.name": job.name,
        "messaging.message.id": job.id,
        "emit.space": job.space,
        "emit.job.id": job.id,
        "emit.job.name": job.name,
        "emit.job.attempt": job.attempt,
    }
    tracer = trace.get_tracer(INSTRUMENTATION)
    with tracer.start_as_current_span(
        job.name,
        context=parent,
        kind=trace.SpanKind.CONSUMER,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield
        except Release:
            span.set_attribute("emit.job.released", True)
            raise
        except Exception as exc:
            span.record_exception(exc)
            span.set_status(trace.Status(trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
