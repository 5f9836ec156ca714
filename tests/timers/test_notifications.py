"""Failure and settled notifications: one notice job per ending and destination, from the
stream, whatever the stream does with its records (twice, reversed, replayed)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from ulid import ULID

from shared import limits
from shared.clock import ManualClock
from shared.job import Backoff, Job, JobStatus
from shared.jobs import notify
from shared.runtime import Runtime
from tests.support import Api, Background

SPACE = "notes"
JOBS = f"/v1/spaces/{SPACE}/jobs"
ON_FAILURE = {"name": "alert"}
ON_SETTLED = {"name": "audit", "statuses": ["COMPLETED", "FAILED", "CANCELLED", "STALLED"]}


def settings(api: Api, **fields: Any) -> dict[str, Any]:
    answer = api.patch(f"/v1/spaces/{SPACE}", fields)
    assert answer.status == 200, answer
    return dict(answer.body)


def ending(api: Api, how: dict[str, Any], name: str = "charge", **fields: Any) -> str:
    """A job of `name`, claimed and reported `how` (or cancelled)."""
    job_id = api.created(f"/v1/spaces/{SPACE}", name, **fields)
    if how == {"cancel": True}:
        assert api.post(f"{JOBS}:cancel", [job_id]).status == 200
        return job_id
    [held] = api.post(f"{JOBS}:claim", {"count": 1, "names": [name]}).body["jobs"]
    answer = api.post(f"{JOBS}:report", {"id": job_id, "attempt": held["attempt"], **how})
    assert answer.status == 200, answer
    return job_id


def notices(api: Api, name: str) -> list[dict[str, Any]]:
    """Every job of `name` in the space, oldest first, with its payload."""
    listed = api.get(JOBS, query={"name": name, "limit": 1000}).body["jobs"]
    return [api.get(f"{JOBS}/{job['id']}").body for job in reversed(listed)]


FAIL = {"fail": {"error": "card declined", "unrecoverable": True}}


def test_a_failed_job_sends_one_notice_to_each_destination(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    settings(api, onFailure=ON_FAILURE, onSettled=ON_SETTLED)
    job_id = ending(api, FAIL, maxAttempts=3)
    finished = api.get(f"{JOBS}/{job_id}").body["finishedAtMs"]
    bg.stream()
    [alert] = notices(api, "alert")
    [audit] = notices(api, "audit")
    common = {
        "jobId": job_id,
        "name": "charge",
        "status": "FAILED",
        "attempts": 1,
        "maxAttempts": 3,
        "error": "card declined",
        "result": None,
    }
    assert alert["payload"] == common | {"failedAtMs": finished}
    assert audit["payload"] == common | {"settledAtMs": finished}
    # Ordinary jobs: pending, claimable, listed.
    assert alert["status"] == audit["status"] == "PENDING"
    [claimed] = api.post(f"{JOBS}:claim", {"count": 1, "names": ["alert"]}).body["jobs"]
    assert claimed["id"] == alert["id"] and claimed["payload"] == alert["payload"]


def test_a_completed_job_settles_with_its_result_and_sends_no_failure_notice(
    api: Api, bg: Background
) -> None:
    settings(api, onFailure=ON_FAILURE, onSettled={"name": "audit", "statuses": ["COMPLETED"]})
    job_id = ending(api, {"complete": {"result": {"receipt": "r_1"}}})
    bg.stream()
    assert notices(api, "alert") == []
    [audit] = notices(api, "audit")
    assert audit["payload"]["jobId"] == job_id
    assert audit["payload"]["status"] == "COMPLETED"
    assert audit["payload"]["result"] == {"receipt": "r_1"}
    assert audit["payload"]["error"] is None


@pytest.mark.parametrize("how", [{"cancel": True}, {"complete": {"result": 1}}])
def test_settled_covers_only_its_statuses(api: Api, bg: Background, how: dict[str, Any]) -> None:
    settings(api, onSettled={"name": "audit", "statuses": ["FAILED"]})
    ending(api, how)
    bg.stream()
    assert notices(api, "audit") == []


def test_records_fed_twice_and_reversed_make_one_notice_each(api: Api, bg: Background) -> None:
    settings(api, onFailure=ON_FAILURE, onSettled=ON_SETTLED)
    ids = [ending(api, FAIL), ending(api, {"cancel": True}), ending(api, {"complete": {"result": 2}})]
    records = bg.records()
    bg.stream(list(reversed(records)))
    bg.stream(records)
    bg.stream(records + list(reversed(records)))
    assert [n["payload"]["jobId"] for n in notices(api, "alert")] == [ids[0]]
    assert sorted(n["payload"]["jobId"] for n in notices(api, "audit")) == sorted(ids)


def test_jobs_of_destination_names_send_none(api: Api, bg: Background) -> None:
    settings(api, onFailure=ON_FAILURE, onSettled=ON_SETTLED)
    ending(api, FAIL, name="alert")
    ending(api, FAIL, name="audit")
    bg.stream()
    # Only the two jobs made here: neither sent a notice to the other, nor to itself.
    assert len(notices(api, "alert")) == 1 and len(notices(api, "audit")) == 1
    bg.stream()
    assert len(notices(api, "alert")) == 1 and len(notices(api, "audit")) == 1


def test_jobs_that_ended_before_the_setting_are_not_covered(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    ending(api, FAIL)  # ended; the stream has not read its record yet
    clock.advance(1)
    settings(api, onFailure=ON_FAILURE)
    later = ending(api, FAIL)
    bg.stream()
    assert [n["payload"]["jobId"] for n in notices(api, "alert")] == [later]


def test_a_setting_changed_keeps_covering_jobs_that_ended_since_it_was_made(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    made = settings(api, onFailure=ON_FAILURE)["onFailure"]
    job_id = ending(api, FAIL)
    clock.advance(1)
    changed = settings(api, onFailure={"name": "pager"})["onFailure"]
    assert changed == {"name": "pager", "sinceMs": made["sinceMs"]}
    bg.stream()
    assert [n["payload"]["jobId"] for n in notices(api, "pager")] == [job_id]


def test_a_setting_made_after_a_stream_read_is_seen(api: Api, bg: Background, clock: ManualClock) -> None:
    """The stream's read of the settings answers only for jobs that ended before it."""
    ending(api, FAIL)
    bg.stream()  # read the (empty) settings
    clock.advance(1)
    settings(api, onFailure=ON_FAILURE)
    job_id = ending(api, FAIL)
    bg.stream()
    assert [n["payload"]["jobId"] for n in notices(api, "alert")] == [job_id]


