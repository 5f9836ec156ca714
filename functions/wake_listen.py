"""WebSocket `listen` (and any other message, `$default`): add names of a space to what the
connection is hinted about, answered on the connection (`listening`, or an `error`)."""

from __future__ import annotations

from typing import Any

from shared.observability import logger, metrics, tracer
from shared.runtime import runtime
from shared.wake import message_answer


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return message_answer(event["requestContext"]["connectionId"], event.get("body"), runtime().wake)
