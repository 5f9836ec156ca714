"""A worker that dies holding a key's slot frees it when its lease ends (the clock)."""

from __future__ import annotations

from shared.clock import ManualClock
from tests.support import Api, Background

JOBS = "/v1/spaces/work/jobs"


def test_a_dead_workers_key_slot_is_freed_when_its_lease_ends(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    first = api.post(JOBS, {"name": "n", "concurrencyKey": "k", "backoffMs": 1_000}).body["id"]
    second = api.post(JOBS, {"name": "n", "concurrencyKey": "k"}).body["id"]
    [held] = api.post(f"{JOBS}:claim", {"count": 10, "leaseMs": 10_000}).body["jobs"]
    assert held["id"] == first
    assert api.post(f"{JOBS}:claim", {"count": 10}).body["jobs"] == []
    clock.advance(10_000)
    bg.tick()
    assert api.get(f"{JOBS}/{first}").body["status"] == "PENDING"
    [next_one] = api.post(f"{JOBS}:claim", {"count": 10}).body["jobs"]
    assert next_one["id"] == second, "the slot is free again; the expired job waits its backoff"
    api.post(f"{JOBS}:report", {"id": second, "attempt": 1, "complete": {}})
    clock.advance(1_000)
    [again] = api.post(f"{JOBS}:claim", {"count": 10}).body["jobs"]
    assert (again["id"], again["attempt"]) == (first, 2)
