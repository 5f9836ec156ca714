"""A hint put off (`shared.wake.LambdaLater`, invoked without waiting): sleep until its
time, then hint. Or a hint's posts, handed over by the stream (`shared.wake.LambdaSender`):
made here, apart from the stream every space shares. A held-back hint waits at most a
second; a job ready soon, at most `LATER_HORIZON_MS`."""

from __future__ import annotations

from typing import Any

from shared.observability import logger, metrics, tracer
from shared.runtime import Runtime, runtime
from shared.wake import LATER_HORIZON_MS, HeldLater, sleep_until

MOST_HELD_ROUNDS = 4
"""Rounds of held-back hints an invocation sends (one is the rule: see `send_held`)."""


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
    send_held(rt)
    return {"hinted": True}


def send_held(rt: Runtime) -> None:
    """Hints this invocation held back (another process hinted the name within its second)
    go out here when that second ends: this function puts nothing off to another (it has no
    wake_later of its own), so what it holds would otherwise stay in a queue nobody empties.
    A hint let out here is not held back again, so this ends within about a second."""
    held = rt.wake.later
    if not isinstance(held, HeldLater):
        return
    for _ in range(MOST_HELD_ROUNDS):
        at = held.next_at()
        if at is None:
            return
        sleep_until(rt.clock, at, LATER_HORIZON_MS / 1000)
        for space, name, trailing in held.due(rt.clock.now_ms()):
            rt.wake.later_due(space, name, trailing=trailing)
