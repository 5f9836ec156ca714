"""Time, injected.

Nothing in the domain reads the system time directly: leases, delays, backoff and
retention are all decided against a `Clock`, so tests move time by hand and never sleep.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

K = TypeVar("K")
V = TypeVar("V")


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


class Recent(Generic[K, V]):
    """Values kept per key for a short while by an injected clock: a warm function reads a
    space's settings or policies once per window rather than once per request. The window
    is asked on each read, so its owner's setting (and a test's change to it) holds."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._kept: dict[K, tuple[int, V]] = {}

    def get(self, key: K, window_ms: int, read: Callable[[], V]) -> V:
        """The value kept for `key` if read less than `window_ms` ago, else `read()` kept."""
        now = self.clock.now_ms()
        kept = self._kept.get(key)
        if kept and now - kept[0] < window_ms:
            return kept[1]
        value = read()
        self._kept[key] = (now, value)
        return value

    def forget(self, key: K) -> None:
        """Drop `key`: the next read goes to the store (a write was just made here)."""
        self._kept.pop(key, None)
