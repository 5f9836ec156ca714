"""WebSocket `$disconnect` (wake): remove the connection's records (TTL removes any a lost
`$disconnect` leaves)."""

from __future__ import annotations

from typing import Any

from shared.observability import logger, metrics, tracer
from shared.runtime import runtime


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    runtime().wake.disconnect(event["requestContext"]["connectionId"])
    return {"statusCode": 200}
