"""Deadlines (`expiresAtMs` / `expiresInMs`): through the handlers, with the clock moved by hand.

A job not finished by its deadline is cancelled with error `expired`: never handed out past
it (the claim's own write decides, before the clock has run), cancelled by the clock's next
tick when pending or running, and a running job's worker hears `ALREADY_FINISHED` at its
next report."""

from __future__ import annotations

from typing import Any

import pytest

from shared import limits
from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.store import deadlines
from tests.support import Api, Background

SPACE = "/v1/spaces/work"
JOBS = f"{SPACE}/jobs"


def job(api: Api, job_id: str) -> dict[str, Any]:
    answer = api.get(f"{JOBS}/{job_id}")
    assert answer.status == 200, answer
    return dict(answer.body)


def claim(api: Api, **body: Any) -> list[dict[str, Any]]:
    answer = api.post(f"{JOBS}:claim", {"count": 1, **body})
    assert answer.status == 200, answer
    return list(answer.body["jobs"])


def report(api: Api, job_id: str, attempt: int, **parts: Any) -> dict[str, Any]:
    answer = api.post(f"{JOBS}:report", {"id": job_id, "attempt": attempt, **parts})
    assert answer.status == 200, answer
    return dict(answer.body["outcomes"][0])


def deadline_buckets(rt: Runtime) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    # Every partition the deadline book's maps name, due or not (as a tick long after would read).
    for partition in rt.jobs.deadlines.look(rt.clock.now_ms() + 2 * limits.YEAR_MS).partitions:
        found, _ = rt.db.query("pk = :pk", vals={":pk": partition}, limit=1000, consistent=True)
        rows += found
    return rows


# -- create ------------------------------------------------------------------------


def test_the_deadline_shows_on_the_job_from_either_field(api: Api, clock: ManualClock) -> None:
    now = clock.now_ms()
    by_time = api.created(SPACE, expiresAtMs=now + 60_000)
    by_wait = api.created(SPACE, expiresInMs=30_000)
    plain = api.created(SPACE)
    assert job(api, by_time)["expiresAtMs"] == now + 60_000
    assert job(api, by_wait)["expiresAtMs"] == now + 30_000
    assert job(api, plain)["expiresAtMs"] is None
    listed = {j["id"]: j["expiresAtMs"] for j in api.get(JOBS).body["jobs"]}
    assert listed == {by_time: now + 60_000, by_wait: now + 30_000, plain: None}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"expiresAtMs": 1, "expiresInMs": 1}, "expiresInMs: give expiresAtMs or expiresInMs, not both"),
        ({"expiresInMs": 0}, "expiresInMs: must be at least 1"),
        ({"expiresInMs": limits.MAX_DELAY_MS + 1}, f"expiresInMs: must be at most {limits.MAX_DELAY_MS}"),
        ({"expiresAtMs": "soon"}, "expiresAtMs: must be an integer"),
        ({"expiresAtMs": -1}, "expiresAtMs: must be at least 0"),
    ],
)
def test_bad_deadlines_are_refused_naming_the_field(api: Api, fields: dict[str, Any], message: str) -> None:
    answer = api.post(JOBS, {"jobs": [{"name": "n"}, {"name": "n", **fields}]})
    assert answer.status == 400, answer
    assert answer.body["message"] == f"jobs[1].{message}"
    assert api.get(SPACE).status == 404, "nothing was kept"


def test_a_deadline_is_at_most_a_year_ahead_and_after_the_job_can_run(api: Api, clock: ManualClock) -> None:
    now = clock.now_ms()
    year = now + limits.MAX_DELAY_MS
    assert api.post(JOBS, {"name": "n", "expiresAtMs": year}).status == 200
    too_far = api.post(JOBS, {"name": "n", "expiresAtMs": year + 1})
    assert (too_far.status, too_far.body["message"]) == (
        400,
        f"expiresAtMs: must be at most a year ahead ({year})",
    )
    past = api.post(JOBS, {"name": "n", "expiresAtMs": now})
    assert (past.status, past.body["message"]) == (
        400,
        f"expiresAtMs: must be later than the job can first run ({now})",
    )
    before_run = api.post(JOBS, {"name": "n", "delayMs": 10_000, "expiresInMs": 10_000})
    assert (before_run.status, before_run.body["message"]) == (
        400,
        f"expiresInMs: must be later than the job can first run ({now + 10_000})",
    )


