"""The clock (EventBridge Scheduler on AWS, a thread in `emit dev`): leases, never-claimed
jobs and callback retries (handed to their sender, `functions/callback_sender.py`). A
tick that arrives twice, or late, finds nothing to redo."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from shared.observability import logger, metrics, tracer
from shared.runtime import runtime


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    rt = runtime()
    # Each tick says how far apart ticks are; else the function's own setting does.
    report = rt.sweeper.tick(tick_ms=int(event.get("tickMs", rt.config.clock_tick_ms)))
    # Only what happened is published: a custom metric is billed for every hour it has a
    # point, so zeros a minute would cost $0.30 a month each at rest.
    counts = {"LeasesExpired": report.expired, "JobsNeverClaimed": report.unclaimed}
    counts |= {f"Callbacks{state.title().replace('_', '')}": n for state, n in report.callbacks.items()}
    for metric, count in counts.items():
        if count:
            metrics.add_metric(metric, MetricUnit.Count, count)
    logger.debug("tick", extra={"action": "tick", "report": report.__dict__})
    return {"expired": report.expired, "unclaimed": report.unclaimed, "callbacks": report.callbacks}
