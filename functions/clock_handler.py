"""The clock (EventBridge Scheduler on AWS, a thread in `emit dev`): leases, never-claimed
jobs and callback retries. A tick that arrives twice, or late, finds nothing to redo."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from shared.observability import logger, metrics, tracer
from shared.runtime import runtime

UNCLAIMED_EVERY_MS = int(os.environ.get("EMIT_UNCLAIMED_EVERY_MS", "600000"))
"""Never-claimed jobs are looked for less often: their windows are days long."""


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    rt = runtime()
    now = rt.clock.now_ms()
    tick_ms = int(event.get("tickMs", 60_000))
    # Stateless cadence: the tick that crosses a multiple of the interval does it.
    unclaimed_too = now // UNCLAIMED_EVERY_MS != (now - tick_ms) // UNCLAIMED_EVERY_MS
    report = rt.sweeper.tick(unclaimed_too=unclaimed_too)
    metrics.add_metric("LeasesExpired", MetricUnit.Count, report.expired)
    metrics.add_metric("JobsNeverClaimed", MetricUnit.Count, report.unclaimed)
    for state, count in report.callbacks.items():
        metrics.add_metric(f"Callbacks{state.title().replace('_', '')}", MetricUnit.Count, count)
    logger.debug("tick", extra={"action": "tick", "report": report.__dict__})
    return {"expired": report.expired, "unclaimed": report.unclaimed, "callbacks": report.callbacks}
