"""Schedules as values: a cron expression in a timezone, the fire times it makes, and the
job it makes at each.

Cron is cronsim's (five fields, names, lists, ranges and steps, day of month or day of
week when both are set, as Vixie cron); the `@hourly`-style macros are spelled out
here. Time is local to the schedule's timezone: the expression is walked in wall-clock
time and each time it names is placed in the timezone, so a wall time that daylight
saving skips names no instant and does not fire, and a wall time it repeats fires once,
at its first instant.

A schedule's `next_at_ms` is the one fire time not made yet: the clock makes it once it
has come (`shared.jobs.schedules.fire`), then files the schedule again at the next.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import tzdata  # noqa: F401 - zoneinfo's timezones where the system has none (Lambda's need not)
from cronsim import CronSim, CronSimError

from shared.store.port import Schedule

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

SHOWN_RUNS = 5
"""Fire times a schedule's answer lists (`nextRunsAtMs`)."""

SEARCH_YEARS = 5
"""How far past a time the next fire time is looked for: 29 February comes every four
years; an expression whose times come less often than this is refused."""


class CronError(ValueError):
    """An expression or a timezone that names no schedule; the message says why."""


@lru_cache(maxsize=1)
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def zone(name: str) -> ZoneInfo:
    """The IANA timezone `name`; CronError if there is none by that name."""
    if name != "UTC" and name not in _zones():
        raise CronError(f"{name!r} is not an IANA timezone (such as Europe/Paris)")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise CronError(f"{name!r} is not an IANA timezone (such as Europe/Paris)") from error


def expand(cron: str) -> str:
    """The five fields `cron` stands for; CronError unless it is five fields or a macro."""
    text = " ".join(cron.split())
    if text.startswith("@"):
        if text.lower() not in MACROS:
            raise CronError(f"{cron!r}: the macros are {', '.join(MACROS)}")
        return MACROS[text.lower()]
    if len(text.split(" ")) != 5:
        raise CronError(f"{cron!r}: five fields (minute hour day-of-month month day-of-week) or a macro")
    return text


def check(cron: str, timezone: str, now_ms: int) -> None:
    """CronError unless `cron` in `timezone` is a valid expression that fires within
    `SEARCH_YEARS` of `now_ms`."""
    if not fire_times(cron, timezone, now_ms, 1):
        raise CronError(f"{cron!r} names no time in the next {SEARCH_YEARS} years")


def fire_times(cron: str, timezone: str, after_ms: int, count: int) -> list[int]:
    """The first `count` fire times strictly after `after_ms` (fewer when the expression
    names none within `SEARCH_YEARS`)."""
    out: list[int] = []
    for at in _walk(expand(cron), zone(timezone), after_ms):
        out.append(at)
        if len(out) == count:
            break
    return out


def next_fire(cron: str, timezone: str, after_ms: int) -> int | None:
    """The first fire time strictly after `after_ms`; None: none within `SEARCH_YEARS`."""
    times = fire_times(cron, timezone, after_ms, 1)
    return times[0] if times else None


def _walk(fields: str, tz: ZoneInfo, after_ms: int) -> Iterator[int]:
    """Fire times after `after_ms`, in order: the expression walked in wall-clock time
    from an hour before `after_ms`'s wall time (a wall time repeated by daylight saving
    may lie behind it), each wall time placed at its first instant in `tz`, skipped
    where `tz` has no such wall time (the hour daylight saving skips)."""
    after = datetime.fromtimestamp(after_ms / 1000, UTC)
    local = after.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0)
    start = local - timedelta(hours=1, minutes=1)
    limit = local + timedelta(days=366 * SEARCH_YEARS)
    try:
        walk = CronSim(fields, start)
    except CronSimError as error:
        raise CronError(f"{fields!r}: {str(error).lower()}") from error
    last = after_ms
    for wall in walk:
        if wall > limit:
            return
        placed = wall.replace(tzinfo=tz, fold=0)
        if placed.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != wall:
            continue  # skipped by daylight saving: no such time here
        at = int(placed.timestamp() * 1000)
        if at > last:
            last = at
            limit = wall + timedelta(days=366 * SEARCH_YEARS)
            yield at


def next_runs(schedule: Schedule, count: int = SHOWN_RUNS) -> list[int]:
    """The schedule's next `count` fire times, from the next one not made yet (none while
    it is paused)."""
    if schedule.paused or schedule.next_at_ms is None:
        return []
    later = fire_times(schedule.cron, schedule.timezone, schedule.next_at_ms, count - 1)
    return [schedule.next_at_ms, *later]
