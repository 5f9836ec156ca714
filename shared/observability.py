"""Powertools logging, metrics and tracing, configured once for every function."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.metric_properties import (
    MetricResolution,
    MetricUnit,
)


class QuietMetrics(Metrics):
    """Metrics that record nothing while metrics are disabled (`emit dev`, the tests).

    Powertools skips the flush at the end of each invocation when disabled, but keeps
    what was added, and prints the whole buffer by itself once a metric holds 100
    values: a blob of JSON on `emit dev`'s console every hundred ticks of its clock."""

    def add_metric(
        self, name: str, unit: MetricUnit | str, value: float, resolution: MetricResolution | int = 60
    ) -> None:
        if not is_metrics_disabled():
            super().add_metric(name, unit, value, resolution)


if TYPE_CHECKING:
    from shared.name_metrics import NamePoint


def publish_name_point(point: NamePoint) -> None:
    """One listed name's metrics (`shared.name_metrics`), in a blob of their own with the
    dimensions Space and Name (the function's own metrics have none but the service)."""
    if is_metrics_disabled():
        return
    blob = EphemeralMetrics(namespace="Emit", service="emit")
    blob.add_dimension("Space", point.space)
    blob.add_dimension("Name", point.name)
    for metric, n in point.events.items():
        blob.add_metric(metric, MetricUnit.Count, n)
    if point.backlog.publish:
        blob.add_metric("ClaimableBacklog", MetricUnit.Count, point.backlog.claimable)
        blob.add_metric("OldestClaimableAge", MetricUnit.Seconds, point.backlog.oldest_age_s)
    if point.events or point.backlog.publish:
        blob.flush_metrics()


logger = Logger(service="emit")
metrics = QuietMetrics(namespace="Emit", service="emit")
tracer = Tracer(service="emit")

W3C_TRACE_ID = "w3c_trace_id"
"""The X-Ray annotation naming the W3C trace a request's jobs carry (`traceparent`): X-Ray's
own trace id is the function's, so this is how a producer's trace is found there
(`annotation.w3c_trace_id = "<32 hex>"`)."""
W3C_TRACE_IDS = "w3c_trace_ids"
"""The segment's metadata listing every W3C trace id, when its jobs carry more than one."""


def annotate_traces(traceparents: Iterable[str | None]) -> None:
    """Put the W3C trace ids of the jobs a request dealt with on this function's X-Ray
    segment: the first as the annotation (one value per key), all of them as metadata when
    there are several. Nothing when tracing is off or no job carries a trace."""
    ids = list(dict.fromkeys(t[3:35] for t in traceparents if t))
    if not ids:
        return
    tracer.put_annotation(W3C_TRACE_ID, ids[0])
    if len(ids) > 1:
        tracer.put_metadata(W3C_TRACE_IDS, ids)
