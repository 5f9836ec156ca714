"""A name's ready shards through the handlers: 4 at rest, more under load and back again;
claims that find every job in reach, in exact order at rest, and never answer none while
work waits (`shared.spread`, `JobStore.claim`)."""

from __future__ import annotations

from typing import Any

import pytest

from shared import spread
from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.store import keys
from shared.store.dynamo import Item
from shared.store.jobs.looks import Look
from shared.store.port import ClaimPlan, NameClaim
from shared.store.spread import Spread
from shared.store.timers import NARROW, Timer
from tests.support import Api

SPACE = "spread"
JOBS = f"/v1/spaces/{SPACE}/jobs"
CLAIM = f"{JOBS}:claim"


def create_many(api: Api, count: int, name: str = "n") -> list[str]:
    answer = api.post(JOBS, [{"name": name} for _ in range(count)])
    assert answer.status == 200, answer
    return [job["id"] for job in answer.body["jobs"]]


def claim(api: Api, count: int, name: str = "n") -> list[dict[str, Any]]:
    answer = api.post(CLAIM, {"count": count, "names": [name]})
    assert answer.status == 200, answer
    return list(answer.body["jobs"])


def spread_of(rt: Runtime, name: str = "n") -> Spread:
    return Spread.of(rt.space_store.name_item(SPACE, name))


def shard_of(item: Item) -> int:
    return int(str(item["gpk"]).rsplit("#", 1)[1])


def job_item(rt: Runtime, job_id: str) -> Item:
    item = rt.jobs.get_item(SPACE, job_id)
    assert item is not None
    return item


def widen(rt: Runtime, clock: ManualClock, width: int, name: str = "n") -> None:
    """Give `name` `width` shards, as its load would (reach first, width once the caches saw
    it), filed for the clock to narrow as the spreader files it (`Spreader.created`)."""
    rt.space_store.register_names(SPACE, {name}, clock.now_ms())
    rt.timers.file(SPACE, [Timer(NARROW, name, clock.now_ms() + spread.NARROW_EVERY_MS)])
    store = rt.context.spreader.store
    store.set_spread(
        SPACE, name, spread_of(rt, name), width=keys.READY_SHARDS, reach=width, now_ms=clock.now_ms()
    )
    clock.advance(spread.WIDEN_AFTER_MS)
    store.set_spread(SPACE, name, spread_of(rt, name), width=width, reach=width, now_ms=clock.now_ms())
    rt.policies.forget(SPACE)


def test_a_busy_name_widens_and_the_clock_narrows_it_back(api: Api, rt: Runtime, clock: ManualClock) -> None:
    # Every create is counted, as the SAMPLE jobs a counted create stands for (so one job a
    # create is enough here): 20 creates a second count as 2,560 jobs a second, what 4
    # shards at 250 jobs/s each do not hold.
    rt.context.spreader.rand = lambda: 0.0
    made: list[str] = []
    for _ in range(40):
        made += create_many(api, 1)
        clock.advance(50)
    assert spread_of(rt).reach > keys.READY_SHARDS, "creates raised the reach under their load"
    assert spread_of(rt).width == keys.READY_SHARDS, "the width waits for every claim to read there"
    clock.advance(spread.WIDEN_AFTER_MS)
    for _ in range(40):
        made += create_many(api, 1)
        clock.advance(50)
    assert spread_of(rt).width > keys.READY_SHARDS, "creates widened the name under their load"
    assert spread_of(rt).reach >= spread_of(rt).width
    wide = {shard_of(job_item(rt, i)) for i in made[-30:]}
    assert max(wide) >= keys.READY_SHARDS, "new jobs went to the new shards"

    handed: list[str] = []
    while got := claim(api, 100):
        handed += [j["id"] for j in got]
        api.post(f"{JOBS}:report", [{"id": j["id"], "attempt": j["attempt"], "complete": {}} for j in got])
    assert sorted(handed) == sorted(made), "every job, in whichever shard, was handed out once"

    clock.advance(spread.WINDOW_MS * 2)  # the load has gone
    rt.sweeper.tick(tick_ms=60_000)
    assert spread_of(rt).width == keys.READY_SHARDS, "the clock lowered the width"
    assert spread_of(rt).reach > keys.READY_SHARDS, "but claims still read the shards past it"
    clock.advance(spread.NARROW_GRACE_MS)
    rt.sweeper.tick(tick_ms=60_000)
    assert spread_of(rt).reach == keys.READY_SHARDS, "and, those shards empty, claims read 4 again"


