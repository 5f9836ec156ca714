"""What a job's change counts for (`shared.store.tallies`): its name's pending and running
jobs, and the minute's created, claimed, completed, failed and cancelled.

Every name and space is counted, with or without a limit: the stream sees every change,
so the counts cost no write of the request that made it (a batch's counts are a few
writes for up to 100 records), and they lag by the stream's second or so.
"""

from __future__ import annotations

from shared.job import JobStatus
from shared.store.port import JobChange, Tally

ENDED = {
    JobStatus.COMPLETED: "completed",
    JobStatus.FAILED: "failed",
    JobStatus.STALLED: "failed",
    JobStatus.CANCELLED: "cancelled",
}
GAUGES = {JobStatus.PENDING: "pending", JobStatus.RUNNING: "running"}


def tally_of(change: JobChange) -> tuple[str, Tally] | None:
    """The job's name and what its change counts for; None: nothing (a change within a
    status, a finished job removed)."""
    moved = change.moved
    if moved is None:
        return None
    name, before, after = moved
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
    return (name, tally) if tally else None
