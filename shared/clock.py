"""Time, injected.

Nothing in the domain reads the system time directly: leases, delays, backoff and
retention are all decided against a `Clock`, so tests move time by hand and never sleep.
"""

from __future__ import annotations

import threading
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


class ManualClock:
    """A clock moved by hand, for tests and benchmarks: `sleep` moves it instead of waiting."""

    def __init__(self, start_ms: int = 1_790_000_000_000) -> None:
        self._ms = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        return self._ms

    def sleep(self, seconds: float) -> None:
        self.advance(int(seconds * 1000))

    def advance(self, ms: int) -> None:
        with self._lock:
            self._ms += ms
