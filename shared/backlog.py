"""The deployment's claimable backlog and the oldest claimable job's age, for the clock to
publish (`functions/clock_handler.py`): the jobs pending whose time has come, whatever holds
them (no worker asking, a limit, a pause, a key's turn), and how long the oldest of them
has waited, from the stream's waiting counts (`shared.store.backlog`).

A tick's reads are a query a shard whatever the number of spaces and names (the minutes
since the clock's place, a day's partition); a backlog older than today adds the days
between by their hours and today's minutes.
Only a backlog is published, and zeros for a while after one (so a scaling policy sees it
go): a custom metric is billed for each hour it has a point, and a stack at rest has none.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared import limits
from shared.clock import Clock
from shared.store.port import DEPLOYMENT, BacklogPlace, BacklogStorePort

SETTLE_MS = 10 * limits.MINUTE_MS
"""How long after a minute the stream may still count a job into it: the place never
passes a minute younger than this."""
ZEROS_MS = 15 * limits.MINUTE_MS
"""How long zeros are published after the backlog empties (target tracking's scale-in
reads 15 minutes)."""


@dataclass(frozen=True)
class Backlog:
    claimable: int
    oldest_since_ms: int | None
    """The minute the oldest claimable job has waited since (None: none waits)."""
    now_ms: int
    publish: bool
    """Whether the clock publishes it: a backlog, or one emptied in the last `ZEROS_MS`."""

    @property
    def oldest_age_s(self) -> float:
        if self.oldest_since_ms is None:
            return 0.0
        return max(0, self.now_ms - self.oldest_since_ms) / 1000


def _minute(ms: int) -> int:
    return ms // limits.MINUTE_MS * limits.MINUTE_MS


def _day(ms: int) -> int:
    return ms // limits.DAY_MS * limits.DAY_MS


class BacklogWatch:
    def __init__(self, store: BacklogStorePort, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def measure(self, scope: str = DEPLOYMENT, *, start_ms: int | None = None) -> Backlog:
        """The backlog of `scope` now (the deployment's, or a watched name's, counted from
        `start_ms`, when it was listed), moving the clock's place past the minutes left
        empty. Minutes before the place are never read: a job that waited since before
        counting began is not counted in, nor out."""
        now = self.clock.now_ms()
        place = self.store.place(scope)
        settled = _minute(now - SETTLE_MS)
        since = place.since_ms if place is not None else settled
        if start_ms is not None:
            since = max(since, _minute(start_ms))
        today, first_day = _day(now), _day(since)
        # A count below zero is a job counted out that was never counted in (a record lost
        # to the dead-letter queue): it hides nothing.
        first = _waiting(self.store.minutes(scope, since, now), since)  # the place's day
        middle: dict[int, int] = {}
        last: dict[int, int] = {}
        if first_day < today:
            if first_day + limits.DAY_MS < today:  # whole days between, by their hours
                hours = self.store.hours(scope, first_day + limits.DAY_MS, today - 1)
                middle = {h: n for h, n in hours.items() if n > 0}
            last = _waiting(self.store.minutes(scope, today, now), since)
        claimable = sum(first.values()) + sum(middle.values()) + sum(last.values())
        oldest: int | None = None
        if first:
            oldest = min(first)
        elif middle:
            hour = min(middle)
            older = _waiting(self.store.minutes(scope, hour, hour + limits.HOUR_MS - 1), hour)
            oldest = min(older) if older else hour
        elif last:
            oldest = min(last)
        # When it was last seen empty: never measured counts as empty for ever (no zeros
        # for a stack that never had a backlog).
        quiet: int | None = None
        if claimable == 0:
            quiet = (
                0 if place is None else (place.quiet_since_ms if place.quiet_since_ms is not None else now)
            )
        new_since = max(since, min(oldest if oldest is not None else settled, settled))
        moved = BacklogPlace(new_since, quiet, place.version if place is not None else 0)
        if _worth_moving(place, moved):
            self.store.move(scope, place, moved)
        publish = claimable > 0 or (quiet is not None and now - quiet < ZEROS_MS)
        return Backlog(claimable, oldest, now, publish)


def _worth_moving(place: BacklogPlace | None, moved: BacklogPlace) -> bool:
    """Whether the place is written: new, its quiet changed, or an hour behind (minutes since
    it are read either way, a write a tick is saved: the place trails by up to an hour)."""
    if place is None or place.quiet_since_ms != moved.quiet_since_ms:
        return True
    return moved.since_ms - place.since_ms >= limits.HOUR_MS


def _waiting(minutes: dict[int, int], since: int) -> dict[int, int]:
    return {m: n for m, n in minutes.items() if m >= since and n > 0}
