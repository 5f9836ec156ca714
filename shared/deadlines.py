"""Cancelling a job at its deadline: the one write the clock, a claim and a report share.

Whoever finds an unfinished job past its `expiresAtMs` first (the clock draining the
deadline book, a claim whose candidate turned out expired, a worker's report arriving
late) makes the same conditional write; the `deadline` transition's guard lets exactly one
of them apply, so a repeated tick or a race between them is harmless.
"""

from __future__ import annotations

from shared.machine import EXPIRED, Retention, deadline
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
