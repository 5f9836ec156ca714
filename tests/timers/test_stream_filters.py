"""The stream's filters (`infra.stack.STREAM_FILTERS`) let through every record the handler
acts on: `emit dev` hands the handler every record, so only this shows that AWS would too.

Each job's life is driven through the handlers and its records read back; a record the
counts, the callbacks, the wake or the cleanup need must match one of the patterns."""

from __future__ import annotations

from infra.stream_filters import passes
from shared.clock import ManualClock
from shared.counts import tally_of, waits_of
from shared.store.port import JobChange
from tests.support import Api, Background

SPACE = "/v1/spaces/filtered"


def test_every_record_the_counts_need_passes_the_filters(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    api.created(SPACE, "done")
    api.created(SPACE, "cancelled")
    api.created(SPACE, "retried", maxAttempts=2, backoffMs=0)
    api.created(SPACE, "expired", timeoutMs=1_000)
    api.created(SPACE, "later", delayMs=60_000)
    for _ in range(2):  # the second waits for the first's key
        api.created(SPACE, "keyed", concurrencyKey="k")
    held = {name: api.claimed(SPACE, names=[name])[0] for name in ("done", "retried", "expired", "keyed")}
    jobs = f"{SPACE}/jobs"
    api.post(f"{jobs}:report", {"id": held["done"], "attempt": 1, "complete": {}})
    api.post(f"{jobs}:report", {"id": held["keyed"], "attempt": 1, "complete": {}})
    api.post(f"{jobs}:report", {"id": held["retried"], "attempt": 1, "fail": {"error": "again"}})
    api.post(f"{jobs}:cancel", {"ids": [api.get(jobs, query={"name": "cancelled"}).body["jobs"][0]["id"]]})
    clock.advance(5_000)
    records = bg.records()
    bg.tick()  # the lease of `expired` ends: back to pending
    records += bg.records()
    counted = [r for r in records if (c := JobChange.of(r)) is not None and tally_of(c) is not None]
    moves = {(JobChange.of(r).moved[1], JobChange.of(r).moved[2]) for r in counted}  # type: ignore[union-attr]
    assert len(moves) >= 5, moves  # made, claimed, completed, failed and retried, cancelled, expired
    missed = [JobChange.of(r).moved for r in counted if not passes(r)]  # type: ignore[union-attr]
    assert not missed, f"the stream's filters drop records the counts need: {missed}"
    waiting = [r for r in records if (c := JobChange.of(r)) is not None and waits_of(c)]
    assert len(waiting) >= 5, "made, claimed, retried, cancelled, expired, and the keyed ones"
    dropped = [waits_of(JobChange.of(r)) for r in waiting if not passes(r)]  # type: ignore[arg-type]
    assert not dropped, f"the stream's filters drop records the waiting counts need: {dropped}"


def test_the_filters_drop_what_nothing_needs(api: Api, bg: Background) -> None:
    """A report that only renews a lease changes nothing the handler acts on."""
    job = api.created(SPACE, "touched")
    api.claimed(SPACE, names=["touched"])
    bg.records()
    api.post(f"{SPACE}/jobs:report", {"id": job, "attempt": 1, "touch": {}})
    assert [r for r in bg.records() if passes(r)] == []
