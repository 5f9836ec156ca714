"""Counts for every name and space, kept from the stream (`shared.counts`), once each
record however often it is delivered."""

from __future__ import annotations

from typing import Any

import pytest

from devserver.background import handler as function
from devserver.gateway import LambdaContext
from shared.clock import ManualClock
from shared.runtime import Runtime
from tests.support import Api, Background

SPACE = "/v1/spaces/plain"
MINUTE = 60_000
JOBS = f"{SPACE}/jobs"


def in_flight(api: Api) -> tuple[int, int]:
    """(GET space's inFlight, the spaces list's)."""
    listed = {s["name"]: s["inFlight"] for s in api.get("/v1/spaces").body["spaces"]}
    return api.get(SPACE).body["inFlight"], listed["plain"]


def running(api: Api) -> dict[str, int]:
    return {n["name"]: n["running"] for n in api.get(f"{SPACE}/diagnostics").body["names"]}


def test_a_space_without_a_cap_counts_its_unfinished_jobs_and_each_name_its_running(
    api: Api, bg: Background
) -> None:
    ids = [api.created(SPACE, "resize") for _ in range(3)] + [api.created(SPACE, "email")]
    bg.stream()
    assert in_flight(api) == (4, 4)
    claimed = api.claimed(SPACE, 2, names=["resize"])
    bg.stream()
    assert running(api) == {"resize": 2, "email": 0}
    done = api.post(f"{JOBS}:report", {"id": claimed[0], "attempt": 1, "complete": {}})
    assert done.body["outcomes"] == [{"status": "COMPLETED"}]
    api.post(f"{JOBS}:cancel", {"ids": [ids[3]]})
    bg.stream()
    assert running(api) == {"resize": 1}  # email has nothing left: not listed
    assert in_flight(api) == (2, 2)


def test_a_record_delivered_again_counts_once(api: Api, bg: Background) -> None:
    for _ in range(3):
        api.created(SPACE, "resize")
    records = bg.stream()
    bg.stream(records)  # the same batch again, as Lambda does after a timeout
    assert in_flight(api) == (3, 3)


def test_a_retry_with_more_records_counts_only_the_new_ones(api: Api, bg: Background) -> None:
    api.created(SPACE, "resize")
    first = bg.records()
    bg.stream(first)
    api.created(SPACE, "resize")
    grown = first + bg.records()  # a retry of the first batch, grown since
    bg.stream(grown)
    assert in_flight(api) == (2, 2)


def test_a_batch_whose_effects_fail_at_a_record_counts_whole_and_its_retry_nothing_twice(
    api: Api, bg: Background, monkeypatch: Any
) -> None:
    for _ in range(4):
        api.created(SPACE, "resize")
    records = bg.records()
    jobs = [i for i, r in enumerate(records) if r["dynamodb"]["Keys"]["pk"]["S"].startswith("J#")]
    third = jobs[2]
    stream = bg.runtime.stream
    real = stream.effects
    failing = {stream.read(records[third]).counted.record_id}

    def flaky(read: Any) -> Any:
        if read.counted.record_id in failing:
            raise RuntimeError("the third job's record fails")
        return real(read)

    monkeypatch.setattr(stream, "effects", flaky)
    answer = function("stream_handler")({"Records": records}, LambdaContext("stream_handler", 300, 512))
    failed = [f["itemIdentifier"] for f in answer["batchItemFailures"]]
    assert failed == [records[third]["dynamodb"]["SequenceNumber"]]
    assert in_flight(api) == (4, 4)  # counted before the effects, the failed record's too
    api.created(SPACE, "resize")
    bg.stream(records[third:] + bg.records())  # Lambda's retry, from the failed record, grown since
    assert in_flight(api) == (5, 5)
    bg.stream(records[third:])  # and once more, as the retries go on until the dead-letter queue
    assert in_flight(api) == (5, 5)


