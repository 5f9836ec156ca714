"""Powertools logging, metrics and tracing, configured once for every function."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger(service="emit")
metrics = Metrics(namespace="Emit", service="emit")
tracer = Tracer(service="emit")