def test_settings_show_and_clear_destinations(api: Api, clock: ManualClock) -> None:
    shown = settings(
        api, onFailure=ON_FAILURE, onSettled={"name": "audit", "statuses": ["FAILED", "COMPLETED"]}
    )
    assert shown["onFailure"] == {"name": "alert", "sinceMs": clock.now_ms()}
    assert shown["onSettled"] == {
        "name": "audit",
        "statuses": ["COMPLETED", "FAILED"],
        "sinceMs": clock.now_ms(),
    }
    cleared = settings(api, onFailure=None, onSettled=None)
    assert cleared["onFailure"] is None and cleared["onSettled"] is None
    assert api.get(f"/v1/spaces/{SPACE}").body["onFailure"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"onFailure": {}}, "onFailure.name"),
        ({"onFailure": {"name": "bad name"}}, "onFailure.name"),
        ({"onFailure": {"name": "a", "statuses": ["FAILED"]}}, "onFailure.statuses"),
        ({"onSettled": {"name": "a"}}, "onSettled.statuses"),
        ({"onSettled": {"name": "a", "statuses": []}}, "onSettled.statuses"),
        ({"onSettled": {"name": "a", "statuses": ["PENDING"]}}, "onSettled.statuses[0]"),
        ({"onSettled": {"name": "a", "statuses": ["FAILED", "FAILED"]}}, "onSettled.statuses"),
        ({"onSettled": "audit"}, "onSettled"),
    ],
)
def test_bad_destinations_are_refused_naming_the_field(api: Api, body: dict[str, Any], field: str) -> None:
    answer = api.patch(f"/v1/spaces/{SPACE}", body)
    assert answer.status == 400, answer
    assert answer.body["message"].startswith(f"{field}:"), answer.body


COUNTS = ("TALLIED#", "CNT#", "MIN#", "WAIT#", "WAITH#")
"""The stream's counts (`shared.store.tallies`): a batch's own writes, the notices' none."""


def _counts_only(kwargs: dict[str, Any]) -> bool:
    items = [next(iter(action.values())) for action in kwargs.get("TransactItems", [])]
    keys = [item.get("Key") or item.get("Item") or {} for item in items]
    return bool(keys) and all(k.get("pk", {}).get("S", "").startswith(COUNTS) for k in keys)


