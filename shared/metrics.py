"""A space's last hour, name by name, a point a minute: `GET /v1/spaces/{space}/metrics`.

From the stream's counts (`shared.store.tallies`), not from CloudWatch, so the dashboard
charts the same figures on AWS and under `emit dev`. A minute's events are what its
records counted; its pending and running jobs are worked back from today's gauges by the
minutes' deltas (the gauge at a minute's end is today's, less what every later minute
added).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from shared import limits
from shared.clock import Clock
from shared.errors import NotFound
from shared.store.port import Gauges, Minute, SpaceStorePort, TallyStorePort

WINDOW_MINUTES = 60
EVENTS = ("created", "claimed", "completed", "failed", "cancelled")
READ_THREADS = 16
"""Names' minutes read at once: a query each."""


@dataclass(frozen=True)
class Point:
    at_ms: int
    """The minute's start."""
    counts: dict[str, int]
    """The minute's events (`EVENTS`), and `pending` and `running` at its end."""


@dataclass(frozen=True)
class NameSeries:
    name: str
    points: list[Point]


def last_hour(
    clock: Clock, spaces: SpaceStorePort, tallies: TallyStorePort, space: str, names: list[str] | None = None
) -> tuple[int, list[NameSeries]]:
    """The first minute shown, and each counted name's points (of `names`, if given), by name."""
    state = spaces.space(space)
    if state is None:
        raise NotFound(f"space {space} does not exist")
    now = clock.now_ms()
    current = now // limits.MINUTE_MS * limits.MINUTE_MS
    first = current - (WINDOW_MINUTES - 1) * limits.MINUTE_MS
    gauges = tallies.names(space, state.names)
    wanted = sorted(n for n in gauges if names is None or n in names)
    with ThreadPoolExecutor(
        max(1, min(READ_THREADS, len(wanted))), thread_name_prefix="emit-metrics"
    ) as pool:
        read = list(pool.map(lambda n: tallies.minutes(space, n, first), wanted))
    return first, [
        NameSeries(name, series(first, gauges[name], minutes))
        for name, minutes in zip(wanted, read, strict=True)
    ]


def series(first_ms: int, now: Gauges, minutes: list[Minute]) -> list[Point]:
    """`WINDOW_MINUTES` points from `first_ms`, gauges worked back from `now`."""
    by_minute = {m.at_ms: m.counts for m in minutes}
    pending, running = now.pending, now.running
    points: list[Point] = []
    for i in reversed(range(WINDOW_MINUTES)):
        at = first_ms + i * limits.MINUTE_MS
        counts = by_minute.get(at, {})
        points.append(
            Point(
                at,
                {e: counts.get(e, 0) for e in EVENTS}
                | {"pending": max(0, pending), "running": max(0, running)},
            )
        )
        pending -= counts.get("dPending", 0)
        running -= counts.get("dRunning", 0)
    points.reverse()
    return points
