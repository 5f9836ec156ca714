"""Lease expiry, driven by the clock handler with a clock moved by hand."""

from __future__ import annotations

import os

import pytest

from shared.clock import ManualClock
from shared.config import Config
from shared.runtime import Runtime
from shared.store import books
from tests.support import Api, Background

JOBS = "/v1/spaces/work/jobs"


def claim(api: Api, **body: object) -> dict:
    [held] = api.post(f"{JOBS}:claim", {"count": 1, **body}).body["jobs"]
    return dict(held)


def test_a_silent_worker_loses_the_attempt_and_the_next_worker_gets_the_job(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job_id = api.post(JOBS, {"name": "n", "backoffMs": 2_000}).body["id"]
    first = claim(api, leaseMs=10_000)
    clock.advance(9_999)
    bg.tick()
    assert api.get(f"{JOBS}/{job_id}").body["status"] == "RUNNING"
    clock.advance(1)
    bg.tick()
    job = api.get(f"{JOBS}/{job_id}").body
    assert (job["status"], job["error"], job["failures"]) == ("PENDING", "lease expired", 1)
    assert job["readyAtMs"] == clock.now_ms() + 2_000, "the attempt counts as failed: it waits its backoff"
    [lapsed] = job["attempts"]
    assert (lapsed["endedAtMs"], lapsed["outcome"]) == (clock.now_ms(), "EXPIRED")
    clock.advance(2_000)
    second = claim(api)
    assert second["attempt"] == 2
    late = api.post(f"{JOBS}:report", {"id": job_id, "attempt": first["attempt"], "complete": {}})
    assert late.body["outcomes"][0]["rejection"]["reason"] == "STALE"


def test_a_late_report_while_the_job_waits_its_backoff_after_a_lease_ended_is_stale(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    """The workers page: if a lease runs out, "a later report from the first worker is
    answered STALE" (not NOT_RUNNING, though nobody holds the job yet)."""
    job_id = api.post(JOBS, {"name": "n", "backoffMs": 60_000}).body["id"]
    first = claim(api, leaseMs=10_000)
    clock.advance(10_000)
    bg.tick()
    assert api.get(f"{JOBS}/{job_id}").body["status"] == "PENDING"
    for ending in ({"touch": {}}, {"complete": {}}, {"fail": {"error": "x"}}, {"release": {}}):
        late = api.post(f"{JOBS}:report", {"id": job_id, "attempt": first["attempt"], **ending})
        assert late.body["outcomes"][0]["rejection"]["reason"] == "STALE", ending
    job = api.get(f"{JOBS}/{job_id}").body
    assert (job["status"], job["failures"], job["attempt"]) == ("PENDING", 1, 1), (
        "the reports changed nothing"
    )
    clock.advance(60_000)
    second = claim(api)
    assert (second["id"], second["attempt"]) == (job_id, 2)
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": 2, "release": {}})
    again = api.post(f"{JOBS}:report", {"id": job_id, "attempt": 2, "touch": {}})
    assert again.body["outcomes"][0]["rejection"]["reason"] == "NOT_RUNNING", "a release is still not STALE"


def test_out_of_attempts_the_job_fails_and_leaves_the_in_flight_count(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    api.patch("/v1/spaces/work", {"maxInFlight": 5})
    job_id = api.post(JOBS, {"name": "n", "maxAttempts": 1}).body["id"]
    assert api.get("/v1/spaces/work").body["inFlight"] == 1
    claim(api, leaseMs=1_000)
    clock.advance(1_000)
    bg.tick()
    job = api.get(f"{JOBS}/{job_id}").body
    assert (job["status"], job["error"]) == ("FAILED", "lease expired")
    assert api.get("/v1/spaces/work").body["inFlight"] == 0


def test_a_renewed_lease_is_not_expired_at_its_old_end(api: Api, bg: Background, clock: ManualClock) -> None:
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    held = claim(api, leaseMs=5_000)
    clock.advance(4_000)
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": held["attempt"], "touch": {"leaseMs": 5_000}})
    clock.advance(1_000)
    bg.tick()
    assert api.get(f"{JOBS}/{job_id}").body["status"] == "RUNNING"
    clock.advance(3_999)
    bg.tick()
    assert api.get(f"{JOBS}/{job_id}").body["status"] == "RUNNING"
    clock.advance(1)
    bg.tick()
    assert api.get(f"{JOBS}/{job_id}").body["status"] == "PENDING"


def test_ticks_that_repeat_or_come_late_expire_an_attempt_once(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    claim(api, leaseMs=1_000)
    clock.advance(60_000)
    for _ in range(3):
        bg.tick()
    job = api.get(f"{JOBS}/{job_id}").body
    assert job["failures"] == 1 and job["attempt"] == 1


def test_a_job_reported_before_its_lease_ends_is_left_alone(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    held = claim(api, leaseMs=1_000)
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": held["attempt"], "complete": {"result": 1}})
    clock.advance(5_000)
    bg.tick()
    job = api.get(f"{JOBS}/{job_id}").body
    assert job["status"] == "COMPLETED" and job["failures"] == 0


def test_many_claims_expire_together(api: Api, bg: Background, clock: ManualClock) -> None:
    api.post(JOBS, [{"name": "n", "maxAttempts": 1}] * 30)
    api.post(f"{JOBS}:claim", {"count": 30, "leaseMs": 1_000})
    clock.advance(1_000)
    report = bg.tick()
    assert report["expired"] == 30
    assert {j["status"] for j in api.get(JOBS).body["jobs"]} == {"FAILED"}


def test_a_stale_worker_cannot_overwrite_the_result_of_the_attempt_that_finished(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    """Large results are written before the conditional write decides; a stale attempt's
    must not land where the job's own result is."""
    job_id = api.post(JOBS, {"name": "n", "backoffMs": 0}).body["id"]
    first = claim(api, leaseMs=1_000)
    clock.advance(1_000)
    bg.tick()
    second = claim(api)
    big = {"by": "attempt 2", "blob": os.urandom(3_000).hex()}
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": second["attempt"], "complete": {"result": big}})
    stale = {"by": "stale attempt 1", "blob": os.urandom(3_000).hex()}
    late = api.post(
        f"{JOBS}:report", {"id": job_id, "attempt": first["attempt"], "complete": {"result": stale}}
    )
    assert late.body["outcomes"][0]["rejection"]["reason"] == "ALREADY_FINISHED"
    assert api.get(f"{JOBS}/{job_id}").body["result"] == big


def test_the_clock_drains_the_whole_lease_book_in_one_tick(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However many claims a minute brings, one tick sees every due lease (a page at a time)."""
    due = rt.leases.due
    monkeypatch.setattr(rt.leases, "due", lambda p, now: due(p, now, limit=1))  # tiny pages
    api.post(JOBS, [{"name": "n", "maxAttempts": 1}] * 20)
    for _ in range(20):
        claim(api, leaseMs=1_000)
    clock.advance(1_000)
    assert bg.tick()["expired"] == 20


def test_a_bucket_seen_twice_expires_its_attempt_once(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repeated or overlapping tick (the bucket still there) changes nothing the second time."""
    monkeypatch.setattr(rt.leases, "remove", lambda buckets: None)
    job_id = api.post(JOBS, {"name": "n", "backoffMs": 60_000}).body["id"]
    claim(api, leaseMs=1_000)
    clock.advance(1_000)
    for _ in range(3):
        bg.tick()
    job = api.get(f"{JOBS}/{job_id}").body
    assert (job["failures"], job["status"]) == (1, "PENDING")


def test_overlapping_ticks_count_each_expiry_once(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tick that reads the due jobs, then loses every write to a tick that ran meanwhile,
    counts nothing: the sum of what the ticks report is the number of leases."""
    api.post(JOBS, [{"name": "n"}] * 10)
    api.post(f"{JOBS}:claim", {"count": 10, "leaseMs": 1_000})
    clock.advance(1_000)
    items = rt.jobs.items
    other: list[dict] = []
    started = []

    def read_then_let_another_tick_run(*args: object, **kw: object) -> object:
        found = items(*args, **kw)  # type: ignore[arg-type]
        if not started:
            started.append(True)
            other.append(bg.tick())
        return found

    monkeypatch.setattr(rt.jobs, "items", read_then_let_another_tick_run)
    first = bg.tick()
    assert other[0]["expired"] == 10
    assert first["expired"] + other[0]["expired"] == 10
    assert {j["status"] for j in api.get(JOBS).body["jobs"]} == {"PENDING"}
    assert {j["failures"] for j in api.get(JOBS).body["jobs"]} == {1}


def test_the_clock_drains_every_shard_of_a_slot_of_the_lease_book(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claims spread their buckets over the write shards of the slot they are due in (so no
    partition every space shares is busy); a tick reads every shard the slot's map names."""
    monkeypatch.setattr(books, "PER_SHARD", 1)  # from the second bucket on, each in the next shard
    record, shards = rt.leases.record, rt.leases.shards

    def one_bucket_a_job(space: str, claims: list) -> None:
        for one in claims:
            record(space, [one])

    monkeypatch.setattr(rt.leases, "record", one_bucket_a_job)
    api.post(JOBS, [{"name": "n", "maxAttempts": 1}] * shards)
    api.post(f"{JOBS}:claim", {"count": shards, "leaseMs": 1_000})
    clock.advance(1_000)
    partitions = rt.leases.look(clock.now_ms()).partitions
    assert len(partitions) == shards == Config.local().book_shards
    assert all(rt.db.query("pk = :pk", vals={":pk": pk})[0] for pk in partitions)
    assert bg.tick()["expired"] == shards
    assert not any(rt.db.query("pk = :pk", vals={":pk": pk})[0] for pk in partitions)


def test_a_tick_out_of_time_leaves_what_is_due_to_the_next(api: Api, rt: Runtime, clock: ManualClock) -> None:
    """A tick stops at its next page when its function nears its timeout: what is left
    stays due, and the next tick does it (a busy hour spreads over several invocations)."""
    job_id = api.post(JOBS, {"name": "n", "maxAttempts": 1}).body["id"]
    claim(api, leaseMs=1_000)
    clock.advance(2_000)
    rt.sweeper.tick(tick_ms=1_000, out_of_time=lambda: True)
    assert api.get(f"{JOBS}/{job_id}").body["status"] == "RUNNING"
    assert rt.sweeper.tick(tick_ms=1_000).expired == 1
    assert api.get(f"{JOBS}/{job_id}").body["status"] == "FAILED"
