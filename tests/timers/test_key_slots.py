"""A worker that dies holding a key's slot frees it when its lease ends (the clock)."""

from __future__ import annotations

from collections import Counter

from shared.clock import ManualClock
from shared.runtime import Runtime
from tests.support import Api, Background
from tests.timers.test_limits import WORKERS, at_once

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


def test_32_workers_claiming_at_once_never_pass_a_keys_limit(api: Api, rt: Runtime) -> None:
    """Rounds of 32 workers claiming together, each round's jobs completed after it: no key
    ever has more than `perKeyConcurrency` running, and every job is handed out once."""
    api.patch("/v1/spaces/work/names/n/policy", {"perKeyConcurrency": 2})
    created = api.post(JOBS, [{"name": "n", "concurrencyKey": f"k{i % 3}"} for i in range(12)]).body["jobs"]
    key_of = {j["id"]: f"k{i % 3}" for i, j in enumerate(created)}
    handed: list[str] = []
    for _ in range(40):
        running = at_once(WORKERS, lambda: api.post(f"{JOBS}:claim", {"count": 3}).body["jobs"])
        per_key = Counter(key_of[j["id"]] for j in running)
        assert max(per_key.values(), default=0) <= 2, per_key
        for key in per_key:
            assert rt.jobs.key_entries.running("work", "n", key) == per_key[key]
        handed += [j["id"] for j in running]
        for job in running:
            api.post(f"{JOBS}:report", {"id": job["id"], "attempt": job["attempt"], "complete": {}})
        if len(handed) == len(created):
            break
    assert sorted(handed) == sorted(key_of), "every job once"
