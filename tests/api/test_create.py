"""POST /v1/spaces/{space}/jobs through its Lambda handler."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import pytest

from shared.clock import ManualClock
from shared.runtime import Runtime
from tests.conftest import mint
from tests.support import Api

JOBS = "/v1/spaces/billing/jobs"


def count_jobs(api: Api, space: str = "billing") -> int:
    return len(api.get(f"/v1/spaces/{space}/jobs", query={"limit": 1000}).body["jobs"])


def test_one_job_answers_its_id_and_new(api: Api) -> None:
    answer = api.post(JOBS, {"name": "charge-invoice", "payload": {"invoiceId": "inv_1042"}})
    assert answer.status == 200
    assert answer.body["outcome"] == "NEW" and len(answer.body["id"]) == 26


@pytest.mark.parametrize("wrap", [lambda jobs: jobs, lambda jobs: {"jobs": jobs}])
def test_a_batch_answers_in_the_order_sent(api: Api, wrap) -> None:  # type: ignore[no-untyped-def]
    jobs = [{"name": f"job-{i}", "payload": i} for i in range(5)]
    answer = api.post(JOBS, wrap(jobs))
    assert answer.status == 200
    ids = [j["id"] for j in answer.body["jobs"]]
    assert [api.get(f"{JOBS}/{i}").body["payload"] for i in ids] == [0, 1, 2, 3, 4]
    assert ids == sorted(ids), "ids sort by creation, in the order sent"


def test_a_batch_is_validated_whole_and_nothing_is_kept(api: Api) -> None:
    jobs = [{"name": "ok"}, {"name": "ok"}, {"name": "ok"}, {"name": "bad", "delayMs": 31_536_000_001}]
    answer = api.post(JOBS, jobs)
    assert answer.status == 400
    assert answer.body == {
        "code": "InvalidArgument",
        "message": "jobs[3].delayMs: must be at most 31536000000",
    }
    assert api.get("/v1/spaces/billing").status == 404, "nothing was kept, not even the space"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"payload": 1}, "name: is required"),
        ({"name": "a b"}, "name: must be 1-128 of A-Z a-z 0-9 . _ : -"),
        ({"name": "x" * 129}, "name: must be 1-128 of A-Z a-z 0-9 . _ : -"),
        ({"name": "n", "colour": "red"}, "colour: is not a known field"),
        ({"name": "n", "delayMs": 5, "runAtMs": 5}, "body: give delayMs or runAtMs, not both"),
        ({"name": "n", "delayMs": "5"}, "delayMs: must be an integer"),
        ({"name": "n", "delayMs": -1}, "delayMs: must be at least 0"),
        ({"name": "n", "maxAttempts": 0}, "maxAttempts: must be at least 1"),
        ({"name": "n", "maxAttempts": 1001}, "maxAttempts: must be at most 1000"),
        ({"name": "n", "timeoutMs": 999}, "timeoutMs: must be at least 1000"),
        ({"name": "n", "timeoutMs": 43_200_001}, "timeoutMs: must be at most 43200000"),
        ({"name": "n", "backoffMs": 86_400_001}, "backoffMs: must be at most 86400000"),
        (
            {"name": "n", "backoff": {"kind": "fibonacci"}},
            "backoff.kind: must be one of 'exponential', 'linear' or 'constant'",
        ),
        ({"name": "n", "key": ""}, "key: must be at least 1 characters"),
        ({"name": "n", "key": "k" * 257}, "key: must be at most 256 characters"),
        ({"name": "n", "callback": {"url": "ftp://x"}}, "callback.url: must be an http or https URL"),
        ({"name": "n", "callback": {}}, "callback.url: is required"),
    ],
)
def test_each_bad_field_is_named(api: Api, body: dict, message: str) -> None:
    answer = api.post(JOBS, body)
    assert (answer.status, answer.body) == (400, {"code": "InvalidArgument", "message": message})


def test_run_time_at_most_a_year_ahead(api: Api, clock: ManualClock) -> None:
    answer = api.post(JOBS, {"name": "n", "runAtMs": clock.now_ms() + 366 * 86_400_000})
    assert answer.status == 400 and answer.body["message"].startswith("runAtMs: must be at most a year ahead")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "body: a JSON body is required"),
        (b"{not json", "body: must be valid JSON"),
        (b"42", 'body: must be a job, an array of jobs, or {"jobs": [...]}'),
        (b"[]", "jobs: must have at least 1 item"),
        (b'{"jobs": 3}', "jobs: must be an array"),
    ],
)
def test_body_shape_errors(api: Api, raw: bytes, message: str) -> None:
    answer = api.request("POST", JOBS, raw=raw)
    assert answer.status == 400 and answer.body["message"].startswith(message)


def test_at_most_1000_jobs_a_request(api: Api) -> None:
    answer = api.post(JOBS, [{"name": "n"}] * 1001)
    assert (answer.status, answer.body["message"]) == (400, "jobs: must have at most 1000 items")


def test_payload_over_4_mib_is_refused(api: Api) -> None:
    answer = api.post(JOBS, {"name": "n", "payload": "x" * (4 * 1024 * 1024)})
    assert answer.status == 400 and answer.body["message"] == "payload: must be at most 4194304 bytes of JSON"


@pytest.mark.parametrize("size", [300, 100_000, 2_000_000], ids=["inline", "side-item", "s3"])
def test_payloads_of_every_size_come_back_whole(api: Api, size: int) -> None:
    payload = {"blob": os.urandom(size // 2).hex()}
    job_id = api.post(JOBS, {"name": "big", "payload": payload}).body["id"]
    assert api.get(f"{JOBS}/{job_id}").body["payload"] == payload
    [held] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    assert held["payload"] == payload


def test_defaults_come_from_the_space_then_the_job(api: Api) -> None:
    api.patch("/v1/spaces/billing", {"maxAttempts": 9, "timeoutMs": 60_000, "backoff": {"kind": "linear"}})
    plain = api.get(f"{JOBS}/{api.post(JOBS, {'name': 'n'}).body['id']}").body
    assert (plain["maxAttempts"], plain["timeoutMs"], plain["backoff"]["kind"]) == (9, 60_000, "linear")
    assert plain["backoffMs"] == 1_000 and plain["backoff"]["maxMs"] == 3_600_000
    own = api.get(
        f"{JOBS}/{api.post(JOBS, {'name': 'n', 'maxAttempts': 2, 'timeoutMs': 5_000}).body['id']}"
    ).body
    assert (own["maxAttempts"], own["timeoutMs"]) == (2, 5_000)


def test_contract_defaults(api: Api) -> None:
    job = api.get(f"{JOBS}/{api.post(JOBS, {'name': 'n'}).body['id']}").body
    assert job["maxAttempts"] == 4 and job["timeoutMs"] == 300_000 and job["backoffMs"] == 1_000
    assert job["backoff"] == {"kind": "exponential", "maxMs": 3_600_000, "jitter": False}
    assert job["status"] == "PENDING" and job["attempt"] == 0 and job["payload"] is None


def test_a_repeated_key_answers_duplicate_with_the_first_id(api: Api) -> None:
    first = api.post(JOBS, {"name": "n", "key": "charge-inv_1042"}).body
    again = api.post(JOBS, {"name": "n", "key": "charge-inv_1042", "payload": "other"}).body
    assert again == {"id": first["id"], "outcome": "DUPLICATE"}
    assert count_jobs(api) == 1


@pytest.mark.parametrize("size", [1_500, 400_000], ids=["side-item", "s3"])
def test_a_repeated_key_keeps_nothing_of_its_payload(rt: Runtime, api: Api, size: int) -> None:
    """The repeat's payload is written before its key is found taken: it must not stay
    behind with no job to remove it."""
    first = api.post(JOBS, {"name": "n", "key": "k", "payload": os.urandom(size).hex()}).body["id"]
    again = api.post(JOBS, {"name": "n", "key": "k", "payload": os.urandom(size).hex()}).body
    assert again == {"id": first, "outcome": "DUPLICATE"}
    side = rt.dynamodb.scan(
        TableName=rt.table,
        FilterExpression="begins_with(pk, :b)",
        ExpressionAttributeValues={":b": {"S": "B#"}},
    )["Items"]
    objects = rt.s3.list_objects_v2(Bucket=rt.bucket).get("Contents", [])
    assert [i["pk"]["S"] for i in side] + [o["Key"] for o in objects] == (
        [f"B#billing#{first}"] if size < 10_000 else [f"billing/{first}/payload"]
    )


class JobWritesFail:
    """A DynamoDB client whose writes fail once they reach a job item, as a store fault
    between a create's writes would: what the create wrote before stays."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def batch_write_item(self, **kwargs: Any) -> Any:
        self._refuse(json.dumps(kwargs["RequestItems"], default=str))
        return self._client.batch_write_item(**kwargs)

    def transact_write_items(self, **kwargs: Any) -> Any:
        self._refuse(json.dumps(kwargs["TransactItems"], default=str))
        return self._client.transact_write_items(**kwargs)

    @staticmethod
    def _refuse(request: str) -> None:
        if '"J#' in request:
            raise RuntimeError("the store failed")


