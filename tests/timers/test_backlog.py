"""The deployment's claimable backlog and oldest claimable age, which the clock publishes
(`shared.backlog`): counted from the stream by the minute each job has waited since, read
by the clock in a few queries whatever the number of spaces."""

from __future__ import annotations

from typing import Any

from shared.clock import ManualClock
from tests.support import Api, Background

SPACE = "/v1/spaces/plain"
JOBS = f"{SPACE}/jobs"
MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR


def backlog(bg: Background) -> dict[str, Any]:
    return dict(bg.tick()["backlog"])


def test_a_stack_that_never_had_a_backlog_publishes_nothing(bg: Background) -> None:
    assert backlog(bg) == {"claimable": 0, "oldestAgeS": 0.0, "published": False}


def test_the_backlog_counts_jobs_whose_time_has_come_and_the_oldest_ones_wait(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    start = clock.now_ms()
    first = api.created(SPACE, "resize")
    api.created(SPACE, "resize")
    api.created("/v1/spaces/other", "mail")
    api.created(SPACE, "resize", delayMs=5 * MINUTE)
    shown = backlog(bg)
    assert shown["claimable"] == 3, "the delayed job waits from its time, not before"
    assert shown["published"] is True
    clock.advance(3 * MINUTE)
    shown = backlog(bg)
    since = start // MINUTE * MINUTE  # counted by the minute
    assert shown["oldestAgeS"] == (clock.now_ms() - since) / 1000
    clock.advance(3 * MINUTE)
    assert backlog(bg)["claimable"] == 4

    claimed = api.claimed(SPACE, 3, names=["resize"])
    assert first in claimed
    for job in claimed:
        api.post(f"{JOBS}:report", {"id": job, "attempt": 1, "complete": {}})
    assert backlog(bg)["claimable"] == 1  # the other space's mail

    clock.advance(2 * HOUR)
    shown = backlog(bg)
    assert (shown["claimable"], shown["oldestAgeS"]) == (1, (clock.now_ms() - since) / 1000)
    clock.advance(3 * DAY)  # days old: the days between read by their hours
    shown = backlog(bg)
    assert (shown["claimable"], shown["oldestAgeS"]) == (1, (clock.now_ms() - since) / 1000)
    api.created(SPACE, "resize")
    assert backlog(bg)["claimable"] == 2, "today's minutes too"
    [fresh] = api.claimed(SPACE, names=["resize"])
    api.post(f"{JOBS}:report", {"id": fresh, "attempt": 1, "complete": {}})
    [mail] = api.claimed("/v1/spaces/other")
    api.post("/v1/spaces/other/jobs:report", {"id": mail, "attempt": 1, "complete": {}})
    shown = backlog(bg)
    assert shown == {"claimable": 0, "oldestAgeS": 0.0, "published": True}, "zeros, for scale-in"
    clock.advance(16 * MINUTE)
    assert backlog(bg)["published"] is False, "then nothing: a metric is billed by the hour"


def test_a_retry_waits_from_its_backoffs_end_and_a_tick_twice_counts_the_same(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job = api.created(SPACE, "resize", backoffMs=10 * MINUTE)
    [claimed] = api.claimed(SPACE)
    assert claimed == job
    failed = api.post(f"{JOBS}:report", {"id": job, "attempt": 1, "fail": {"error": "boom"}})
    assert failed.body["outcomes"][0]["status"] == "PENDING"
    assert backlog(bg)["claimable"] == 0, "in its backoff"
    clock.advance(11 * MINUTE)
    ready = backlog(bg)
    assert ready["claimable"] == 1 and 0 < ready["oldestAgeS"] <= 120
    assert backlog(bg) == ready, "a tick again finds the same"


def test_a_listed_name_publishes_its_own_minute_and_backlog_once_a_minute(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    listed = api.patch(SPACE, {"metrics": ["resize"]})
    assert listed.body["metrics"] == ["resize"]
    for _ in range(3):
        api.created(SPACE, "resize")
    api.created(SPACE, "mail")
    bg.stream()  # within the minute, as on AWS: a minute's counts are the stream's then
    clock.advance(MINUTE)
    [point] = bg.tick()["names"]
    assert point == {"space": "plain", "name": "resize", "events": {"JobsCreated": 3}, "claimable": 3}
    [again] = bg.tick()["names"]
    assert again["events"] == {}, "a minute's counts are published once, however often the clock ticks"
    assert again["claimable"] == 3

    for job in api.claimed(SPACE, 3, names=["resize"]):
        api.post(f"{JOBS}:report", {"id": job, "attempt": 1, "complete": {}})
    bg.stream()
    clock.advance(MINUTE)
    [point] = bg.tick()["names"]
    assert point["events"] == {"JobsClaimed": 3, "JobsCompleted": 3}
    assert point["claimable"] == 0

    assert api.patch(SPACE, {"metrics": []}).body["metrics"] == []
    assert bg.tick()["names"] == []


def test_metrics_names_are_checked(api: Api) -> None:
    bad = api.patch(SPACE, {"metrics": ["bad name"]})
    assert bad.status == 400 and "metrics[0]" in bad.body["message"]
    twice = api.patch(SPACE, {"metrics": ["a", "a"]})
    assert twice.status == 400 and "metrics" in twice.body["message"]
    many = api.patch(SPACE, {"metrics": [f"n{i}" for i in range(21)]})
    assert many.status == 400 and "metrics" in many.body["message"]