def test_reach_stays_while_a_shard_past_the_width_holds_a_job(
    api: Api, rt: Runtime, clock: ManualClock
) -> None:
    widen(rt, clock, 64)
    later = [j for j in create_many(api, 40) if shard_of(job_item(rt, j)) >= keys.READY_SHARDS]
    assert later
    clock.advance(spread.WINDOW_MS * 2 + spread.NARROW_GRACE_MS)
    for _ in range(3):
        rt.sweeper.tick(tick_ms=60_000)
        clock.advance(spread.NARROW_GRACE_MS)
    assert spread_of(rt).width == keys.READY_SHARDS
    assert spread_of(rt).reach == 64, "a pending job past the width keeps the reach"
    assert {j["id"] for j in claim(api, 40)} >= set(later)


def test_a_job_in_any_shard_in_reach_is_found_one_at_a_time(
    api: Api, rt: Runtime, clock: ManualClock
) -> None:
    widen(rt, clock, 64)
    made = create_many(api, 30)
    assert len({shard_of(job_item(rt, i)) for i in made}) > keys.READY_SHARDS
    handed = []
    for _ in made:
        [job] = claim(api, 1)  # never none while a job waits, in whichever shard
        handed.append(job["id"])
    assert sorted(handed) == sorted(made)
    assert claim(api, 1) == []


def test_a_job_that_waits_again_goes_to_its_rest_shard(api: Api, rt: Runtime, clock: ManualClock) -> None:
    widen(rt, clock, 64)
    made = create_many(api, 40)
    far = next(i for i in made if shard_of(job_item(rt, i)) >= keys.READY_SHARDS)
    assert far in {j["id"] for j in claim(api, 40)}
    report = {"id": far, "attempt": 1, "fail": {"error": "busy", "retryAfterMs": 1_000}}
    assert api.post(f"{JOBS}:report", report).status == 200
    item = job_item(rt, far)
    assert item["status"] == "PENDING" and item["gpk"] == keys.ready_home(SPACE, "n", far)
    clock.advance(1_000)
    assert [j["id"] for j in claim(api, 1)] == [far]


def test_the_order_is_exact_at_rest(api: Api, clock: ManualClock) -> None:
    made = []
    for priority in (0, 3, 1, 0, 2) * 8:
        answer = api.post(JOBS, {"name": "n", "priority": priority})
        made.append((-priority, len(made), answer.body["id"]))
        clock.advance(1)
    expected = [job_id for _, _, job_id in sorted(made)]
    handed = []
    while got := claim(api, 7):
        handed += [j["id"] for j in got]
    assert handed == expected


