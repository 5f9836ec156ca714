"""WebSocket `$connect` (wake): let a worker in with its token (`Authorization: Bearer`, or
`Sec-WebSocket-Protocol: emit.v1, bearer.<token>`), and record its connection."""

from __future__ import annotations

from typing import Any

from shared.observability import logger, metrics, tracer
from shared.runtime import runtime
from shared.wake import connect_answer


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return connect_answer(event["requestContext"]["connectionId"], event.get("headers") or {}, runtime().wake)
