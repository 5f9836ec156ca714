"""The metrics of the names a space lists under `metrics`, for the clock to publish
(`functions/clock_handler.py`): per name, the last whole minute's created, claimed,
completed and failed (from the stream's minutes, `shared.counts`), and its claimable
backlog and oldest claimable age (`shared.backlog`, from the name's own waiting counts,
which the stream keeps while it is listed).

A tick reads the list of spaces that list names (`shared.store.watched`) and, for each
listed name, a few items: the work grows with the names listed, each of which is billed
as six custom metrics, and not with the spaces and names that exist.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared import limits
from shared.backlog import Backlog, BacklogWatch
from shared.clock import Clock
from shared.spaces import SpaceSettings
from shared.store.port import TallyStorePort, WatchedStorePort, name_scope

EVENTS = {
    "created": "JobsCreated",
    "claimed": "JobsClaimed",
    "completed": "JobsCompleted",
    "failed": "JobsFailed",
}
"""A minute's counts (`shared.store.tallies.Tally.minute`) and the metric each is published as."""


@dataclass(frozen=True)
class NamePoint:
    space: str
    name: str
    events: dict[str, int]
    """The last whole minute's counts by metric name (empty: published by another tick, or
    nothing happened: only what happened is published)."""
    backlog: Backlog


class NameMetrics:
    def __init__(
        self,
        *,
        clock: Clock,
        watched: WatchedStorePort,
        settings: SpaceSettings,
        tallies: TallyStorePort,
        backlog: BacklogWatch,
    ) -> None:
        self.clock = clock
        self.watched = watched
        self.settings = settings
        self.tallies = tallies
        self.backlog = backlog

    def points(self) -> list[NamePoint]:
        """Each listed name's point now. A space left in the list with nothing listed (its
        settings list no name now) is taken off it."""
        now = self.clock.now_ms()
        last_minute = now // limits.MINUTE_MS * limits.MINUTE_MS - limits.MINUTE_MS
        out: list[NamePoint] = []
        for space in self.watched.spaces():
            listed = self.settings.get(space).metrics
            if not listed:
                self.watched.unwatch(space)
                continue
            mine = self.watched.take_minute(space, last_minute)
            for name, since in sorted(listed.items()):
                events: dict[str, int] = {}
                if mine:
                    for minute in self.tallies.minutes(space, name, last_minute):
                        if minute.at_ms == last_minute:
                            events = {EVENTS[k]: n for k, n in minute.counts.items() if k in EVENTS and n}
                backlog = self.backlog.measure(name_scope(space, name), start_ms=since)
                out.append(NamePoint(space, name, events, backlog))
        return out
