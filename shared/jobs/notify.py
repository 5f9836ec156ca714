"""Failure and settled notifications: a job that ends sends a notice as a new job.

A space's `onFailure` and `onSettled` name a job name (the destination); when a job of
the space ends in a status the destination covers, the stream creates one job of that
name with the notice as its payload. Exactly once per ending and destination: the new
job's id is made from the ending (`notice_id`: the same record always makes the same id),
and its item is put on the condition that no item has that key, so a record fed twice,
out of order, or replayed after a crash between writes makes nothing more (the repeat's
put is refused and answers that id). No marker item and no transaction: one put, the
price of any job (a transaction only where the job must be written with a counter or a
side item, and then the job item's own condition decides).

The notice job itself is what a replay finds, so it must outlive every replay of the
ending's record: the stream retries a record for at most an hour
(`infra.constants.STREAM_MAX_RECORD_AGE_S`). A space whose retention is shorter than
that could see a late replay make a notice again if the first was made, run and removed
by TTL within it.

A destination covers the jobs that end once it is set (`sinceMs`, kept across changes
of the destination, so a job that ended before the setting never sends a notice), and
no job of a destination's name sends any notice (a notice about a notice would never
end). A space with neither setting costs no write at all, and a read of its settings
item at most once per stream batch (`Notifier`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from ulid import ULID

from shared import limits
from shared.job import Job, JobStatus
from shared.jobs.context import Context
from shared.jobs.create import create_once
from shared.schema import NewJob, dump_json, nesting_within
from shared.settings import Destination, Kind
from shared.store.port import Inserted, Snapshot


def notice_id(space: str, job_id: str, kind: Kind, finished_ms: int) -> str:
    """The id of the notice one ending sends to one destination kind, the same on every
    replay: a ULID whose time is the ending's (so it lists beside the jobs made then) and
    whose 80 random bits are a hash of (space, ended job, kind)."""
    digest = hashlib.blake2b(f"{space}\0{job_id}\0{kind}".encode(), digest_size=10).digest()
    return str(ULID.from_int((finished_ms << 80) | int.from_bytes(digest, "big")))


def due(destinations: list[Destination], job: Job) -> list[Destination]:
    """The destinations a job that just ended (as it finished) sends a notice to."""
    if any(d.name == job.name for d in destinations):
        return []
    finished = job.finished_at_ms or 0
    return [d for d in destinations if job.status.value in d.statuses and finished >= d.since_ms]


def notice(kind: Kind, job: Job, error: str | None, result: Any) -> dict[str, Any]:
    """The notice's payload (of `job`, which ended with `error` and `result`), as the
    contract lists it, within the limits of any payload. A result that would take it past them is left out
    (null, with `resultOmitted`): the job has it. That is a result too large to go beside
    the rest, or one nested so deep (the 64 levels a result may have) that inside the
    notice it would be a level too deep: a payload no create accepts, and that
    `jobs:retry` could then not copy."""
    status = job.status.value
    body: dict[str, Any] = {
        "jobId": job.id,
        "name": job.name,
        "status": status,
        "attempts": job.attempt,
        "maxAttempts": job.max_attempts,
        "error": error,
        "result": result if kind == "onSettled" and job.status == JobStatus.COMPLETED else None,
        "failedAtMs" if kind == "onFailure" else "settledAtMs": job.finished_at_ms,
    }
    if not nesting_within(body, limits.MAX_JSON_DEPTH) or len(dump_json(body)) > limits.MAX_PAYLOAD_BYTES:
        body["result"] = None
        body["resultOmitted"] = True
    return body


class Notifier:
    """The stream's step for notifications: reads a space's destinations when a record
    needs them and sends the notices due.

    Destinations read at time t answer for every job that finished before t (a setting
    made after t has a later `sinceMs`, so it would not cover them anyway); a job that
    finished since the last read is answered by a fresh read. So a stream batch reads a space's
    settings item once, and a setting is never missed for lack of a fresh read."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._read: dict[str, tuple[int, list[Destination]]] = {}

    def destinations(self, space: str, finished_ms: int) -> list[Destination]:
        kept = self._read.get(space)
        if kept is not None and kept[0] > finished_ms:  # read after it finished (not in the same ms)
            return kept[1]
        now = self.ctx.clock.now_ms()
        settings = self.ctx.spaces.read_settings(space)
        found = [d for d in (settings.on_failure, settings.on_settled) if d is not None]
        self._read[space] = (now, found)
        return found

    def ended(self, space: str, seen: Snapshot) -> list[Inserted]:
        """Send the notices of one job that just ended (as the stream saw it finish)."""
        destinations = self.destinations(space, seen.job.finished_at_ms or 0)
        if not destinations:
            return []
        due_now = due(destinations, seen.job)
        if not due_now:
            return []
        job = self.ctx.jobs.outcome(seen)  # only what a notice carries: the payload is not read
        made = []
        for destination in due_now:
            body = notice(destination.kind, job, job.error, job.result)
            made_id = notice_id(space, job.id, destination.kind, job.finished_at_ms or 0)
            # Built, not validated: the name was checked when set, and the notice is within
            # a payload's limits (`notice`) around a result checked when reported.
            # The ended job's trace, when it had one: the notice's handler joins it too.
            request = NewJob.model_construct(name=destination.name, payload=body, traceparent=job.traceparent)
            made.append(create_once(self.ctx, space, request, made_id))
        return made
