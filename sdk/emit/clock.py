"""Time, injected: every wait the SDK makes goes through a `Clock`.

The worker's renewals and report rounds, its backoffs and grace period, `jobs.follow`'s
polling and the client's waits for room all read the time and wait through the client's
clock. The default is the real one; a test gives one it moves by hand, so what depends
on time passing can be checked without waiting for it (as the service's tests do with
its own injected clock).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds, for measuring intervals (any origin; never goes back)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait, blocking the calling thread."""
        ...

    async def wait(self, seconds: float) -> None:
        """Wait on the running event loop (cancellable, as `asyncio.sleep` is)."""
        ...


class SystemClock:
    """The real clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def wait(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM = SystemClock()