@pytest.mark.parametrize(
    "body",
    [
        {"name": "n", "payload": "x"},
        {"name": "n", "key": "k", "payload": "x"},
        [{"name": "n", "payload": "x"}, {"name": "n", "payload": "x"}],
    ],
    ids=["single", "keyed", "batch"],
)
def test_a_store_fault_before_the_job_leaves_no_payload_behind(
    rt: Runtime, api: Api, monkeypatch: pytest.MonkeyPatch, body: Any
) -> None:
    """A payload too large for the job item but not for a side item must not outlive a
    create that failed before its job was written: no job would ever point at it."""
    payload = os.urandom(1_500).hex()
    for job in body if isinstance(body, list) else [body]:
        job["payload"] = payload
    api.post(JOBS, {"name": "n"})  # the name is listed: the create's first writes succeed
    monkeypatch.setattr(rt.db, "client", JobWritesFail(rt.db.client))
    assert api.post(JOBS, body).status == 500
    monkeypatch.undo()
    side = rt.dynamodb.scan(
        TableName=rt.table,
        FilterExpression="begins_with(pk, :b)",
        ExpressionAttributeValues={":b": {"S": "B#"}},
    )["Items"]
    assert side == [], "a side item with no job to remove it"
    assert count_jobs(api) == 1


