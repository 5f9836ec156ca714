"""POST /v1/spaces/{space}/jobs:claim through its Lambda handler."""

from __future__ import annotations

import threading

import pytest

from shared.clock import ManualClock
from shared.runtime import Runtime
from tests.conftest import mint
from tests.support import Api

JOBS = "/v1/spaces/work/jobs"
CLAIM = f"{JOBS}:claim"


def create(api: Api, *jobs: dict) -> list[str]:
    return [j["id"] for j in api.post(JOBS, list(jobs)).body["jobs"]]


def test_hands_out_oldest_first_with_attempt_and_lease(api: Api, clock: ManualClock) -> None:
    ids = []
    for i in range(12):  # spread over the ready index's shards
        ids += create(api, {"name": "n", "payload": i})
        clock.advance(1)
    answer = api.post(CLAIM, {"count": 5})
    assert answer.status == 200
    jobs = answer.body["jobs"]
    assert [j["id"] for j in jobs] == ids[:5]
    assert all(j["attempt"] == 1 and j["name"] == "n" for j in jobs)
    assert jobs[0]["leaseUntilMs"] == str(clock.now_ms() + 300_000), (
        "the lease is the job's timeout by default"
    )
    assert [j["id"] for j in api.post(CLAIM, {"count": 100}).body["jobs"]] == ids[5:]
    assert api.post(CLAIM, {"count": 1}).body == {"jobs": []}


def test_names_filter_and_lease_ms(api: Api, clock: ManualClock) -> None:
    create(api, {"name": "a"}, {"name": "b"}, {"name": "c"})
    jobs = api.post(CLAIM, {"count": 10, "names": ["b", "c"], "leaseMs": 5_000}).body["jobs"]
    assert sorted(j["name"] for j in jobs) == ["b", "c"]
    assert {j["leaseUntilMs"] for j in jobs} == {str(clock.now_ms() + 5_000)}
    assert [j["name"] for j in api.post(CLAIM, {"count": 10}).body["jobs"]] == ["a"]


def test_a_long_poll_answers_when_a_job_becomes_ready(api: Api, clock: ManualClock) -> None:
    create(api, {"name": "n", "delayMs": 2_000})
    start = clock.now_ms()
    jobs = api.post(CLAIM, {"count": 1, "waitMs": 10_000}).body["jobs"]
    assert len(jobs) == 1
    assert 2_000 <= clock.now_ms() - start < 2_500, "answered as soon as the job was ready, not at the end"


def test_a_long_poll_answers_empty_at_the_end_of_the_wait(api: Api, clock: ManualClock) -> None:
    start = clock.now_ms()
    assert api.post(CLAIM, {"count": 1, "waitMs": 3_000}).body == {"jobs": []}
    assert clock.now_ms() - start >= 3_000


def test_the_answer_stops_at_8_mib_of_payloads(api: Api) -> None:
    big = "x" * (3 * 1024 * 1024)
    create(api, {"name": "n", "payload": big}, {"name": "n", "payload": big}, {"name": "n", "payload": big})
    first = api.post(CLAIM, {"count": 3}).body["jobs"]
    assert len(first) == 2
    assert len(api.post(CLAIM, {"count": 3}).body["jobs"]) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "count: is required"),
        ({"count": 0}, "count: must be at least 1"),
        ({"count": 1001}, "count: must be at most 1000"),
        ({"count": 1, "names": ["n"] * 33}, "names: must have at most 32 items"),
        ({"count": 1, "names": []}, "names: must have at least 1 items"),
        ({"count": 1, "names": ["bad name"]}, "names[0]: must be 1-128 of A-Z a-z 0-9 . _ : -"),
        ({"count": 1, "waitMs": 60_001}, "waitMs: must be at most 60000"),
        ({"count": 1, "leaseMs": 10}, "leaseMs: must be at least 1000"),
        ({"count": 1, "lease": 10}, "lease: is not a known field"),
    ],
)
def test_bad_claims_are_refused(api: Api, body: dict, message: str) -> None:
    answer = api.post(CLAIM, body)
    assert (answer.status, answer.body["message"]) == (400, message)


def test_claiming_needs_the_work_scope(rt: Runtime, api: Api) -> None:
    create(api, {"name": "n"})
    assert api.as_token(mint(rt, ["create", "read"])).post(CLAIM, {"count": 1}).status == 403
    assert api.as_token(mint(rt, ["work"], ["other"])).post(CLAIM, {"count": 1}).status == 403
    assert len(api.as_token(mint(rt, ["work"], ["work"])).post(CLAIM, {"count": 1}).body["jobs"]) == 1


def test_sixteen_workers_never_hold_one_attempt_twice_and_lose_nothing(api: Api) -> None:
    """Workers race to claim and report the same jobs; some fail, some release, most complete."""
    total = 60
    ids = set(create(api, *[{"name": "n", "payload": i, "maxAttempts": 1000} for i in range(total)]))
    held: list[tuple[str, int]] = []
    completed: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(16)

    def worker(n: int) -> None:
        barrier.wait()
        idle = 0
        while idle < 3:
            jobs = api.post(CLAIM, {"count": 1 + n % 3}).body["jobs"]
            idle = 0 if jobs else idle + 1
            for k, job in enumerate(jobs):
                with lock:
                    held.append((job["id"], job["attempt"]))
                ending = [{"fail": {"error": "flaky", "retryAfterMs": 0}}, {"release": {}}, {"complete": {}}][
                    (n + k + job["attempt"]) % 3
                ]
                report = {"id": job["id"], "attempt": job["attempt"], **ending}
                answer = api.post(f"{JOBS}:report", report)
                assert answer.status == 200, answer
                [outcome] = answer.body["outcomes"]
                assert "rejection" not in outcome, outcome
                if outcome["status"] == "COMPLETED":
                    with lock:
                        completed.append(job["id"])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(held) == len(set(held)), "an attempt was handed out twice"
    assert sorted(completed) == sorted(ids), "every job completed exactly once"
    listed = api.get(JOBS, query={"limit": 1000}).body["jobs"]
    assert {j["status"] for j in listed} == {"COMPLETED"} and len(listed) == total
