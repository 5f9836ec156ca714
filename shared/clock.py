"""Time, injected.

Nothing in the domain reads the system time directly: leases, delays, backoff and
retention are all decided against a `Clock`, so tests move time by hand and never sleep.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Unix time in milliseconds."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait; a long poll waits through this so a test clock can skip ahead."""
        ...


class SystemClock:
    """The real clock, used by every deployed function and by `emit dev`."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
