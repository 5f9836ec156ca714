"""Cancel, get, list, and what retention hides, through the handlers."""

from __future__ import annotations

import pytest

from shared.clock import ManualClock
from shared.runtime import Runtime
from tests.conftest import mint
from tests.support import Api

JOBS = "/v1/spaces/work/jobs"


def create(api: Api, *jobs: dict) -> list[str]:
    return [j["id"] for j in api.post(JOBS, list(jobs)).body["jobs"]]


def test_cancel_pending_running_finished_and_unknown(api: Api) -> None:
    pending, running, done = create(api, {"name": "p", "delayMs": 60_000}, {"name": "r"}, {"name": "d"})
    for held in api.post(f"{JOBS}:claim", {"count": 2}).body["jobs"]:
        if held["id"] == done:
            api.post(f"{JOBS}:report", {"id": done, "attempt": 1, "complete": {}})
    ghost = "01J00000000000000000000000"
    answer = api.post(f"{JOBS}:cancel", {"ids": [pending, running, done, ghost, "not-an-id"]})
    assert answer.status == 200
    outcomes = answer.body["outcomes"]
    assert outcomes[:2] == [{"status": "CANCELLED"}, {"status": "CANCELLED"}]
    assert [o["rejection"]["reason"] for o in outcomes[2:]] == ["ALREADY_FINISHED", "NOT_FOUND", "NOT_FOUND"]
    assert api.get(f"{JOBS}/{running}").body["status"] == "CANCELLED"
    report = api.post(f"{JOBS}:report", {"id": running, "attempt": 1, "touch": {}}).body["outcomes"][0]
    assert report["rejection"]["reason"] == "ALREADY_FINISHED", "the worker learns it at its next report"
    assert api.post(f"{JOBS}:claim", {"count": 5}).body["jobs"] == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "ids: is required"),
        ({"ids": "x"}, 'ids: must be an array of job ids, or {"ids": [...]}'),
        ([1], "ids[0]: must be a string"),
        ([], "ids: must have at least 1 item"),
        ({"ids": ["a"], "why": "x"}, "why: is not a known field"),
    ],
)
def test_bad_cancels(api: Api, body: object, message: str) -> None:
    answer = api.post(f"{JOBS}:cancel", body)
    assert (answer.status, answer.body["message"]) == (400, message)


def test_cancel_needs_admin(rt: Runtime, api: Api) -> None:
    [job_id] = create(api, {"name": "n"})
    worker = api.as_token(mint(rt, ["create", "read", "work"]))
    assert worker.post(f"{JOBS}:cancel", [job_id]).status == 403
    assert api.as_token(mint(rt, ["admin"], ["work"])).post(f"{JOBS}:cancel", [job_id]).status == 200


def test_get_shows_the_resource_and_hides_callback_header_values(api: Api, clock: ManualClock) -> None:
    [job_id] = create(
        api,
        {
            "name": "render-report",
            "payload": {"reportId": "rep_881"},
            "key": "rep_881",
            "callback": {"url": "https://api.example.com/webhooks/emit", "headers": {"x-tenant": "acme"}},
        },
    )
    body = api.get(f"{JOBS}/{job_id}").body
    assert body["callback"] == {"url": "https://api.example.com/webhooks/emit", "headers": {"x-tenant": ""}}
    assert (body["id"], body["space"], body["name"], body["key"]) == (
        job_id,
        "work",
        "render-report",
        "rep_881",
    )
    assert body["createdAtMs"] == body["runAtMs"] == clock.now_ms()
    assert body["payload"] == {"reportId": "rep_881"} and body["progress"] is None


def test_get_unknown_or_malformed_is_404(api: Api) -> None:
    for job_id in ("01J00000000000000000000000", "nope"):
        answer = api.get(f"{JOBS}/{job_id}")
        assert answer.status == 404 and answer.body["code"] == "NotFound"
    assert api.get(f"{JOBS}/01J00000000000000000000000/lines").status == 404


def test_list_newest_first_with_filters_and_cursor(api: Api, clock: ManualClock) -> None:
    ids = []
    for i in range(7):
        ids += create(api, {"name": "even" if i % 2 == 0 else "odd"})
        clock.advance(1)
    api.post(f"{JOBS}:cancel", [ids[0]])
    page = api.get(JOBS, query={"limit": 3}).body
    assert [j["id"] for j in page["jobs"]] == ids[::-1][:3] and page["cursor"]
    rest = api.get(JOBS, query={"limit": 10, "cursor": page["cursor"]}).body
    assert [j["id"] for j in rest["jobs"]] == ids[::-1][3:] and rest["cursor"] is None
    assert "payload" not in page["jobs"][0]
    evens = api.get(JOBS, query={"name": "even"}).body["jobs"]
    assert [j["id"] for j in evens] == [ids[6], ids[4], ids[2], ids[0]]
    cancelled = api.get(JOBS, query={"status": "CANCELLED"}).body["jobs"]
    assert [j["id"] for j in cancelled] == [ids[0]]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"limit": 0}, "limit: must be an integer from 1 to 1000"),
        ({"limit": 1001}, "limit: must be an integer from 1 to 1000"),
        (
            {"status": "pending"},
            "status: must be one of PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, STALLED",
        ),
        ({"cursor": "zzz"}, "cursor: is not a cursor this API gave"),
    ],
)
def test_bad_list_queries(api: Api, query: dict, message: str) -> None:
    answer = api.get(JOBS, query=query)
    assert (answer.status, answer.body["message"]) == (400, message)


def test_no_read_shows_a_job_past_its_retention(api: Api, clock: ManualClock) -> None:
    api.patch("/v1/spaces/work", {"completedRetentionMs": 60_000})
    [job_id] = create(api, {"name": "n"})
    api.post(f"{JOBS}:claim", {"count": 1})
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": 1, "complete": {}})
    clock.advance(59_000)
    assert api.get(f"{JOBS}/{job_id}").status == 200
    clock.advance(1_000)
    assert api.get(f"{JOBS}/{job_id}").status == 404
    assert api.get(JOBS).body["jobs"] == []
    assert api.post(f"{JOBS}:cancel", [job_id]).body["outcomes"][0]["rejection"]["reason"] == "NOT_FOUND"