def test_jobs_without_a_deadline_write_nothing_to_the_deadline_book(api: Api, rt: Runtime) -> None:
    api.post(JOBS, {"jobs": [{"name": "n"} for _ in range(5)]})
    assert deadline_buckets(rt) == []
    api.post(
        JOBS, {"jobs": [{"name": "n", "expiresInMs": 1_000 * (i + 1)} for i in range(5)] + [{"name": "n"}]}
    )
    [bucket] = deadline_buckets(rt)
    assert len(deadlines.decode(bucket["jobs"])) == 5, (
        "one bucket a request, listing only the jobs with deadlines"
    )


# -- claims ------------------------------------------------------------------------


def test_no_claim_hands_out_a_job_past_its_deadline_even_before_the_clock(
    api: Api, clock: ManualClock
) -> None:
    late = api.created(SPACE, expiresInMs=5_000)
    clock.advance(1)
    behind = api.created(SPACE)  # after it, in the same order of hand-out
    clock.advance(4_999)
    assert [j["id"] for j in claim(api)] == [behind], "the expired job is skipped, the one behind it goes"
    found = job(api, late)
    assert (found["status"], found["error"]) == ("CANCELLED", "expired"), (
        "the claim that found it cancelled it"
    )
    assert claim(api) == []


def test_a_job_is_handed_out_up_to_its_deadline(api: Api, clock: ManualClock) -> None:
    job_id = api.created(SPACE, expiresInMs=5_000)
    clock.advance(4_999)
    assert [j["id"] for j in claim(api)] == [job_id]


# -- the clock ---------------------------------------------------------------------


def test_the_clock_cancels_a_pending_job_at_its_deadline_once(
    api: Api, bg: Background, clock: ManualClock, rt: Runtime
) -> None:
    api.patch(SPACE, {"maxInFlight": 10})
    job_id = api.created(SPACE, expiresInMs=5_000, delayMs=1_000)
    assert api.get(SPACE).body["inFlight"] == 1
    clock.advance(4_999)
    bg.tick(1_000)
    assert job(api, job_id)["status"] == "PENDING"
    clock.advance(1)
    bg.tick(1_000)
    found = job(api, job_id)
    assert (found["status"], found["error"], found["finishedAtMs"]) == (
        "CANCELLED",
        "expired",
        clock.now_ms(),
    )
    assert api.get(SPACE).body["inFlight"] == 0, "the cancel let its place in the count go"
    assert deadline_buckets(rt) == [], "the drained bucket is removed"
    bg.tick(1_000)  # a repeated tick changes nothing
    assert job(api, job_id)["finishedAtMs"] == found["finishedAtMs"]
    assert api.get(SPACE).body["inFlight"] == 0


