"""Job ids: ULIDs that sort by creation, even within one millisecond."""

from __future__ import annotations

import threading

from ulid import ULID


class IdGenerator:
    """Monotonic ULIDs: a batch created in one millisecond keeps its order.

    Within a millisecond the next id is the previous one plus one, as the ULID
    spec's monotonic mode says, so listing newest-first matches the order sent.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last = 0

    def new(self, now_ms: int) -> str:
        with self._lock:
            if now_ms <= self._last_ms:
                self._last += 1
            else:
                self._last_ms = now_ms
                self._last = int(ULID.from_timestamp(now_ms / 1000))
            return str(ULID.from_int(self._last))


def is_ulid(value: str) -> bool:
    if len(value) != 26:
        return False
    try:
        ULID.from_str(value)
    except ValueError:
        return False
    return True
