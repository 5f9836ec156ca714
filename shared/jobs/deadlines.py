"""Cancelling a job at its deadline: the one write the clock, a claim and a report share.

Whoever finds an unfinished job past its `expiresAtMs` first (the clock draining the
deadline book, a claim whose candidate turned out expired, a worker's report arriving
late) makes the same conditional write; the `deadline` transition's guard lets exactly one
of them apply, so a repeated tick or a race between them is harmless.

`cancel_expired` takes the job store alone, as the clock (`shared.sweeper`) has no more;
`cancel_found` is the claim's and the report's, over their context, and never fails them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from shared.jobs.context import Context
from shared.machine import EXPIRED, Job, Retention, deadline
from shared.observability import logger
from shared.store.blobs import pack, replacing
from shared.store.codec import expired
from shared.store.counters import Owner
from shared.store.dynamo import ConditionFailed, Item
from shared.store.jobs import JobStore


def cancel_expired(jobs: JobStore, space: str, item: Item, *, now_ms: int, retention: Retention) -> bool:
    """Cancel the job of `item` (its own item as last read) with error `expired` if its
    deadline has passed unfinished: whether this write did it. The job's holds are let go
    in the same write, as any finish does."""
    if not expired(item, now_ms):
        return False
    job_id = str(item["sk"])
    error = pack(space, job_id, "error", EXPIRED.encode())
    try:
        jobs.apply(
            space,
            job_id,
            deadline(now_ms=now_ms, retention=retention, has_callback=item.get("callback") is not None),
            stored=replacing("error", error),
            held=item,
            owner=Owner.of(item),
        )
    except ConditionFailed:
        return False  # finished, or cancelled by another, since it was read
    return True


def cancel_found(ctx: Context, space: str, item: Item, *, now: int) -> None:
    """Cancel a job found past its deadline (by a claim, or a report), as the clock would
    have: a fault leaves it to the clock, rather than fail the claim or the report."""
    with afterthought(ctx.jobs.load(space, item, bodies=False)):
        cancel_expired(ctx.jobs, space, item, now_ms=now, retention=ctx.settings.get(space).retention)


@contextlib.contextmanager
def afterthought(job: Job) -> Iterator[None]:
    """A side write of a claim or a report: on a job a claim won but does not answer
    with, or on one found past its deadline. If the job changed since (a cancel), there
    is nothing left to do; a fault leaves the job to its lease's expiry (or to the clock)
    rather than fail the claim, whose other jobs are already running."""
    try:
        yield
    except ConditionFailed:
        pass
    except Exception:
        logger.exception("a claim could not settle a job", extra={"action": "claim", "job": job.id})