def test_jobs_of_one_request_are_each_cancelled_at_their_own_deadline(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    now = clock.now_ms()
    ids = [
        o["id"]
        for o in api.post(
            JOBS,
            {"jobs": [{"name": "n", "expiresAtMs": now + 2_000}, {"name": "n", "expiresAtMs": now + 9_000}]},
        ).body["jobs"]
    ]
    clock.advance(2_000)
    bg.tick(1_000)
    assert [job(api, i)["status"] for i in ids] == ["CANCELLED", "PENDING"], "the later one was filed again"
    clock.advance(7_000)
    bg.tick(1_000)
    assert [job(api, i)["status"] for i in ids] == ["CANCELLED", "CANCELLED"]


def test_a_finished_job_is_left_alone_by_its_deadline(api: Api, bg: Background, clock: ManualClock) -> None:
    job_id = api.created(SPACE, expiresInMs=5_000)
    [held] = claim(api)
    assert report(api, job_id, held["attempt"], complete={"result": 1}) == {"status": "COMPLETED"}
    clock.advance(5_000)
    bg.tick(1_000)
    assert job(api, job_id)["status"] == "COMPLETED"


# -- running past the deadline -----------------------------------------------------


def test_a_report_past_the_deadline_cancels_the_job_and_answers_already_finished(
    api: Api, clock: ManualClock
) -> None:
    job_id = api.created(SPACE, expiresInMs=5_000)
    [held] = claim(api, leaseMs=60_000)
    clock.advance(4_000)
    assert report(api, job_id, held["attempt"], touch={}) == {"status": "RUNNING"}
    clock.advance(1_000)
    outcome = report(api, job_id, held["attempt"], complete={"result": "late"})
    assert outcome["rejection"]["reason"] == "ALREADY_FINISHED"
    found = job(api, job_id)
    assert (found["status"], found["error"]) == ("CANCELLED", "expired"), (
        "the report cancelled it, not completed"
    )
    again = report(api, job_id, held["attempt"], complete={"result": "late"})
    assert again["rejection"]["reason"] == "ALREADY_FINISHED"


def test_the_clock_cancels_a_running_job_and_its_worker_hears_at_its_next_report(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    api.patch(SPACE, {"maxInFlight": 10})
    job_id = api.created(SPACE, expiresInMs=5_000)
    [held] = claim(api, leaseMs=60_000)
    clock.advance(5_000)
    bg.tick(1_000)
    found = job(api, job_id)
    assert (found["status"], found["error"]) == ("CANCELLED", "expired")
    assert api.get(SPACE).body["inFlight"] == 0
    outcome = report(api, job_id, held["attempt"], progress={"percent": 50})
    assert outcome["rejection"]["reason"] == "ALREADY_FINISHED"


# -- retries -----------------------------------------------------------------------


def test_a_retry_that_could_not_start_before_the_deadline_fails_the_job_at_once(
    api: Api, clock: ManualClock
) -> None:
    job_id = api.created(
        SPACE, expiresInMs=10_000, backoffMs=10_000, backoff={"kind": "constant", "jitter": False}
    )
    [held] = claim(api)
    assert report(api, job_id, held["attempt"], fail={"error": "boom"}) == {"status": "FAILED"}
    found = job(api, job_id)
    assert (found["status"], found["error"], found["failures"]) == ("FAILED", "boom", 1)


def test_a_retry_that_can_start_before_the_deadline_waits_as_usual(api: Api, clock: ManualClock) -> None:
    job_id = api.created(
        SPACE, expiresInMs=10_000, backoffMs=9_000, backoff={"kind": "constant", "jitter": False}
    )
    [held] = claim(api)
    assert report(api, job_id, held["attempt"], fail={"error": "boom"}) == {"status": "PENDING"}
    clock.advance(9_000)
    assert [j["id"] for j in claim(api)] == [job_id]


def test_a_lease_that_ends_too_late_for_a_retry_fails_the_job_at_once(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job_id = api.created(SPACE, expiresInMs=10_000, backoffMs=10_000, backoff={"kind": "constant"})
    claim(api, leaseMs=5_000)
    clock.advance(5_000)
    bg.tick(1_000)
    found = job(api, job_id)
    assert (found["status"], found["error"]) == ("FAILED", "lease expired"), "not left waiting for nothing"


def test_a_retry_keeps_the_deadlines_span_not_its_instant(api: Api, clock: ManualClock) -> None:
    old = api.post(JOBS, {"name": "n", "maxAttempts": 1, "expiresInMs": 3_600_000}).body["id"]
    claim(api)
    report(api, old, 1, fail={"error": "boom"})
    clock.advance(2 * 3_600_000)
    [outcome] = api.post(f"{JOBS}:retry", [old]).body["outcomes"]
    assert job(api, outcome["id"])["expiresAtMs"] == clock.now_ms() + 3_600_000
    assert [j["id"] for j in claim(api)] == [outcome["id"]], "claimable: its deadline is ahead"
