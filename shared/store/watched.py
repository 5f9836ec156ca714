"""The spaces that list names under `metrics`, where the clock finds them without reading
every space (`shared.name_metrics`): an entry each in one partition (`METRICS`), written
before the settings that list a name and removed after those that list none, so the list
may name a space with nothing listed (the settings decide) but never miss one.

Each entry keeps the last minute whose counts were published for its space: the clock
takes a minute by a conditional write before publishing it, so a tick run twice publishes
each minute's counts once (a tick that dies after taking one loses that minute's points,
rather than doubling them).
"""

from __future__ import annotations

from shared.store.dynamo import ConditionFailed, Dynamo

WATCHED = "METRICS"


class WatchedStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def watch(self, space: str) -> None:
        self.db.update(
            {"pk": WATCHED, "sk": space}, "SET #k = :k", names={"#k": "kind"}, vals={":k": "watched"}
        )

    def unwatch(self, space: str) -> None:
        self.db.delete({"pk": WATCHED, "sk": space})

    def spaces(self) -> list[str]:
        found: list[str] = []
        start = None
        while True:
            rows, start = self.db.query("pk = :pk", vals={":pk": WATCHED}, start=start)
            found += [str(r["sk"]) for r in rows]
            if start is None:
                return found

    def take_minute(self, space: str, minute_ms: int) -> bool:
        """Whether this tick publishes the space's counts of `minute_ms` (no tick took it)."""
        try:
            self.db.update(
                {"pk": WATCHED, "sk": space},
                "SET #m = :m",
                condition="attribute_exists(pk) AND (attribute_not_exists(#m) OR #m < :m)",
                names={"#m": "publishedMs"},
                vals={":m": minute_ms},
            )
        except ConditionFailed:
            return False
        return True