def test_a_claim_whose_candidates_were_all_taken_looks_again(
    api: Api, rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A racing claim takes every candidate this claim read, between its read and its
    writes: this claim looks again and finds the jobs left, rather than answer none."""
    made = create_many(api, 30)
    apply = rt.jobs.apply
    raced = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        if not raced:
            raced.append(True)
            plan = ClaimPlan({"n": NameClaim(60_000)}, count=28, lease_ms=None, payload_budget=10**6)
            rival = rt.jobs.claim(SPACE, plan, now_ms=rt.clock.now_ms())
            raced.extend(job.id for job in rival.claimed)
        return apply(*args, **kwargs)

    monkeypatch.setattr(rt.jobs, "apply", racing)
    got = [j["id"] for j in claim(api, 10)]
    assert len(raced) == 29
    assert sorted(got) == sorted(set(made) - set(raced[1:]))


# -- keys' entries spread with their name ------------------------------------------


def key_entry(rt: Runtime, key: str, name: str = "n") -> Item:
    item = rt.db.get(keys.key_item(SPACE, name, key))
    assert item is not None
    return item


def far_keys(count: int, width: int = 64) -> list[str]:
    """Keys whose shard of `width` lies past the rest shards."""
    out = [f"k{n}" for n in range(1_000)]
    return [k for k in out if keys._shard(k, width) >= keys.READY_SHARDS][:count]


def test_keys_entries_are_listed_within_the_names_width(api: Api, rt: Runtime, clock: ManualClock) -> None:
    """1,000 busy keys would cap their name at its 4 rest shards: their entries spread over
    the width, each in its key's shard of it; every key's job is found there."""
    widen(rt, clock, 64)
    made = {}
    for n in range(40):
        answer = api.post(JOBS, {"name": "n", "concurrencyKey": f"k{n}"})
        made[f"k{n}"] = answer.body["id"]
    shards = {key: key_entry(rt, key)["gpk"] for key in made}
    assert len(set(shards.values())) > keys.READY_SHARDS, "the entries spread past the rest shards"
    assert all(gpk == keys.key_entry_partition(SPACE, "n", key, 64) for key, gpk in shards.items())
    handed = []
    while got := claim(api, 7):
        handed += [j["id"] for j in got]
    assert sorted(handed) == sorted(made.values())


def test_a_key_listed_again_by_a_release_is_listed_within_the_width(
    api: Api, rt: Runtime, clock: ManualClock
) -> None:
    """A key at its limit is out of the lanes; the finish that lets its slot go lists it again
    in its shard of the width its name has now, and a claim that moves it moves it there."""
    [key] = far_keys(1)
    first = api.post(JOBS, {"name": "n", "concurrencyKey": key}).body["id"]
    clock.advance(1)
    second = api.post(JOBS, {"name": "n", "concurrencyKey": key}).body["id"]
    assert key_entry(rt, key)["gpk"] == keys.key_entry_partition(SPACE, "n", key), "at rest: a rest shard"
    widen(rt, clock, 64)
    assert [j["id"] for j in claim(api, 5)] == [first]
    assert "gpk" not in key_entry(rt, key), "full: out of the lanes"
    report = {"id": first, "attempt": 1, "complete": {}}
    assert api.post(f"{JOBS}:report", report).status == 200
    assert key_entry(rt, key)["gpk"] == keys.key_entry_partition(SPACE, "n", key, 64)
    assert [j["id"] for j in claim(api, 5)] == [second]


def test_a_keys_entry_past_a_narrowed_width_keeps_the_reach_until_a_claim_moves_it(
    api: Api, rt: Runtime, clock: ManualClock
) -> None:
    """The clock lowers the reach only once the shards past the width are empty, keys'
    entries included: an entry left past it is still found, and its claim moves it in."""
    keyed = far_keys(3)
    widen(rt, clock, 64)
    key_of = {}
    for key in keyed:
        for _ in range(2):
            answer = api.post(JOBS, {"name": "n", "concurrencyKey": key, "delayMs": spread.WINDOW_MS * 3})
            key_of[answer.body["id"]] = key
            clock.advance(1)
    assert all(shard_of(key_entry(rt, key)) >= keys.READY_SHARDS for key in keyed)
    clock.advance(spread.WINDOW_MS * 2 + spread.NARROW_GRACE_MS)
    for _ in range(3):
        rt.sweeper.tick(tick_ms=60_000)
        clock.advance(spread.NARROW_GRACE_MS)
    assert spread_of(rt).width == keys.READY_SHARDS
    assert spread_of(rt).reach == 64, "a key's entry past the width keeps the reach"
    rt.policies.forget(SPACE)
    got = claim(api, 10)
    assert len(got) == len(keyed), "one job of each key (perKeyConcurrency 1), found past the width"
    assert sorted(key_of[j["id"]] for j in got) == sorted(keyed)
    for job in got:
        report = {"id": job["id"], "attempt": 1, "complete": {}}
        assert api.post(f"{JOBS}:report", report).status == 200
        assert shard_of(key_entry(rt, key_of[job["id"]])) < keys.READY_SHARDS, "listed again within the width"
    for _ in range(3):
        rt.sweeper.tick(tick_ms=60_000)
        clock.advance(spread.NARROW_GRACE_MS)
    assert spread_of(rt).reach == keys.READY_SHARDS, "the shards past the width emptied"
    rt.policies.forget(SPACE)
    assert len(claim(api, 10)) == len(keyed), "and the keys' next jobs are found within it"


def test_a_claim_that_moves_a_keys_entry_moves_it_within_the_width(
    api: Api, rt: Runtime, clock: ManualClock
) -> None:
    """A key with room left after a claim keeps its entry listed, moved to its next head: into
    the name's width as it is now (here narrowed), so the shards past it can empty."""
    [key] = far_keys(1)
    api.patch(f"/v1/spaces/{SPACE}/names/n/policy", {"perKeyConcurrency": 5})
    widen(rt, clock, 64)
    made = []
    for _ in range(3):
        made.append(api.post(JOBS, {"name": "n", "concurrencyKey": key}).body["id"])
        clock.advance(1)
    assert shard_of(key_entry(rt, key)) >= keys.READY_SHARDS
    store = rt.context.spreader.store
    store.set_spread(SPACE, "n", spread_of(rt), width=keys.READY_SHARDS, reach=64, now_ms=clock.now_ms())
    rt.policies.forget(SPACE)
    assert [j["id"] for j in claim(api, 1)] == made[:1]
    entry = key_entry(rt, key)
    assert entry["gsk"] == job_item(rt, made[1])["gsk"], "moved to the key's next head"
    assert entry["gpk"] == keys.key_entry_partition(SPACE, "n", key), "within the width now"
    assert [j["id"] for j in claim(api, 5)] == made[1:]


def test_a_keys_entry_seen_in_two_shards_at_once_is_read_once(
    api: Api, rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A moved entry may show in its old shard and its new one for a moment (the index lags):
    the claim reads the key once and hands out its job once."""
    [key] = far_keys(1)
    job = api.post(JOBS, {"name": "n", "concurrencyKey": key}).body["id"]
    read = Look.read

    def lagging(self: Look, shards: list[tuple[str, str]]) -> list[Item]:
        rows = read(self, shards)
        stale = [r | {"gpk": keys.ready_shard(SPACE, "n", 40)} for r in rows if keys.is_key_entry(r)]
        return rows + stale

    monkeypatch.setattr(Look, "read", lagging)
    assert [j["id"] for j in claim(api, 10)] == [job]
