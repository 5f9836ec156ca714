"""`emit dev --test-clock`: the real time plus an offset that only grows, moved by a test.

`POST /_dev/clock` with `{"advanceMs": N}` (and the admin token `emit dev` printed) moves
every reading of the service's clock N ms ahead at once: delays, backoffs, leases,
deadlines, schedules and retention are all decided against it (`shared.clock`), so a test
skips an hour's wait in a call. The answer comes once the clock handler has ticked at the
new time, so what came due by it (a lease ended, a deadline passed, a schedule's job made,
a timer) is done by then. Waits are still real: a long poll waits as long as it was asked
to. `GET /_dev/clock` reads the time. Without the flag neither exists.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections.abc import Callable
from typing import Any

MAX_ADVANCE_MS = 10 * 365 * 86_400_000
"""Ten years at a call: far past any of the service's own limits."""


class TestClock:
    """The system's time plus `offset_ms`; `advance` adds to the offset, never takes away."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self) -> None:
        self.offset_ms = 0
        self._lock = threading.Lock()
        self.after_advance: Callable[[], object] | None = None
        """Called once the time has moved (`emit dev`: a tick of the clock, waited for)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def advance(self, ms: int) -> int:
        """Move it `ms` ahead (0 to ten years); the time now, after."""
        if isinstance(ms, bool) or not isinstance(ms, int) or not 0 <= ms <= MAX_ADVANCE_MS:
            raise ValueError(f"advanceMs: a whole number of ms from 0 to {MAX_ADVANCE_MS}")
        with self._lock:
            self.offset_ms += ms
        if self.after_advance is not None:
            self.after_advance()
        return self.now_ms()

    def reading(self) -> dict[str, int]:
        return {"nowMs": self.now_ms(), "offsetMs": self.offset_ms}


PATH = "/_dev/clock"


def answer(
    clock: TestClock, method: str, authorization: str | None, body: bytes, token: str
) -> tuple[int, Any]:
    """The status and JSON answer of a request to `PATH`: the admin token, then GET reads
    the time, POST `{"advanceMs": N}` moves it and reads it."""
    if not hmac.compare_digest((authorization or "").encode(), f"Bearer {token}".encode()):
        return 401, {"error": {"code": "UNAUTHENTICATED", "message": "the admin token emit dev printed"}}
    if method == "GET":
        return 200, clock.reading()
    if method != "POST":
        return 405, {"error": {"code": "INVALID_ARGUMENT", "message": "GET or POST"}}
    try:
        request = json.loads(body or b"{}")
        if not isinstance(request, dict) or "advanceMs" not in request:
            raise ValueError('the body: a JSON object {"advanceMs": N}')
        clock.advance(request["advanceMs"])
    except ValueError as exc:  # JSON's errors among them
        return 400, {"error": {"code": "INVALID_ARGUMENT", "message": str(exc)}}
    return 200, clock.reading()
