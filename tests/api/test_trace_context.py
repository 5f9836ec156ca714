"""W3C trace context through the handlers: a create's `traceparent` (the job's field, or the
request's header for each job without one) is kept with the job, shown on it, handed to
the worker in the claim answer, and copied by a retry; a bad one is refused naming it."""

from __future__ import annotations

from typing import Any

import pytest

from shared import observability
from tests.support import Api

SPACE = "/v1/spaces/traced"
JOBS = f"{SPACE}/jobs"
PRODUCER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
OTHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


def claim(api: Api, name: str = "n", count: int = 1) -> list[dict[str, Any]]:
    answer = api.post(f"{JOBS}:claim", {"count": count, "names": [name]})
    assert answer.status == 200, answer
    return list(answer.body["jobs"])


def test_a_jobs_traceparent_is_kept_shown_and_handed_to_its_worker(api: Api) -> None:
    job_id = api.created(SPACE, "n", traceparent=PRODUCER)
    assert api.get(f"{JOBS}/{job_id}").body["traceparent"] == PRODUCER
    [listed] = api.get(JOBS).body["jobs"]
    assert listed["traceparent"] == PRODUCER
    [held] = claim(api)
    assert held["id"] == job_id and held["traceparent"] == PRODUCER
    assert api.get(f"{JOBS}/{job_id}").body["traceparent"] == PRODUCER, "a claim keeps it"


def test_a_job_without_one_shows_none(api: Api) -> None:
    job_id = api.created(SPACE, "n")
    assert "traceparent" not in api.get(f"{JOBS}/{job_id}").body
    assert "traceparent" not in api.get(JOBS).body["jobs"][0]
    [held] = claim(api)
    assert "traceparent" not in held


def test_the_header_applies_to_each_job_of_a_batch_and_a_jobs_field_wins(api: Api) -> None:
    jobs = [{"name": "n"}, {"name": "n", "traceparent": OTHER}, {"name": "n", "traceparent": None}]
    answer = api.post(JOBS, {"jobs": jobs}, headers={"traceparent": PRODUCER})
    assert answer.status == 200, answer
    ids = [c["id"] for c in answer.body["jobs"]]
    shown = [api.get(f"{JOBS}/{i}").body["traceparent"] for i in ids]
    assert shown == [PRODUCER, OTHER, PRODUCER]
    held = {j["id"]: j["traceparent"] for j in claim(api, count=3)}
    assert held == dict(zip(ids, shown, strict=True))


def test_the_header_applies_to_one_job_too(api: Api) -> None:
    answer = api.post(JOBS, {"name": "n"}, headers={"Traceparent": f" {PRODUCER} "})
    assert answer.status == 200, answer
    assert api.get(f"{JOBS}/{answer.body['id']}").body["traceparent"] == PRODUCER


def test_a_later_version_is_kept_by_its_first_four_fields(api: Api) -> None:
    later = "cc" + PRODUCER[2:]
    job_id = api.created(SPACE, "n", traceparent=f"{later}-what-comes-next")
    assert api.get(f"{JOBS}/{job_id}").body["traceparent"] == later
    answer = api.post(JOBS, {"name": "n"}, headers={"traceparent": f"{later}-more"})
    assert api.get(f"{JOBS}/{answer.body['id']}").body["traceparent"] == later


