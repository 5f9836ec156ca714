"""What a job's change counts for (`shared.store.tallies`): its name's pending and running
jobs, the minute's created, claimed, completed, failed and cancelled, and the deployment's
pending jobs by the minute they have waited since (`waits_of`, whence the clock's backlog
and oldest waiting age, `shared.backlog`).

Every name and space is counted, with or without a limit: the stream sees every change,
so the counts cost no write of the request that made it (a batch's counts are a few
writes for up to 100 records), and they lag by the stream's second or so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared import limits
from shared.job import JobStatus
from shared.store.port import JobChange, Tally

ENDED = {
    JobStatus.COMPLETED: "completed",
    JobStatus.FAILED: "failed",
    JobStatus.STALLED: "failed",
    JobStatus.CANCELLED: "cancelled",
}
GAUGES = {JobStatus.PENDING: "pending", JobStatus.RUNNING: "running"}


def tally_of(change: JobChange) -> Tally | None:
    """What the change counts for, for its job's name; None: nothing (a change within a
    status, a finished job removed)."""
    moved = change.moved
    if moved is None:
        return None
    _, before, after = moved
    tally = Tally()
    if before in GAUGES:
        setattr(tally, GAUGES[before], -1)
    if after in GAUGES:
        setattr(tally, GAUGES[after], getattr(tally, GAUGES[after]) + 1)
    if before is None and after is not None:
        tally.created = 1
    if before == JobStatus.PENDING and after == JobStatus.RUNNING:
        tally.claimed = 1
    if after in ENDED:
        setattr(tally, ENDED[after], 1)
    return tally if tally else None


def waiting_since(item: Mapping[str, Any] | None) -> int | None:
    """The minute a pending job has waited since: its ready time (a delay's or backoff's
    end, a release) and never before it was made, so a job is counted from no earlier than
    the write that made it pending. None for a job that is not pending."""
    if item is None or item.get("status") != JobStatus.PENDING.value:
        return None
    ready = item.get("readyAtMs") or item.get("runAtMs") or 0
    since = max(int(ready), int(item.get("createdAtMs") or 0))
    return since // limits.MINUTE_MS * limits.MINUTE_MS


def waits_of(change: JobChange) -> tuple[tuple[int, int], ...]:
    """What the change does to the deployment's waiting counts, as (minute, delta): out of
    the minute the job waited since before, into the one it waits since now."""
    before, after = waiting_since(change.old), waiting_since(change.new)
    if before == after:
        return ()
    return tuple((minute, delta) for minute, delta in ((before, -1), (after, 1)) if minute is not None)