def writes_of(rt: Runtime, act: Callable[[], object]) -> list[str]:
    """The table's write calls `act` makes, in order (but the stream's counts, and the
    recount it files for them once a day, `shared.recount`). A create's
    sampled count of its name's load (one create in `spread.SAMPLE`, by chance) is turned off
    meanwhile: it is the spread's write (tests/api/test_spread.py), not the notice's, and
    it made this count fail one run in twenty."""
    writes: list[str] = []
    client = rt.db.client
    sampling, rt.context.spreader.rand = rt.context.spreader.rand, lambda: 1.0
    recount, rt.stream.recount = rt.stream.recount, None
    real = {name: getattr(client, name) for name in ("put_item", "update_item", "transact_write_items")}

    def counting(name: str) -> Any:
        def call(**kwargs: Any) -> Any:
            if not _counts_only(kwargs):
                writes.append(name)
            return real[name](**kwargs)

        return call

    for name in real:
        setattr(client, name, counting(name))
    try:
        act()
    finally:
        for name, method in real.items():
            setattr(client, name, method)
        rt.context.spreader.rand = sampling
        rt.stream.recount = recount
    return writes


def test_nothing_configured_costs_no_write(api: Api, bg: Background, rt: Runtime) -> None:
    # Without a never-claimed window too: a job back to pending files its name's check
    # (once a period, `shared.unclaimed`), which is not the notices' doing.
    settings(api, maxAttempts=2, unclaimedMs=None)
    ending(api, FAIL)
    records = bg.records()
    assert writes_of(rt, lambda: bg.stream(records)) == []


def test_a_notice_is_one_conditional_put_and_a_replay_one_refused_put(
    api: Api, bg: Background, rt: Runtime
) -> None:
    """No marker, no transaction: the notice job's id comes from its ending, and its put is
    refused when the job exists. (The first notice of a name also lists the name, once.)
    No never-claimed window: a new job files its name's check, once a period."""
    settings(api, onFailure=ON_FAILURE, unclaimedMs=None)
    ending(api, FAIL)
    bg.stream()
    job_id = ending(api, FAIL)
    finished = api.get(f"{JOBS}/{job_id}").body["finishedAtMs"]
    records = bg.records()
    assert writes_of(rt, lambda: bg.stream(records)) == ["put_item"]
    assert writes_of(rt, lambda: bg.stream(list(reversed(records)))) == ["put_item"]
    # Two notices made in one millisecond of the test clock: found by the job they are about.
    [alert] = [n for n in notices(api, "alert") if n["payload"]["jobId"] == job_id]
    assert len(notices(api, "alert")) == 2
    assert alert["id"] == notify.notice_id(SPACE, job_id, "onFailure", finished)
    assert ULID.from_str(alert["id"]).milliseconds == finished
    assert alert["id"] != notify.notice_id(SPACE, job_id, "onSettled", finished)


@pytest.mark.parametrize("size", [3_000, 400_000], ids=["side item", "s3"])
def test_a_large_notice_fed_twice_is_made_once_and_keeps_its_payload(
    api: Api, bg: Background, rt: Runtime, size: int
) -> None:
    """A notice whose payload lives outside its job item (a side item, in the job's
    transaction; or S3, written first under the job's id): a replay leaves one job, its
    payload whole, and nothing else behind."""
    settings(api, onSettled={"name": "audit", "statuses": ["COMPLETED"]})
    result = {"blob": os.urandom(size).hex()}
    job_id = ending(api, {"complete": {"result": result}})
    records = bg.records()
    bg.stream(records)
    bg.stream(records + list(reversed(records)))
    [audit] = notices(api, "audit")
    assert audit["payload"]["jobId"] == job_id and audit["payload"]["result"] == result
    side = rt.dynamodb.scan(
        TableName=rt.table,
        FilterExpression="begins_with(pk, :b)",
        ExpressionAttributeValues={":b": {"S": f"B#{SPACE}#"}},
    )["Items"]
    objects = rt.s3.list_objects_v2(Bucket=rt.bucket).get("KeyCount", 0)
    assert len(side) + objects == 2, "the result and the notice's payload, once each"


def test_a_notice_fed_twice_under_max_in_flight_is_counted_once(api: Api, bg: Background) -> None:
    settings(api, onFailure=ON_FAILURE, maxInFlight=5)
    ending(api, FAIL)
    records = bg.records()
    bg.stream(records)
    bg.stream(records + list(reversed(records)))
    [alert] = notices(api, "alert")
    assert alert["status"] == "PENDING"
    assert api.get(f"/v1/spaces/{SPACE}").body["inFlight"] == 1


