"""A hint put off (`shared.wake.LambdaLater`, invoked without waiting): sleep until its
time, then hint. Or a hint's posts, handed over by the stream (`shared.wake.LambdaSender`):
made here, apart from the stream every space shares. A held-back hint waits at most a
second; a job ready soon, at most `LATER_HORIZON_MS`."""

from __future__ import annotations

from typing import Any

from shared.observability import logger, metrics, tracer
from shared.runtime import runtime
from shared.wake import LATER_HORIZON_MS, sleep_until


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    rt = runtime()
    if "post" in event:  # a hint's posts, handed over by the stream (`LambdaSender`)
        rt.wake.post_all([str(c) for c in event["post"]], str(event["data"]).encode())
        return {"posted": len(event["post"])}
    sleep_until(rt.clock, int(event["atMs"]), LATER_HORIZON_MS / 1000)
    rt.wake.later_due(str(event["space"]), str(event["name"]), trailing=bool(event.get("trailing")))
    return {"hinted": True}
