"""The unclaimed window, driven by the clock handler."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shared.clock import ManualClock
from shared.config import Config
from shared.runtime import Runtime
from tests.support import Api, Background

JOBS = "/v1/spaces/work/jobs"
DAY = 86_400_000


def status(api: Api, job_id: str) -> tuple[str, str | None]:
    body = api.get(f"{JOBS}/{job_id}").body
    return body["status"], body.get("error")


def fails_unclaimed_after(
    api: Api,
    bg: Background,
    clock: ManualClock,
    job_id: str,
    ms: int,
    window: str = "7d",
    *,
    no_error_before: bool = False,
) -> None:
    """The job is still pending a millisecond before `ms` from now (with no error, when
    `no_error_before`), and failed for want of a claim at `ms`: the window's edge, checked
    from both sides."""
    clock.advance(ms - 1)
    bg.tick()
    if no_error_before:
        assert status(api, job_id) == ("PENDING", None)
    else:
        assert status(api, job_id)[0] == "PENDING"
    clock.advance(1)
    bg.tick()
    assert status(api, job_id) == ("FAILED", f"not claimed within {window}")


def test_a_job_nobody_claims_for_7_days_fails(api: Api, bg: Background, clock: ManualClock) -> None:
    api.patch("/v1/spaces/work", {"maxInFlight": 5})
    job_id = api.post(JOBS, {"name": "typo-in-name"}).body["id"]
    fails_unclaimed_after(api, bg, clock, job_id, 7 * DAY, no_error_before=True)
    assert api.get("/v1/spaces/work").body["inFlight"] == 0


def test_the_window_counts_from_when_the_job_could_first_be_claimed(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    api.patch("/v1/spaces/work", {"unclaimedMs": 2 * 3_600_000})
    job_id = api.post(JOBS, {"name": "n", "delayMs": DAY}).body["id"]
    fails_unclaimed_after(api, bg, clock, job_id, DAY + 2 * 3_600_000, window="2h")


def test_a_space_may_turn_the_window_off(api: Api, bg: Background, clock: ManualClock) -> None:
    api.patch("/v1/spaces/work", {"unclaimedMs": None})
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    clock.advance(30 * DAY)
    bg.tick()
    assert status(api, job_id)[0] == "PENDING"


def test_a_released_job_waits_the_window_again_from_its_release(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    clock.advance(DAY)
    api.post(f"{JOBS}:claim", {"count": 1})
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": 1, "release": {}})
    fails_unclaimed_after(api, bg, clock, job_id, 7 * DAY, no_error_before=True)


def test_a_retried_job_waits_the_window_from_the_end_of_its_backoff(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job_id = api.post(JOBS, {"name": "n", "backoffMs": 60_000}).body["id"]
    api.post(f"{JOBS}:claim", {"count": 1})
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": 1, "fail": {"error": "busy"}})
    fails_unclaimed_after(api, bg, clock, job_id, 60_000 + 7 * DAY)


def test_a_job_due_in_the_past_waits_the_window_from_its_creation(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job_id = api.post(JOBS, {"name": "n", "runAtMs": clock.now_ms() - 8 * DAY}).body["id"]
    clock.advance(60_000)
    bg.tick()
    assert status(api, job_id)[0] == "PENDING"
    fails_unclaimed_after(api, bg, clock, job_id, 7 * DAY - 60_000)


def test_many_released_jobs_hide_neither_themselves_nor_a_fresh_one(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    """More than a page of released jobs sort before the fresh job in the ready index."""
    api.post(JOBS, [{"name": "n"}] * 600)
    held = api.post(f"{JOBS}:claim", {"count": 600}).body["jobs"]
    reports = [{"id": h["id"], "attempt": h["attempt"], "release": {}} for h in held]
    assert {o["status"] for o in api.post(f"{JOBS}:report", reports).body["outcomes"]} == {"PENDING"}
    clock.advance(1)
    fresh = api.post(JOBS, {"name": "n"}).body["id"]
    clock.advance(7 * DAY)
    bg.tick()
    assert status(api, fresh) == ("FAILED", "not claimed within 7d")
    listed = api.get(JOBS, query={"limit": 1000}).body["jobs"]
    assert len(listed) == 601 and {j["status"] for j in listed} == {"FAILED"}


class FailOnce:
    """A DynamoDB client whose first write that lists a space (the `SPACES` items) fails."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.failed = False

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.client, name)

        def wrapped(**params: Any) -> Any:
            writes = ("put_item", "update_item", "transact_write_items", "batch_write_item")
            if not self.failed and name in writes and '"SPACES"' in json.dumps(params, default=str):
                self.failed = True
                raise ClientError({"Error": {"Code": "InternalServerError", "Message": "injected"}}, name)
            return call(**params)

        return wrapped


