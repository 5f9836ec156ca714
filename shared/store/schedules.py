"""Schedules' items: each schedule in a partition of its own (`keys.schedule`), listed by
id in its space's listing (`keys.schedules`).

The schedule item holds the definition and where its fires stand (`nextAtMs`, the last
run), and every write of it is conditional on the version it read: a fire and an edit
that race cannot both apply, so a fire time is advanced past once. The job it makes is
kept as JSON text, zlib-compressed when that is smaller, so the item a fire rewrites
stays at a write unit for the usual small job.

A schedule is listed before its item is first written and unlisted after its item is
deleted: a listing entry without its item (an edit killed half way) is passed over by
`page`, never answered.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, replace
from typing import Any, Literal

from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo, Item

Overlap = Literal["ALLOW", "SKIP"]

INLINE_JOB = 512
"""A job template up to this many bytes of JSON is kept as text; larger, compressed."""


@dataclass(frozen=True)
class LastRun:
    at_ms: int
    job_id: str


@dataclass(frozen=True)
class Schedule:
    """One schedule, as stored: its definition, and where its fires stand."""

    id: str
    space: str
    cron: str
    timezone: str
    job: dict[str, Any]
    """The create body of the job each fire makes, as sent (`shared.schema.ScheduleJob`)."""
    paused: bool
    overlap: Overlap
    created_at_ms: int
    updated_at_ms: int
    next_at_ms: int | None
    """The next fire time not made yet; None: paused, or the expression names no more."""
    last_run: LastRun | None = None
    version: int = 0
    """Bumped by every write; each write is conditional on the version it read."""


class ScheduleConflict(Exception):
    """The schedule changed since it was read (or was made, or deleted): `current` is it now."""

    def __init__(self, current: Schedule | None) -> None:
        super().__init__("the schedule changed meanwhile")
        self.current = current


class ScheduleStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def get(self, space: str, schedule_id: str) -> Schedule | None:
        item = self.db.get(keys.schedule(space, schedule_id), consistent=True)
        return _from_item(space, item) if item is not None else None

    def write(self, schedule: Schedule, *, read: Schedule | None) -> Schedule:
        """Store `schedule` (its version one past `read`'s) if the stored one is still
        `read` (None: there is none); the schedule written. Raises ScheduleConflict."""
        written = replace(schedule, version=(read.version if read else 0) + 1)
        if read is None:
            condition, vals = "attribute_not_exists(pk)", None
        else:
            condition, vals = "version = :v", {":v": read.version}
        try:
            self.db.put(_to_item(written), condition=condition, vals=vals)
        except ConditionFailed as failed:
            raise ScheduleConflict(_from_item(schedule.space, failed.item) if failed.item else None) from None
        return written

    def enlist(self, space: str, schedule_id: str) -> None:
        """List the schedule in its space (again is harmless): before its item is first written."""
        self.db.put({"pk": keys.schedules(space), "sk": schedule_id})

    def unlist(self, space: str, schedule_id: str) -> None:
        """Take the schedule off its space's listing (gone already is fine)."""
        self.db.delete({"pk": keys.schedules(space), "sk": schedule_id})

    def delete(self, space: str, read: Schedule) -> None:
        """Delete the schedule if it is still `read`, then its listing entry. Raises
        ScheduleConflict."""
        try:
            self.db.delete(keys.schedule(space, read.id), condition="version = :v", vals={":v": read.version})
        except ConditionFailed as failed:
            raise ScheduleConflict(_from_item(space, failed.item) if failed.item else None) from None
        self.unlist(space, read.id)

    def page(self, space: str, after: str | None, limit: int) -> tuple[list[Schedule], str | None]:
        """Up to `limit` schedules in id order after `after`, and the id to go on after (None:
        no more). One query of the listing and one batch read of the schedules a page."""
        condition, vals = "pk = :pk", {":pk": keys.schedules(space)}
        if after is not None:
            condition, vals = "pk = :pk AND sk > :after", {**vals, ":after": after}
        ids, start = self.db.query(condition, vals=vals, limit=limit, consistent=True)
        found = {
            item["id"]: _from_item(space, item)
            for item in self.db.batch_get([keys.schedule(space, row["sk"]) for row in ids])
        }
        shown = [found[row["sk"]] for row in ids if row["sk"] in found]
        return shown, (str(start["sk"]) if start is not None else None)


def _to_item(s: Schedule) -> Item:
    raw = json.dumps(s.job, separators=(",", ":"), ensure_ascii=False).encode()
    item: Item = keys.schedule(s.space, s.id) | {
        "id": s.id,
        "cron": s.cron,
        "timezone": s.timezone,
        "paused": s.paused,
        "overlap": s.overlap,
        "createdAtMs": s.created_at_ms,
        "updatedAtMs": s.updated_at_ms,
        "version": s.version,
    }
    if len(raw) <= INLINE_JOB:
        item["job"] = raw.decode()
    else:
        item["jobZ"] = zlib.compress(raw, 6)
    if s.next_at_ms is not None:
        item["nextAtMs"] = s.next_at_ms
    if s.last_run is not None:
        item["lastRun"] = {"atMs": s.last_run.at_ms, "jobId": s.last_run.job_id}
    return item


def _from_item(space: str, item: Item) -> Schedule:
    raw = item["job"].encode() if "job" in item else zlib.decompress(item["jobZ"])
    last = item.get("lastRun")
    return Schedule(
        id=item["id"],
        space=space,
        cron=item["cron"],
        timezone=item["timezone"],
        job=json.loads(raw),
        paused=bool(item["paused"]),
        overlap=item["overlap"],
        created_at_ms=int(item["createdAtMs"]),
        updated_at_ms=int(item["updatedAtMs"]),
        next_at_ms=int(item["nextAtMs"]) if "nextAtMs" in item else None,
        last_run=LastRun(int(last["atMs"]), str(last["jobId"])) if last else None,
        version=int(item["version"]),
    )
