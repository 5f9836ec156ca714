"""Time at the SDK's edge: `timedelta` and aware `datetime` in Python, Unix ms on the wire.

Every Python signature of the SDK takes a duration as a `Duration` (a `timedelta`, or a
plain number of seconds, as `time.sleep` and httpx take) and an instant as a timezone-aware
`datetime`; the HTTP API speaks milliseconds (`delayMs`, `runAtMs`). The conversion happens
here and nowhere else, so a unit mistake has one place to live, and a naive `datetime`
(local time or UTC? nobody can tell) is refused with the argument's name rather than
silently read as the machine's local time.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

Duration: TypeAlias = timedelta | float | int
"""A length of time: a `timedelta`, or a number of seconds."""


def seconds(value: Duration, what: str) -> float:
    """`value` in seconds; `what` names the argument in the error."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what}: give a timedelta or a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{what}: must be a finite number of seconds, not {value}")
    return float(value)


def duration_ms(value: Duration, what: str) -> int:
    """`value` in whole milliseconds, as the API takes durations (`timeoutMs`)."""
    return round(seconds(value, what) * 1000)


def optional_ms(value: Duration | None, what: str) -> int | None:
    return None if value is None else duration_ms(value, what)


def as_timedelta(value: Duration, what: str) -> timedelta:
    """`value` as a `timedelta` (what the SDK's models hold)."""
    return value if isinstance(value, timedelta) else timedelta(seconds=seconds(value, what))


def optional_timedelta(value: Duration | None, what: str) -> timedelta | None:
    return None if value is None else as_timedelta(value, what)


def instant_ms(value: datetime, what: str) -> int:
    """An aware `datetime` as Unix milliseconds; a naive one is refused."""
    if not isinstance(value, datetime):
        raise TypeError(f"{what}: give a timezone-aware datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{what}: give a timezone-aware datetime (e.g. datetime.now(UTC) + timedelta(hours=1)), "
            f"not a naive one: emit cannot tell which zone {value.isoformat()} is in"
        )
    return round(value.timestamp() * 1000)


def optional_instant_ms(value: datetime | None, what: str) -> int | None:
    return None if value is None else instant_ms(value, what)


def utc(ms: int) -> datetime:
    """Unix milliseconds as a timezone-aware UTC datetime: aware, so that comparing it with
    a local time or putting it in another zone cannot silently read it as local."""
    return datetime.fromtimestamp(ms / 1000, UTC)


def optional_utc(ms: int | None) -> datetime | None:
    return None if ms is None else utc(ms)


def from_ms(ms: int) -> timedelta:
    """API milliseconds as a `timedelta`."""
    return timedelta(milliseconds=ms)


def optional_from_ms(ms: int | None) -> timedelta | None:
    return None if ms is None else from_ms(ms)