def test_a_space_whose_listing_failed_once_is_still_checked(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    faulty = FailOnce(rt.db.client)
    monkeypatch.setattr(rt.db, "client", faulty)
    fresh = "/v1/spaces/fresh/jobs"
    answer = api.post(fresh, {"name": "n"})
    assert faulty.failed
    if answer.status != 200:
        answer = api.post(fresh, {"name": "n"})  # the client tries again
    job_id = answer.body["id"]
    clock.advance(7 * DAY)
    bg.tick()
    assert api.get(f"{fresh}/{job_id}").body["status"] == "FAILED"
    bg.stream()
    assert api.get("/v1/spaces/fresh").body["inFlight"] == 0, "no cap: the stream's count"


def test_on_aws_a_name_is_looked_at_once_a_period_and_at_its_end(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock
) -> None:
    """A name's never-claimed check is filed once a period (a minute on AWS), by the first
    job of the period to fall due, with a second at the period's end: a job falling due
    later in the period fails at most a period late, and a name with jobs arriving all day
    costs the clock two looks a period, not one a job."""
    every = Config.default("unclaimed_every_ms")
    rt.stream.unclaimed_every_ms = rt.sweeper.never_claimed.every_ms = every  # AWS's, not emit dev's
    clock.advance(every - (clock.now_ms() + 7 * DAY) % every + 10_000)  # due 10 s into a period
    first = api.post(JOBS, {"name": "n"}).body["id"]
    bg.tick()
    clock.advance(20_000)
    later = api.post(JOBS, {"name": "n"}).body["id"]
    bg.tick()
    clock.advance(7 * DAY - 20_000)
    bg.tick()
    assert [status(api, j)[0] for j in (first, later)] == ["FAILED", "PENDING"]
    clock.advance(20_000)  # the later job's window has passed, but no look is filed then
    bg.tick()
    assert status(api, later)[0] == "PENDING"
    clock.advance(every - clock.now_ms() % every)  # the period's end
    bg.tick()
    assert status(api, later) == ("FAILED", "not claimed within 7d")


def test_the_window_holds_in_both_lanes_whatever_the_priority_and_aging(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    """Due jobs are kept by order of hand-out, not by ready time: the look still finds the
    lowest and the highest priorities, under aging and under strict priority, and the
    delayed jobs by their ready time."""
    api.patch("/v1/spaces/work/names/strict/policy", {"agingIntervalMs": None})
    jobs = [
        {"name": "n", "priority": -1_000},
        {"name": "n", "priority": 1_000},
        {"name": "strict", "priority": -1_000},
        {"name": "strict", "priority": 1_000},
        {"name": "n", "priority": -5, "delayMs": 1_000},
    ]
    *due, delayed = (j["id"] for j in api.post(JOBS, jobs).body["jobs"])
    clock.advance(7 * DAY - 1)
    bg.tick()
    assert {status(api, j)[0] for j in [*due, delayed]} == {"PENDING"}
    clock.advance(1)
    bg.tick()
    assert [status(api, j)[0] for j in due] == ["FAILED"] * 4
    assert status(api, delayed)[0] == "PENDING"
    clock.advance(1_000)
    bg.tick()
    assert status(api, delayed) == ("FAILED", "not claimed within 7d")


@pytest.mark.parametrize("paused_by", ["name", "space"])
def test_a_paused_name_waits_the_window_from_when_it_was_resumed(
    api: Api, bg: Background, clock: ManualClock, paused_by: str
) -> None:
    """Paused, nothing of the name is claimable: its jobs wait the pause out, then the
    whole window again (a name paused over a long weekend does not lose its backlog)."""
    policy = "/v1/spaces/work/names/n/policy"
    pause = (
        (lambda on: api.patch(policy, {"paused": on}))
        if paused_by == "name"
        else (lambda on: api.patch("/v1/spaces/work", {"policy": {"paused": on}}))
    )
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    pause(True)
    clock.advance(10 * DAY)
    bg.tick()
    assert status(api, job_id) == ("PENDING", None)
    pause(False)
    fails_unclaimed_after(api, bg, clock, job_id, 7 * DAY, no_error_before=True)


def test_jobs_behind_a_used_up_concurrency_wait_on_it_not_the_window(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    api.patch("/v1/spaces/work", {"unclaimedMs": 60_000})
    api.patch("/v1/spaces/work/names/n/policy", {"concurrency": 1})
    first, second = (j["id"] for j in api.post(JOBS, [{"name": "n"}] * 2).body["jobs"])
    assert [j["id"] for j in api.post(f"{JOBS}:claim", {"count": 2, "leaseMs": 600_000}).body["jobs"]] == [
        first
    ]
    clock.advance(120_000)
    bg.tick()
    assert status(api, second) == ("PENDING", None), "its workers are busy with the name"
    api.post(f"{JOBS}:report", {"id": first, "attempt": 1, "complete": {}})
    bg.tick()
    assert status(api, second) == ("FAILED", "not claimed within 1m"), (
        "with room, it counts from its ready time"
    )


def test_jobs_of_a_key_with_room_fail_unclaimed_and_jobs_of_a_full_key_wait(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    """A keyed job nobody asks for fails like any other; one waiting behind its key's
    running job waits on the key."""
    api.patch("/v1/spaces/work", {"unclaimedMs": 60_000})
    typo = api.post(JOBS, {"name": "typo", "concurrencyKey": "k"}).body["id"]
    first, behind = (j["id"] for j in api.post(JOBS, [{"name": "n", "concurrencyKey": "k"}] * 2).body["jobs"])
    assert [
        j["id"]
        for j in api.post(f"{JOBS}:claim", {"names": ["n"], "count": 2, "leaseMs": 600_000}).body["jobs"]
    ] == [first]
    fails_unclaimed_after(api, bg, clock, typo, 60_000, window="1m")
    assert status(api, behind) == ("PENDING", None)


def test_a_shorter_window_covers_the_jobs_already_waiting(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    """Jobs filed under the 7-day window: made shorter, it counts for them too, from their
    ready times (the change files every name's check now and on until the window has passed)."""
    old = api.post(JOBS, {"name": "n"}).body["id"]
    bg.tick()
    clock.advance(2 * 3_600_000)
    recent = api.post(JOBS, {"name": "m"}).body["id"]
    bg.tick()
    clock.advance(30 * 60_000)
    assert api.patch("/v1/spaces/work", {"unclaimedMs": 3_600_000}).status == 200
    bg.tick()
    assert status(api, old) == ("FAILED", "not claimed within 1h")
    assert status(api, recent)[0] == "PENDING"
    clock.advance(30 * 60_000 - 1)
    bg.tick()
    assert status(api, recent) == ("PENDING", None)
    clock.advance(1_000)  # within a period of its window (a second locally)
    bg.tick()
    assert status(api, recent) == ("FAILED", "not claimed within 1h")