def test_metrics_show_each_names_last_hour_a_point_a_minute(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    for _ in range(3):
        api.created(SPACE, "resize")
    api.created(SPACE, "email")
    bg.stream()
    clock.advance(MINUTE)
    [job] = api.claimed(SPACE, names=["resize"])
    api.post(f"{JOBS}:report", {"id": job, "attempt": 1, "complete": {}})
    bg.stream()
    clock.advance(MINUTE)
    shown = api.get(f"{SPACE}/metrics").body
    assert shown["stepMs"] == MINUTE
    assert [n["name"] for n in shown["names"]] == ["email", "resize"]
    points = {n["name"]: n["points"] for n in shown["names"]}
    assert len(points["resize"]) == 60
    assert [p["atMs"] for p in points["resize"]][-3:] == [shown["fromMs"] + i * MINUTE for i in (57, 58, 59)]
    made, done, now = points["resize"][-3:]
    assert (made["created"], made["pending"], made["running"]) == (3, 3, 0)
    assert (done["claimed"], done["completed"], done["pending"], done["running"]) == (1, 1, 2, 0)
    assert (now["created"], now["pending"]) == (0, 2)
    assert all(p["pending"] == 0 and p["created"] == 0 for p in points["resize"][:-3])
    only = api.get(f"{SPACE}/metrics", query={"name": "email"}).body
    assert [n["name"] for n in only["names"]] == ["email"]
    assert api.get("/v1/spaces/nowhere/metrics").status == 404
    assert api.get(f"{SPACE}/metrics", query={"name": "bad name"}).status == 400


HOUR = 3_600_000
EVERY = 6 * HOUR
"""The recounts' period here (a day by default): within a lease of 12 hours, so the jobs
claimed are still running when the recount comes."""
LONG = {"leaseMs": 12 * HOUR}


@pytest.fixture(autouse=True)
def six_hourly(rt: Runtime) -> None:
    rt.recount.every_ms = EVERY


def claim(api: Api, count: int) -> None:
    answer = api.post(f"{JOBS}:claim", {"count": count, "names": ["resize"]} | LONG)
    assert answer.status == 200 and len(answer.body["jobs"]) == count, answer


def recount(bg: Background, clock: ManualClock) -> None:
    """The period ends: the clock surveys the space (a tick per 16 job partitions), and
    settles once every record of what the survey saw is past the stream's record age."""
    clock.advance(EVERY)
    for _ in range(4):
        bg.tick()
        clock.advance(MINUTE)
    clock.advance(bg.runtime.config.recount_settle_ms)
    bg.tick()


def test_counts_left_short_by_a_lost_batch_heal_at_the_days_recount(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    for _ in range(3):
        api.created(SPACE, "resize")
    bg.stream()
    claim(api, 2)
    api.created(SPACE, "resize")
    bg.records()  # the claims' and the create's records, lost to the dead-letter queue
    api.created(SPACE, "email")
    bg.stream()  # the stream counts on (and files the space's recount)
    assert running(api) == {"resize": 0, "email": 0}
    assert in_flight(api) == (4, 4)
    recount(bg, clock)
    assert running(api) == {"resize": 2, "email": 0}
    assert in_flight(api) == (5, 5)
    left = bg.runtime.dynamodb.scan(TableName=bg.runtime.table)["Items"]
    assert [i for i in left if i["pk"]["S"].startswith("RECOUNT#")] == []  # the survey's items gone


def test_a_recount_sets_nothing_where_the_stream_counted_since_its_survey(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    """A move counted after the survey read the jobs: the survey's count is stale, and
    setting it would lose the move. The name heals at a recount where it stood still."""
    for _ in range(2):
        api.created(SPACE, "resize")
    bg.stream()
    api.created(SPACE, "resize")
    bg.records()  # lost
    clock.advance(EVERY)
    bg.tick()  # the survey: three pending
    claim(api, 1)
    for _ in range(3):
        clock.advance(MINUTE)
        bg.tick()  # the claim counted: the name moved since the survey
    clock.advance(bg.runtime.config.recount_settle_ms)
    bg.tick()
    assert running(api) == {"resize": 1}
    assert in_flight(api) == (2, 2)  # still short by the lost create
    recount(bg, clock)
    assert in_flight(api) == (3, 3)


def test_a_batch_whose_counting_fails_has_its_space_recounted_once_its_retries_are_over(
    api: Api, bg: Background, clock: ManualClock, monkeypatch: Any
) -> None:
    api.created(SPACE, "resize")
    records = bg.records()

    def down(*args: Any) -> Any:
        raise RuntimeError("DynamoDB is not answering the counts' transaction")

    monkeypatch.setattr(bg.runtime.tallies, "count", down)
    for _ in range(3):  # every retry fails: the batch goes to the dead-letter queue
        with pytest.raises(RuntimeError):
            function("stream_handler")({"Records": records}, LambdaContext("stream_handler", 300, 512))
    monkeypatch.undo()
    assert in_flight(api) == (0, 0)
    clock.advance(bg.runtime.config.recount_settle_ms)
    for _ in range(4):
        bg.tick()
        clock.advance(MINUTE)
    clock.advance(bg.runtime.config.recount_settle_ms)
    bg.tick()
    assert in_flight(api) == (1, 1)
