"""Powertools logging, metrics and tracing, configured once for every function."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
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


logger = Logger(service="emit")
metrics = QuietMetrics(namespace="Emit", service="emit")
tracer = Tracer(service="emit")
