"""The clock (EventBridge Scheduler on AWS, a thread in `emit dev`): what is due in the
books (`shared.sweeper`): deadlines, leases, and the timers (never-claimed checks, callback
retries handed to their sender `functions/callback_sender.py`, narrowing, healing, hints),
then the deployment's claimable backlog and oldest claimable age, published (`shared.backlog`).
A tick that arrives twice, or late, finds nothing to redo."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from shared.observability import logger, metrics, publish_name_point, tracer
from shared.runtime import runtime

STOP_BEFORE_END_MS = 10_000
"""Time a tick leaves before its function's timeout: a page of timers is done well within it."""


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    rt = runtime()
    # Each tick says how far apart ticks are; else the function's own setting does.
    # What is left when the function nears its timeout stays due for the next tick.
    report = rt.sweeper.tick(
        tick_ms=int(event.get("tickMs", rt.config.clock_tick_ms)),
        out_of_time=lambda: context.get_remaining_time_in_millis() < STOP_BEFORE_END_MS,
    )
    # Only what happened is published: a custom metric is billed for every hour it has a
    # point, so zeros a minute would cost $0.30 a month each at rest.
    counts = {"LeasesExpired": report.expired, "JobsNeverClaimed": report.unclaimed}
    counts |= {f"Callbacks{state.title().replace('_', '')}": n for state, n in report.callbacks.items()}
    for metric, count in counts.items():
        if count:
            metrics.add_metric(metric, MetricUnit.Count, count)
    backlog = rt.backlog.measure()
    if backlog.publish:
        metrics.add_metric("ClaimableBacklog", MetricUnit.Count, backlog.claimable)
        metrics.add_metric("OldestClaimableAge", MetricUnit.Seconds, backlog.oldest_age_s)
    points = rt.name_metrics.points()
    for point in points:
        publish_name_point(point)
    logger.debug("tick", extra={"action": "tick", "report": report.__dict__})
    return {
        "expired": report.expired,
        "unclaimed": report.unclaimed,
        "callbacks": report.callbacks,
        "backlog": {
            "claimable": backlog.claimable,
            "oldestAgeS": backlog.oldest_age_s,
            "published": backlog.publish,
        },
        "names": [
            {"space": p.space, "name": p.name, "events": p.events, "claimable": p.backlog.claimable}
            for p in points
        ],
    }