def test_a_batch_of_side_item_payloads_spans_transactions(api: Api) -> None:
    """Each job and its payload's side item are one transaction's two puts; a transaction
    holds at most 100 actions, so 60 such jobs take two."""
    payloads = [os.urandom(1_500).hex() for _ in range(60)]
    answer = api.post(JOBS, [{"name": "n", "payload": p} for p in payloads])
    assert answer.status == 200
    ids = [j["id"] for j in answer.body["jobs"]]
    assert [api.get(f"{JOBS}/{i}").body["payload"] for i in ids] == payloads


def test_a_key_repeated_inside_one_batch(api: Api) -> None:
    answer = api.post(JOBS, [{"name": "n", "key": "k"}, {"name": "n"}, {"name": "n", "key": "k"}]).body[
        "jobs"
    ]
    assert [a["outcome"] for a in answer] == ["NEW", "NEW", "DUPLICATE"]
    assert answer[2]["id"] == answer[0]["id"]
    assert count_jobs(api) == 2


def test_a_key_is_held_for_the_window_after_its_job_finishes(api: Api, clock: ManualClock) -> None:
    api.patch("/v1/spaces/billing", {"keyWindowMs": 60_000})
    first = api.post(JOBS, {"name": "n", "key": "k"}).body["id"]
    api.post(f"{JOBS}:cancel", [first])
    clock.advance(59_999)
    assert api.post(JOBS, {"name": "n", "key": "k"}).body == {"id": first, "outcome": "DUPLICATE"}
    clock.advance(1)
    second = api.post(JOBS, {"name": "n", "key": "k"}).body
    assert second["outcome"] == "NEW" and second["id"] != first