def test_a_full_space_counts_a_notice_but_never_refuses_it(api: Api, bg: Background) -> None:
    settings(api, onFailure=ON_FAILURE, maxInFlight=2)
    ending(api, FAIL)
    api.created(f"/v1/spaces/{SPACE}", "charge")
    api.created(f"/v1/spaces/{SPACE}", "charge")
    assert api.post(JOBS, {"name": "charge"}).status == 429  # full: two unfinished
    bg.stream()
    [alert] = notices(api, "alert")
    assert alert["status"] == "PENDING"
    assert api.get(f"/v1/spaces/{SPACE}").body["inFlight"] == 3  # counted, over the cap


def test_a_result_too_large_for_the_notice_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    item = Job(
        id="01J",
        space=SPACE,
        name="n",
        status=JobStatus.COMPLETED,
        attempt=1,
        failures=0,
        max_attempts=4,
        timeout_ms=1_000,
        backoff=Backoff("exponential", 1_000, 60_000, False),
        created_at_ms=0,
        run_at_ms=0,
        finished_at_ms=5,
    )
    assert notify.notice("onSettled", item, None, {"r": 1})["result"] == {"r": 1}
    assert notify.notice("onFailure", item, None, {"r": 1})["result"] is None
    monkeypatch.setattr(limits, "MAX_PAYLOAD_BYTES", 200)
    big = notify.notice("onSettled", item, None, {"r": "x" * 300})
    assert big["result"] is None and big["resultOmitted"] is True and big["settledAtMs"] == 5


def test_a_notice_of_a_result_at_the_depth_limit_stays_within_it_and_can_be_retried(
    api: Api, bg: Background
) -> None:
    """A result may be 64 levels deep; the notice wrapping it would be 65, deeper than any
    payload a create accepts. The result is left out instead (the job has it), so the
    notice is a job like any other: when it fails, `jobs:retry` copies it."""
    settings(api, onSettled={"name": "audit", "statuses": ["COMPLETED"]})
    deep: Any = "bottom"
    for _ in range(64):
        deep = [deep]
    job_id = ending(api, {"complete": {"result": deep}})
    assert api.get(f"{JOBS}/{job_id}").body["result"] == deep, "the job keeps its whole result"
    bg.stream()
    [audit] = notices(api, "audit")
    assert audit["payload"]["jobId"] == job_id
    assert (audit["payload"]["result"], audit["payload"]["resultOmitted"]) == (None, True)
    [held] = api.post(f"{JOBS}:claim", {"count": 1, "names": ["audit"]}).body["jobs"]
    failing = {"id": audit["id"], "attempt": held["attempt"], "fail": {"error": "x", "unrecoverable": True}}
    assert api.post(f"{JOBS}:report", failing).body["outcomes"] == [{"status": "FAILED"}]
    answer = api.post(f"{JOBS}:retry", [audit["id"]])
    assert answer.status == 200 and answer.body["outcomes"][0]["outcome"] == "NEW", answer
    again = api.get(f"{JOBS}/{answer.body['outcomes'][0]['id']}").body
    assert again["payload"] == audit["payload"]


def test_a_stalled_job_sends_a_failure_notice_and_notices_skip_the_names_defaults(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    settings(api, onFailure=ON_FAILURE, jobDefaults={"alert": {"delayMs": 3_600_000, "priority": 5}})
    job_id = api.created(f"/v1/spaces/{SPACE}", "charge", guarantee="AT_MOST_ONCE", maxAttempts=3)
    api.post(f"{JOBS}:claim", {"count": 1, "names": ["charge"], "leaseMs": 1_000})
    clock.advance(1_000)
    bg.tick()
    bg.stream()
    [alert] = notices(api, "alert")
    assert (alert["payload"]["jobId"], alert["payload"]["status"]) == (job_id, "STALLED")
    assert alert["payload"]["error"] == "lease expired"
    assert (alert["priority"], alert["runAtMs"]) == (0, alert["createdAtMs"]), "no jobDefaults"


def test_a_notice_carries_the_ended_jobs_traceparent(api: Api, bg: Background) -> None:
    traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    settings(api, onFailure=ON_FAILURE, onSettled=ON_SETTLED)
    ending(api, FAIL, traceparent=traced)
    ending(api, {"complete": {"result": 1}})
    bg.stream()
    [alert] = notices(api, "alert")
    assert alert["traceparent"] == traced
    # Found by what they are about: two notices of one millisecond list in either order.
    audit = {n["payload"]["status"]: n for n in notices(api, "audit")}
    assert audit["FAILED"]["traceparent"] == traced and "traceparent" not in audit["COMPLETED"]
    [held] = api.post(f"{JOBS}:claim", {"count": 1, "names": ["alert"]}).body["jobs"]
    assert held["traceparent"] == traced
