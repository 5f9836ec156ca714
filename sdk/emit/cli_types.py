"""What the `emit` command's flags take, as argparse types: durations with a unit (`10s`,
`5m`, `1h30m`, `500ms`), instants as ISO 8601 with a timezone (or `+10m` from now), limits
and rates.

Each raises `argparse.ArgumentTypeError`, so argparse's message names the flag
(`argument --delay: '10' has no unit: ...`) and the command exits 2.
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

from emit.names import Rate

_UNITS = {
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION = re.compile(rf"(?:{_PART.pattern})+")
DURATION_HELP = "a duration with a unit: 500ms, 10s, 5m, 2h, 1d, 1h30m"


def duration(text: str) -> timedelta:
    """`10s`, `5m`, `2h`, `1d`, `500ms`, or parts of them together (`1h30m`); `0` is zero."""
    compact = text.strip().lower().replace(" ", "")
    if compact == "0":
        return timedelta(0)
    if not _DURATION.fullmatch(compact):
        if re.fullmatch(r"\d+(?:\.\d+)?", compact):
            raise argparse.ArgumentTypeError(f"{text!r} has no unit: give e.g. {text}s or {text}ms")
        raise argparse.ArgumentTypeError(f"{text!r} is not {DURATION_HELP}")
    return sum(
        (float(number) * _UNITS[unit] for number, unit in _PART.findall(compact)),
        start=timedelta(0),
    )


def duration_or_none(text: str) -> timedelta | None:
    """A duration, or `none` (no value: the space's default, no limit)."""
    return None if text.strip().lower() == "none" else duration(text)


def instant(text: str, *, now: datetime | None = None) -> datetime:
    """ISO 8601 with a timezone (`2026-12-02T17:00:00+01:00`, `...Z`), or `+DURATION` from now."""
    stripped = text.strip()
    if stripped.startswith("+"):
        return (now or datetime.now(UTC)) + duration(stripped[1:])
    try:
        parsed = datetime.fromisoformat(stripped)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give ISO 8601 with a timezone "
            "(2026-12-02T17:00:00+01:00, or Z for UTC), or +DURATION from now (+10m)"
        ) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no timezone: add one (Z for UTC, or +01:00), so it cannot be misread"
        )
    return parsed


def limit(text: str) -> int | None:
    """A number, or `none` for no limit."""
    if text.strip().lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or none") from None


def rate(text: str) -> Rate | None:
    """TOKENS/DURATION (`10/1s`, `100/1m`), or `none` for no limit."""
    if text.strip().lower() == "none":
        return None
    tokens, sep, interval = text.partition("/")
    try:
        if not sep:
            raise ValueError(text)
        return Rate(int(tokens), duration(interval))
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"{text!r} is not TOKENS/DURATION (10/1s, 100/1m) or none") from None