def test_racing_creates_with_one_key_make_one_job(api: Api) -> None:
    answers: list[dict] = []
    barrier = threading.Barrier(12)

    def create() -> None:
        barrier.wait()
        answers.append(api.post(JOBS, {"name": "n", "key": "race"}).body)

    threads = [threading.Thread(target=create) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({a["id"] for a in answers}) == 1
    assert sorted(a["outcome"] for a in answers) == ["DUPLICATE"] * 11 + ["NEW"]
    assert count_jobs(api) == 1


def test_a_delayed_job_is_not_claimable_before_its_time(api: Api, clock: ManualClock) -> None:
    api.post(JOBS, {"name": "later", "delayMs": 60_000})
    assert api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"] == []
    clock.advance(60_000)
    assert len(api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]) == 1


class TestInFlightCap:
    def test_a_create_past_the_cap_answers_429_and_keeps_nothing(self, api: Api) -> None:
        api.patch("/v1/spaces/billing", {"maxInFlight": 3})
        assert api.post(JOBS, [{"name": "n"}] * 2).status == 200
        full = api.post(JOBS, [{"name": "n"}] * 2)
        assert full.status == 429
        assert full.body["code"] == "ResourceExhausted" and full.body["retryAfterMs"] == 1_000
        assert full.headers["Retry-After"] == "1"
        assert count_jobs(api) == 2
        assert api.post(JOBS, {"name": "n"}).status == 200

    def test_a_batch_larger_than_the_cap_is_refused(self, api: Api) -> None:
        api.patch("/v1/spaces/billing", {"maxInFlight": 2})
        answer = api.post(JOBS, [{"name": "n"}] * 3)
        assert answer.status == 400 and "larger than the space's maxInFlight of 2" in answer.body["message"]

    def test_finishing_jobs_makes_room(self, api: Api) -> None:
        api.patch("/v1/spaces/billing", {"maxInFlight": 2})
        ids = [j["id"] for j in api.post(JOBS, [{"name": "n"}] * 2).body["jobs"]]
        assert api.post(JOBS, {"name": "n"}).status == 429
        [held] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
        api.post(f"{JOBS}:report", {"id": held["id"], "attempt": 1, "complete": {}})
        assert api.post(JOBS, {"name": "n"}).status == 200
        assert api.post(JOBS, {"name": "n"}).status == 429
        api.post(f"{JOBS}:cancel", [i for i in ids if i != held["id"]])
        assert api.post(JOBS, {"name": "n"}).status == 200

    def test_duplicates_take_no_room(self, api: Api) -> None:
        api.patch("/v1/spaces/billing", {"maxInFlight": 1})
        api.post(JOBS, {"name": "n", "key": "k"})
        assert api.post(JOBS, {"name": "n", "key": "k"}).body["outcome"] == "DUPLICATE"
        assert api.get("/v1/spaces/billing").body["inFlight"] == 1

    def test_the_count_stays_right_under_concurrent_creates(self, api: Api, rt: Runtime) -> None:
        api.patch("/v1/spaces/billing", {"maxInFlight": 10})
        statuses: list[int] = []
        barrier = threading.Barrier(16)

        def create() -> None:
            barrier.wait()
            statuses.append(api.post(JOBS, {"name": "n"}).status)

        threads = [threading.Thread(target=create) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(statuses) == [200] * 10 + [429] * 6
        assert count_jobs(api) == 10 and api.get("/v1/spaces/billing").body["inFlight"] == 10


def test_a_create_token_may_not_read(rt: Runtime, api: Api) -> None:
    producer = api.as_token(mint(rt, ["create"], ["billing"]))
    assert producer.post(JOBS, {"name": "n"}).status == 200
    assert producer.get(JOBS).status == 403


def test_claims_and_reports_are_never_refused_for_a_full_space(api: Api) -> None:
    """They are what brings the count down."""
    api.patch("/v1/spaces/billing", {"maxInFlight": 1})
    api.post(JOBS, {"name": "n"})
    assert api.post(JOBS, {"name": "n"}).status == 429
    [held] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    touch = api.post(f"{JOBS}:report", {"id": held["id"], "attempt": 1, "touch": {}})
    assert touch.body == {"outcomes": [{"status": "RUNNING"}]}
    done = api.post(f"{JOBS}:report", {"id": held["id"], "attempt": 1, "complete": {}})
    assert done.body == {"outcomes": [{"status": "COMPLETED"}]}
