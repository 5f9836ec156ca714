"""Pending jobs by the minute they have waited since, as the stream counts them
(`shared.store.tallies`, `shared.counts.waits_of`), read by the clock (`shared.backlog`),
and the clock's place in them: the deployment's (scope `keys.DEPLOYMENT`), and each name's
that its space lists under `metrics` (scope `keys.name_scope`).

A minute's count is the sum of its shards (`limits.WAIT_SHARDS` for the deployment's, one
for a name's: a name's ceiling is that of its other counts), kept in a partition a day; an
hour's item holds the sum of its minutes, so a backlog a week old is read as some 170
hours, not 10,000 minutes. The place (`BACKLOG#{scope}`) is the oldest minute that may
still count a job: the clock moves it past minutes left at zero, never nearer than
`shared.backlog.SETTLE_MS` to now, since a minute is still counted into until the stream
has seen every write made in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared import limits
from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo, Item


@dataclass(frozen=True)
class Place:
    since_ms: int
    """The oldest minute that may still count a job."""
    quiet_since_ms: int | None
    """When the backlog was last seen to be empty (None: it was not)."""
    version: int = 0


def shards(scope: str) -> int:
    return limits.WAIT_SHARDS if scope == keys.DEPLOYMENT else 1


class BacklogStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def place(self, scope: str) -> Place | None:
        row = self.db.get(keys.backlog_place(scope), consistent=False)
        if row is None:
            return None
        quiet = row.get("quietSinceMs")
        return Place(int(row["sinceMs"]), int(quiet) if quiet is not None else None, int(row["version"]))

    def move(self, scope: str, old: Place | None, new: Place) -> bool:
        """Write the place if nobody moved it since `old` was read; whether it was written
        (a tick that loses the race leaves the place to the one that won)."""
        item = {
            **keys.backlog_place(scope),
            "sinceMs": new.since_ms,
            "version": (old.version if old else 0) + 1,
        }
        if new.quiet_since_ms is not None:
            item["quietSinceMs"] = new.quiet_since_ms
        condition = "attribute_not_exists(pk)" if old is None else "version = :v"
        vals = {} if old is None else {":v": old.version}
        try:
            self.db.put(item, condition=condition, vals=vals or None)
        except ConditionFailed:
            return False
        return True

    def hours(self, scope: str, from_ms: int, to_ms: int) -> dict[int, int]:
        """Each hour's count from the hour of `from_ms` to that of `to_ms`, shards summed."""
        lo = from_ms // limits.HOUR_MS * limits.HOUR_MS
        return self._sum([keys.wait_hours(scope, s) for s in range(shards(scope))], lo, to_ms)

    def minutes(self, scope: str, from_ms: int, to_ms: int) -> dict[int, int]:
        """Each minute's count from `from_ms` to `to_ms`, shards summed: one day's (that of
        `from_ms`; a later `to_ms` stops at its end)."""
        day = from_ms // limits.DAY_MS * limits.DAY_MS
        to_ms = min(to_ms, day + limits.DAY_MS - 1)
        return self._sum([keys.wait_minutes(scope, s, day) for s in range(shards(scope))], from_ms, to_ms)

    def _sum(self, partitions: list[str], lo: int, hi: int) -> dict[int, int]:
        out: dict[int, int] = {}
        for pk in partitions:
            for row in self._query(pk, lo, hi):
                at = int(row["sk"])
                out[at] = out.get(at, 0) + int(row.get("n") or 0)
        return dict(sorted(out.items()))

    def _query(self, pk: str, lo: int, hi: int) -> list[Item]:
        rows: list[Item] = []
        start = None
        while True:
            page, start = self.db.query(
                "pk = :pk AND sk BETWEEN :lo AND :hi",
                vals={":pk": pk, ":lo": keys.minute_sort(lo), ":hi": keys.minute_sort(hi)},
                start=start,
            )
            rows += page
            if start is None:
                return rows
