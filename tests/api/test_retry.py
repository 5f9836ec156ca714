"""Manual retry (`jobs:retry`) through the handlers: a new job per failed job, once."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from shared.clock import ManualClock
from shared.jobs.create import create
from shared.runtime import Runtime
from shared.schema import NewJob
from shared.store import keys
from tests.conftest import mint
from tests.support import Api

SPACE = "/v1/spaces/redo"
JOBS = f"{SPACE}/jobs"
GHOST = "01J00000000000000000000000"


def failed(api: Api, **fields: Any) -> str:
    """A job that failed for good (one attempt, reported failed): its id."""
    job_id = api.created(SPACE, **({"name": "n", "maxAttempts": 1} | fields))
    assert api.claimed(SPACE, names=[fields.get("name", "n")]) == [job_id]
    report = {"id": job_id, "attempt": 1, "fail": {"error": "boom"}}
    assert api.post(f"{JOBS}:report", report).body["outcomes"] == [{"status": "FAILED"}]
    return job_id


def retry(api: Api, *ids: str) -> list[dict[str, Any]]:
    answer = api.post(f"{JOBS}:retry", list(ids))
    assert answer.status == 200, answer
    return list(answer.body["outcomes"])


def test_a_failed_job_gets_a_new_job_with_its_name_payload_and_options(api: Api) -> None:
    options = {
        "name": "charge",
        "payload": {"invoice": 1042},
        "key": "charge-1042",
        "maxAttempts": 1,
        "timeoutMs": 60_000,
        "backoffMs": 5_000,
        "backoff": {"kind": "linear", "maxMs": 50_000, "jitter": True},
        "priority": 7,
        "concurrencyKey": "acct-9",
        "callback": {"url": "https://example.com/hook", "headers": {"X-Secret": "s3"}},
    }
    old = failed(api, **options)
    [outcome] = retry(api, old)
    assert outcome["retryOf"] == old and outcome["outcome"] == "NEW" and outcome["id"] != old
    before, after = api.get(f"{JOBS}/{old}").body, api.get(f"{JOBS}/{outcome['id']}").body
    assert after["retryOf"] == old and "retryOf" not in before
    assert after["status"] == "PENDING" and after["attempt"] == 0 and after["key"] is None
    same = ("name", "payload", "maxAttempts", "timeoutMs", "backoffMs", "backoff", "priority")
    assert {f: after[f] for f in same} == {f: before[f] for f in same}
    assert after["concurrencyKey"] == "acct-9"
    assert after["callback"] == {"url": "https://example.com/hook", "headers": {"X-Secret": ""}}
    assert before["status"] == "FAILED" and before["error"] == "boom", "the old job does not change"
    assert api.claimed(SPACE, names=["charge"]) == [outcome["id"]], "claimable at once"


def test_the_callback_keeps_its_header_values(api: Api, rt: Runtime) -> None:
    hook = {"url": "https://example.com/hook", "headers": {"X-Secret": "s3"}}
    [outcome] = retry(api, failed(api, callback=hook))
    item = rt.jobs.get_item("redo", outcome["id"])
    assert item is not None and item["callback"]["headers"] == {"X-Secret": "s3"}


def test_a_key_is_not_copied_so_the_old_key_still_answers_the_old_job(api: Api) -> None:
    old = failed(api, key="k")
    retry(api, old)
    assert api.post(JOBS, {"name": "n", "key": "k"}).body == {"id": old, "outcome": "DUPLICATE"}


@pytest.mark.parametrize("size", [300, 100_000, 2_000_000], ids=["inline", "side-item", "s3"])
def test_payloads_of_every_size_are_copied(api: Api, size: int) -> None:
    payload = {"blob": os.urandom(size // 2).hex()}
    [outcome] = retry(api, failed(api, payload=payload))
    assert api.get(f"{JOBS}/{outcome['id']}").body["payload"] == payload
    [held] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    assert held["id"] == outcome["id"] and held["payload"] == payload


def test_a_job_is_retried_once_and_a_repeat_answers_the_same_new_job(api: Api) -> None:
    old = failed(api)
    [first] = retry(api, old)
    assert retry(api, old) == [{"id": first["id"], "retryOf": old, "outcome": "DUPLICATE"}]
    assert retry(api, old, old) == [{"id": first["id"], "retryOf": old, "outcome": "DUPLICATE"}] * 2
    assert len(api.get(JOBS).body["jobs"]) == 2


def test_an_id_twice_in_one_request_makes_one_job(api: Api) -> None:
    old = failed(api)
    first, second = retry(api, old, old)
    assert first["outcome"] == "NEW"
    assert second == {"id": first["id"], "retryOf": old, "outcome": "DUPLICATE"}
    assert len(api.get(JOBS).body["jobs"]) == 2


def test_to_try_again_retry_the_new_job(api: Api) -> None:
    old = failed(api)
    [first] = retry(api, old)
    api.claimed(SPACE)
    api.post(f"{JOBS}:report", {"id": first["id"], "attempt": 1, "fail": {"error": "again"}})
    [second] = retry(api, first["id"])
    assert second["outcome"] == "NEW" and second["retryOf"] == first["id"]
    assert api.get(f"{JOBS}/{second['id']}").body["retryOf"] == first["id"]


def test_eight_racing_retries_of_one_job_make_one_job(api: Api, rt: Runtime) -> None:
    """Every request reads the old job (and finds no retry mark) before any writes: only the
    mark's conditional write, in the new job's transaction, keeps it to one job."""
    old = failed(api)
    racers = 8
    all_read = threading.Barrier(racers, timeout=60)
    read = rt.jobs.retries

    def retries_then_wait(space: str, job_ids: list[str]) -> dict[str, str]:
        found = read(space, job_ids)
        all_read.wait()
        return found

    rt.jobs.retries = retries_then_wait  # type: ignore[method-assign]
    outcomes: list[dict[str, Any]] = []

    def one() -> None:
        outcomes.extend(retry(api, old))

    threads = [threading.Thread(target=one) for _ in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == racers
    assert len({o["id"] for o in outcomes}) == 1
    assert sorted(o["outcome"] for o in outcomes) == ["DUPLICATE"] * (racers - 1) + ["NEW"]
    assert len(api.get(JOBS).body["jobs"]) == 2
    assert api.claimed(SPACE, count=10) == [outcomes[0]["id"]]


def test_only_failed_jobs_are_retried_and_unknown_ones_are_not_found(api: Api) -> None:
    done = api.created(SPACE, name="done")
    api.claimed(SPACE, names=["done"])
    api.post(f"{JOBS}:report", {"id": done, "attempt": 1, "complete": {}})
    pending, running, cancelled = (api.created(SPACE, name=n) for n in ("p", "r", "c"))
    api.claimed(SPACE, names=["r"])
    api.post(f"{JOBS}:cancel", [cancelled])
    old = failed(api)
    outcomes = retry(api, done, pending, running, cancelled, GHOST, "not-an-id", old)
    reasons = [o["rejection"]["reason"] for o in outcomes[:6]]
    assert reasons == ["NOT_RETRYABLE"] * 4 + ["NOT_FOUND"] * 2
    assert (
        outcomes[0]["rejection"]["message"]
        == f"job {done} is COMPLETED: only failed or stalled jobs are retried"
    )
    assert outcomes[6]["outcome"] == "NEW" and outcomes[6]["retryOf"] == old


def test_a_job_no_create_could_make_again_is_not_retryable_and_the_others_are_retried(
    api: Api, rt: Runtime
) -> None:
    """A failed job with a payload 65 levels deep (made, as notices once were, past the
    checks of a create) cannot be copied: it answers NOT_RETRYABLE for its own id, naming
    the field, and the ids beside it are retried (the request is not refused whole)."""
    deep: Any = "x"
    for _ in range(65):
        deep = [deep]
    [made] = create(rt.context, "redo", [NewJob.model_construct(name="deep", payload=deep)], batch=False)
    assert api.claimed(SPACE, names=["deep"]) == [made.id]
    report = {"id": made.id, "attempt": 1, "fail": {"error": "boom", "unrecoverable": True}}
    assert api.post(f"{JOBS}:report", report).body["outcomes"] == [{"status": "FAILED"}]
    before, after = failed(api), failed(api)
    # Named twice: the repeat is answered as its first place is (it was a 500).
    outcomes = retry(api, before, made.id, after, made.id)
    assert [o.get("outcome") for o in outcomes] == ["NEW", None, "NEW", None]
    refused = {
        "reason": "NOT_RETRYABLE",
        "message": f"job {made.id} cannot be retried: payload: must be nested at most 64 levels deep",
    }
    assert outcomes[1]["rejection"] == outcomes[3]["rejection"] == refused
    assert [o["retryOf"] for o in (outcomes[0], outcomes[2])] == [before, after]


def test_a_job_past_its_retention_is_not_found(api: Api, clock: ManualClock) -> None:
    api.patch(SPACE, {"failedRetentionMs": 60_000})
    old = failed(api)
    clock.advance(60_000)
    assert retry(api, old)[0]["rejection"]["reason"] == "NOT_FOUND"


def test_the_retry_mark_lives_as_long_as_the_old_job(api: Api, rt: Runtime) -> None:
    api.patch(SPACE, {"failedRetentionMs": 60_000})
    old = failed(api)
    retry(api, old)
    mark = rt.jobs.db.get(keys.retry_marker("redo", old))
    job = rt.jobs.get_item("redo", old)
    assert mark is not None and job is not None and mark["ttl"] == job["ttl"]


class TestInFlightCap:
    def test_a_retry_past_the_cap_answers_429_and_keeps_nothing(self, api: Api) -> None:
        api.patch(SPACE, {"maxInFlight": 2})
        old = failed(api)
        api.created(SPACE, name="other")
        api.created(SPACE, name="other")
        full = api.post(f"{JOBS}:retry", [old])
        assert full.status == 429 and full.body["retryAfterMs"] == 1_000
        assert len(api.get(JOBS).body["jobs"]) == 3
        assert api.get(SPACE).body["inFlight"] == 2
        api.post(f"{JOBS}:cancel", [j["id"] for j in api.get(JOBS, query={"status": "PENDING"}).body["jobs"]])
        assert retry(api, old)[0]["outcome"] == "NEW"
        assert api.get(SPACE).body["inFlight"] == 1

    def test_a_full_space_still_answers_a_repeat(self, api: Api) -> None:
        api.patch(SPACE, {"maxInFlight": 1})
        old = failed(api)
        [first] = retry(api, old)
        assert retry(api, old) == [{"id": first["id"], "retryOf": old, "outcome": "DUPLICATE"}]
        assert api.get(SPACE).body["inFlight"] == 1

    def test_more_ids_than_the_cap_are_refused_naming_ids(self, api: Api) -> None:
        api.patch(SPACE, {"maxInFlight": 1})
        first, second = failed(api), failed(api)
        answer = api.post(f"{JOBS}:retry", [first, second])
        assert answer.status == 400
        assert answer.body["message"] == "ids: a batch of 2 is larger than the space's maxInFlight of 1"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "ids: is required"),
        ([], "ids: must have at least 1 item"),
        ([1], "ids[0]: must be a string"),
        ({"ids": ["x"], "other": 1}, "other: is not a known field"),
    ],
)
def test_bad_bodies_are_refused_naming_the_field(api: Api, body: Any, message: str) -> None:
    answer = api.post(f"{JOBS}:retry", body)
    assert (answer.status, answer.body["message"]) == (400, message)


def test_retry_needs_the_admin_scope(api: Api, rt: Runtime) -> None:
    old = failed(api)
    for scopes in (["create"], ["work"], ["read"]):
        assert api.as_token(mint(rt, scopes)).post(f"{JOBS}:retry", [old]).status == 403
    assert api.as_token(mint(rt, ["admin"], ["other"])).post(f"{JOBS}:retry", [old]).status == 403
    assert api.as_token(mint(rt, ["admin"], ["redo"])).post(f"{JOBS}:retry", [old]).status == 200
