"""Cancelling jobs: each unfinished job of the request ends CANCELLED, on its own.

One conditional write per job (the `cancel` transition's guard: only an unfinished job
is cancelled, and its holds are let go in the same write); a job that has finished, or
is gone, is answered for its id and the others are cancelled.
"""

from __future__ import annotations

from shared.ids import is_ulid
from shared.job import JobStatus, Retention
from shared.jobs.context import Context
from shared.jobs.outcomes import Applied, Outcome, Refused
from shared.machine import cancel as cancel_transition
from shared.store.port import JobConflict


def cancel(ctx: Context, space: str, ids: list[str]) -> list[Outcome]:
    """One outcome per id, in order: CANCELLED, or a rejection (NOT_FOUND, ALREADY_FINISHED)."""
    now = ctx.clock.now_ms()
    retention = ctx.settings.get(space).retention
    return [_cancel_one(ctx, space, job_id, now, retention) for job_id in ids]


def _cancel_one(ctx: Context, space: str, job_id: str, now: int, retention: Retention) -> Outcome:
    if not is_ulid(job_id):
        return Refused("NOT_FOUND", f"job {job_id} does not exist")
    try:
        ctx.jobs.transition(space, job_id, cancel_transition(now_ms=now, retention=retention))
    except JobConflict as failed:
        job = failed.current
        if job is None or job.purged(now):
            return Refused("NOT_FOUND", f"job {job_id} does not exist")
        return Refused("ALREADY_FINISHED", f"job {job_id} is {job.status.value}")
    return Applied(JobStatus.CANCELLED)