TRACE, PARENT = PRODUCER[3:35], PRODUCER[36:52]
BAD = [
    pytest.param(f"00-{'0' * 32}-{PARENT}-01", id="zero-trace-id"),
    pytest.param(f"00-{TRACE}-{'0' * 16}-01", id="zero-parent-id"),
    pytest.param(PRODUCER.upper(), id="upper-case"),
    pytest.param("ff" + PRODUCER[2:], id="version-ff"),
    pytest.param(f"{PRODUCER}-extra", id="version-00-with-more-fields"),
    pytest.param(PRODUCER[:-1], id="short-flags"),
    pytest.param(f"00-{TRACE}-{PARENT}", id="no-flags"),
    pytest.param(f"00-{TRACE[:-1]}-{PARENT}-01", id="short-trace-id"),
    pytest.param(f"00_{TRACE}_{PARENT}_01", id="wrong-separators"),
    pytest.param(f"cc-{TRACE}-{PARENT}-01-" + "x" * 500, id="too-long"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_field_is_refused_naming_it(api: Api, bad: str) -> None:
    answer = api.post(JOBS, {"name": "n", "traceparent": bad})
    assert answer.status == 400, answer
    assert answer.body["message"].startswith("traceparent: must be a W3C traceparent"), answer
    answer = api.post(JOBS, [{"name": "n"}, {"name": "n"}, {"name": "n"}, {"name": "n", "traceparent": bad}])
    assert answer.status == 400, answer
    assert answer.body["message"].startswith("jobs[3].traceparent: must be a W3C traceparent"), answer
    assert api.get(SPACE).status == 404, "nothing was kept"


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_header_is_refused_naming_it(api: Api, bad: str) -> None:
    for body in ({"name": "n"}, {"name": "n", "traceparent": PRODUCER}):
        answer = api.post(JOBS, body, headers={"traceparent": bad})
        assert answer.status == 400, answer
        assert answer.body["message"].startswith("header traceparent: must be a W3C traceparent"), answer
    assert api.get(SPACE).status == 404, "nothing was kept"


def test_a_field_that_is_not_a_string_is_refused(api: Api) -> None:
    answer = api.post(JOBS, {"name": "n", "traceparent": 7})
    assert answer.status == 400
    assert answer.body["message"] == "traceparent: must be a string"


def test_two_traceparent_headers_are_refused(api: Api) -> None:
    # The gateway joins repeated headers with commas, as API Gateway does: the W3C spec
    # calls two traceparent headers invalid.
    answer = api.post(JOBS, {"name": "n"}, headers={"traceparent": f"{PRODUCER},{OTHER}"})
    assert answer.status == 400
    assert answer.body["message"].startswith("header traceparent: ")


def test_a_retry_keeps_its_jobs_traceparent(api: Api) -> None:
    old = api.created(SPACE, "n", traceparent=PRODUCER, maxAttempts=1)
    [held] = claim(api)
    report = {"id": old, "attempt": held["attempt"], "fail": {"error": "boom"}}
    assert api.post(f"{JOBS}:report", report).body["outcomes"] == [{"status": "FAILED"}]
    [outcome] = api.post(f"{JOBS}:retry", [old]).body["outcomes"]
    assert outcome["outcome"] == "NEW"
    assert api.get(f"{JOBS}/{outcome['id']}").body["traceparent"] == PRODUCER
    [again] = claim(api)
    assert again["id"] == outcome["id"] and again["traceparent"] == PRODUCER


def test_a_retry_of_a_job_without_one_has_none(api: Api) -> None:
    old = api.created(SPACE, "n", maxAttempts=1)
    [held] = claim(api)
    api.post(f"{JOBS}:report", {"id": old, "attempt": held["attempt"], "fail": {"error": "boom"}})
    [outcome] = api.post(f"{JOBS}:retry", [old]).body["outcomes"]
    assert "traceparent" not in api.get(f"{JOBS}/{outcome['id']}").body


def test_a_schedules_job_may_not_carry_one(api: Api) -> None:
    body = {"cron": "0 9 * * *", "job": {"name": "report", "traceparent": PRODUCER}}
    answer = api.request("PUT", f"{SPACE}/schedules/daily", body)
    assert answer.status == 400
    assert answer.body["message"] == "job.traceparent: is not a known field"


def test_create_claim_and_report_annotate_their_segment_with_the_w3c_trace_id(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    annotations: list[tuple[str, Any]] = []
    metadata: list[tuple[str, Any]] = []
    monkeypatch.setattr(observability.tracer, "put_annotation", lambda k, v: annotations.append((k, v)))
    monkeypatch.setattr(observability.tracer, "put_metadata", lambda k, v: metadata.append((k, v)))
    api.post(JOBS, [{"name": "n", "traceparent": PRODUCER}, {"name": "n", "traceparent": OTHER}])
    assert annotations == [("w3c_trace_id", TRACE)]
    assert metadata == [("w3c_trace_ids", [TRACE, OTHER[3:35]])]
    annotations.clear()
    [first, _] = claim(api, count=2)
    assert annotations == [("w3c_trace_id", TRACE)]
    annotations.clear()
    report = {"id": first["id"], "attempt": first["attempt"], "complete": {"result": 1}}
    assert api.post(f"{JOBS}:report", report).body["outcomes"] == [{"status": "COMPLETED"}]
    assert annotations == [("w3c_trace_id", TRACE)]
    annotations.clear()
    api.created(SPACE, "untraced")
    assert claim(api, "untraced") and annotations == [], "no trace, no annotation"
