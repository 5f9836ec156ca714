"""The unclaimed window, driven by the clock handler."""

from __future__ import annotations

from shared.clock import ManualClock
from shared.runtime import Runtime
from tests.support import Api, Background

JOBS = "/v1/spaces/work/jobs"
DAY = 86_400_000


def status(api: Api, job_id: str) -> tuple[str, str | None]:
    body = api.get(f"{JOBS}/{job_id}").body
    return body["status"], body.get("error")


def test_a_job_nobody_claims_for_7_days_fails(api: Api, bg: Background, clock: ManualClock) -> None:
    job_id = api.post(JOBS, {"name": "typo-in-name"}).body["id"]
    clock.advance(7 * DAY - 1)
    bg.tick()
    assert status(api, job_id) == ("PENDING", None)
    clock.advance(1)
    bg.tick()
    assert status(api, job_id) == ("FAILED", "not claimed within 7d")
    assert api.get("/v1/spaces/work").body["inFlight"] == 0


def test_the_window_counts_from_when_the_job_could_first_be_claimed(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    api.patch("/v1/spaces/work", {"unclaimedMs": 2 * 3_600_000})
    job_id = api.post(JOBS, {"name": "n", "delayMs": DAY}).body["id"]
    clock.advance(DAY + 2 * 3_600_000 - 1)
    bg.tick()
    assert status(api, job_id)[0] == "PENDING"
    clock.advance(1)
    bg.tick()
    assert status(api, job_id) == ("FAILED", "not claimed within 2h")


def test_a_space_may_turn_the_window_off(api: Api, bg: Background, clock: ManualClock) -> None:
    api.patch("/v1/spaces/work", {"unclaimedMs": None})
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    clock.advance(30 * DAY)
    bg.tick()
    assert status(api, job_id)[0] == "PENDING"


def test_a_job_that_was_claimed_once_is_not_unclaimed(api: Api, bg: Background, clock: ManualClock) -> None:
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    api.post(f"{JOBS}:claim", {"count": 1})
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": 1, "release": {}})
    clock.advance(8 * DAY)
    bg.tick()
    assert status(api, job_id)[0] == "PENDING"


def test_on_a_minute_clock_never_claimed_jobs_are_looked_for_every_ten_minutes(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock
) -> None:
    """The tick that crosses a ten-minute mark looks; the others do not (its windows are days)."""
    rt.sweeper.unclaimed_every_ms = 600_000
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    clock.advance(7 * DAY)
    clock.advance(600_000 - clock.now_ms() % 600_000 + 60_000)  # one minute past a mark
    bg.tick(60_000)
    assert status(api, job_id)[0] == "PENDING", "this tick crossed no mark"
    clock.advance(600_000 - 60_000)  # on the next mark
    bg.tick(60_000)
    assert status(api, job_id)[0] == "FAILED"
