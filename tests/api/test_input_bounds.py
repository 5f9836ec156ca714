"""Inputs at the edge of what the service can keep and send back (issue 8, defects 1, 2, 8):
nothing a client sends answers 500 later, poisons a claim, or makes an answer larger
than its budget."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from devserver import gateway
from shared import wire
from shared.runtime import Runtime
from shared.store import keys
from tests.support import Api

SPACE = "/v1/spaces/bounds"
JOBS = f"{SPACE}/jobs"
CLAIM = f"{JOBS}:claim"
REPORT = f"{JOBS}:report"


def nested(depth: int) -> Any:
    """JSON `depth` containers deep, alternating arrays and objects."""
    value: Any = "core"
    for level in range(depth):
        value = [value] if level % 2 else {"in": value}
    return value


def sent(api: Api, method: str, path: str, body: Any) -> tuple[int, str]:
    """A request through the gateway, answering the status and the answer's text exactly
    as the function returned it (the `Api` client gives it parsed)."""
    matched = gateway.match(method, path)
    assert isinstance(matched, gateway.Matched)
    headers = {"content-type": "application/json", "authorization": f"Bearer {api.token}"}
    event = gateway.event(
        matched,
        method=method,
        path=path,
        query="",
        headers=headers,
        body=b"" if body is None else json.dumps(body).encode(),
    )
    answer = gateway.invoke(matched, event)
    return answer["statusCode"], gateway.response_body(answer).decode()


def claim_one(api: Api, name: str = "n") -> dict[str, Any]:
    api.post(JOBS, {"name": name})
    (job,) = api.post(CLAIM, {"count": 1, "names": [name]}).body["jobs"]
    return dict(job)


# -- defect 1: nesting is bounded where JSON enters --------------------------------------


def test_json_nested_64_deep_is_kept_and_given_back_whole(api: Api) -> None:
    deep = nested(64)
    job_id = api.post(JOBS, {"name": "n", "payload": deep}).body["id"]
    (job,) = api.post(CLAIM, {"count": 1}).body["jobs"]
    assert job["payload"] == deep
    report = {
        "id": job_id,
        "attempt": 1,
        "event": deep,
        "lines": [{"level": "INFO", "message": "m", "metadata": deep}],
        "complete": {"result": deep},
    }
    assert api.post(REPORT, report).body == {"outcomes": [{"status": "COMPLETED"}]}
    assert api.get(f"{JOBS}/{job_id}").body["result"] == deep
    assert api.get(f"{JOBS}/{job_id}/events").body["events"][0]["event"] == deep
    assert api.get(f"{JOBS}/{job_id}/lines").body["lines"][0]["metadata"] == deep


TOO_DEEP = "must be nested at most 64 levels deep"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"name": "n", "payload": nested(65)}, f"payload: {TOO_DEEP}"),
        ([{"name": "n"}] * 3 + [{"name": "n", "payload": nested(65)}], f"jobs[3].payload: {TOO_DEEP}"),
        ({"jobs": [{"name": "n", "payload": {"a": [nested(63)]}}]}, f"jobs[0].payload: {TOO_DEEP}"),
        # Just under what the parser itself takes: once stored, it broke every claim that
        # picked it (the parse of the payload there runs deeper in the stack).
        ({"name": "n", "payload": nested(800)}, f"payload: {TOO_DEEP}"),
    ],
)
def test_a_payload_nested_deeper_is_refused_at_create(api: Api, body: Any, message: str) -> None:
    answer = api.post(JOBS, body)
    assert (answer.status, answer.body["message"]) == (400, message)
    assert api.get(JOBS).body["jobs"] == [], "nothing of the batch is kept"


@pytest.mark.parametrize(
    ("part", "field"),
    [
        ({"complete": {"result": nested(65)}}, "complete.result"),
        ({"event": nested(65)}, "event"),
        (
            {
                "lines": [
                    {"level": "INFO", "message": "m"},
                    {"level": "INFO", "message": "m", "metadata": nested(65)},
                ]
            },
            "lines[1].metadata",
        ),
    ],
)
def test_a_report_nested_deeper_is_invalid_and_the_others_apply(
    api: Api, part: dict[str, Any], field: str
) -> None:
    job = claim_one(api)
    alone = api.post(REPORT, {"id": job["id"], "attempt": 1} | part)
    assert (alone.status, alone.body["message"]) == (400, f"{field}: {TOO_DEEP}")
    batch = [{"id": job["id"], "attempt": 1} | part, {"id": job["id"], "attempt": 1, "touch": {}}]
    answer = api.post(REPORT, batch)
    assert answer.status == 200
    assert answer.body["outcomes"] == [
        {"rejection": {"reason": "INVALID", "message": f"reports[0].{field}: {TOO_DEEP}"}},
        {"status": "RUNNING"},
    ]
    shown = api.get(f"{JOBS}/{job['id']}").body
    assert (shown["status"], shown["eventCount"], shown["lineCount"]) == ("RUNNING", 0, 0)


def test_a_stored_payload_that_cannot_be_read_fails_alone_and_the_claim_answers(
    rt: Runtime, api: Api
) -> None:
    """A payload stored before nesting was bounded cannot be parsed at claim: that job fails
    for good with the reason, and the claim still hands out the jobs it won beside it."""
    api.patch(SPACE, {"maxInFlight": 10})
    ids = [api.post(JOBS, {"name": "n", "payload": i}).body["id"] for i in range(3)]
    poisoned = ids[1]
    rt.db.update(keys.job("bounds", poisoned), "SET payload = :p", vals={":p": "[" * 5_000 + "]" * 5_000})
    answer = api.post(CLAIM, {"count": 3})
    assert answer.status == 200
    assert [(j["id"], j["payload"]) for j in answer.body["jobs"]] == [(ids[0], 0), (ids[2], 2)]
    rows = {j["id"]: j for j in api.get(JOBS).body["jobs"]}
    assert rows[poisoned]["status"] == "FAILED"
    item = rt.jobs.get_item("bounds", poisoned)
    assert item is not None
    assert rt.blobs.read_many("bounds", [(item, "error")]) == [
        b"emit could not read this job's payload to hand it out"
    ]
    assert api.get(SPACE).body["inFlight"] == 2, "the failed job left the count"


# -- defect 2: answers are measured as they are sent -------------------------------------


def with_budget(rt: Runtime, most: int) -> None:
    rt.context = dataclasses.replace(
        rt.context, config=dataclasses.replace(rt.context.config, claim_payload_bytes=most)
    )


def test_answers_carry_characters_as_they_are_not_escapes(api: Api) -> None:
    job_id = api.post(JOBS, {"name": "n", "payload": "😀é"}).body["id"]
    status, text = sent(api, "GET", f"{JOBS}/{job_id}", None)
    assert status == 200
    assert '"payload":"😀é"' in text


def test_a_claim_of_emoji_payloads_stays_within_its_budget(rt: Runtime, api: Api) -> None:
    budget = 1024 * 1024
    with_budget(rt, budget)
    emoji = "😀" * 100_000  # 400 KB of UTF-8; 1.2 MB as \u escapes
    for _ in range(4):
        api.post(JOBS, {"name": "n", "payload": emoji})
    status, text = sent(api, "POST", CLAIM, {"count": 4})
    assert status == 200
    assert len(text.encode()) <= budget, "the answer's bytes as sent"
    assert wire.cost(text) <= budget, "and as they sit in the function's response on AWS"
    assert [j["payload"] == emoji for j in json.loads(text)["jobs"]] == [True, True]


def test_jobs_past_the_answers_budget_stay_pending_as_they_were(rt: Runtime, api: Api) -> None:
    """Stored sizes undercount what quotes cost once the answer sits in a Lambda response:
    the store picks two jobs, only one fits, and the other is given back untouched."""
    budget = 1024 * 1024
    with_budget(rt, budget)
    quotes = ['"'] * 100_000  # 500 KB stored; twice that inside the function's response
    ids = [api.post(JOBS, {"name": "n", "payload": quotes}).body["id"] for _ in range(3)]
    handed: list[str] = []
    for _ in range(3):
        status, text = sent(api, "POST", CLAIM, {"count": 3})
        assert status == 200 and wire.cost(text) <= budget
        jobs = json.loads(text)["jobs"]
        assert [j["attempt"] for j in jobs] == [1], "one job a claim, each at its first attempt"
        handed += [j["id"] for j in jobs]
        for job_id in ids:
            shown = api.get(f"{JOBS}/{job_id}").body
            held = job_id in handed
            assert (shown["status"], shown["attempt"]) == (("RUNNING", 1) if held else ("PENDING", 0))
            assert [a["attempt"] for a in shown["attempts"]] == ([1] if held else []), "no attempt made"
    assert handed == ids, "oldest first: a job given back keeps its place"
    assert api.post(CLAIM, {"count": 3}).body == {"jobs": []}


# -- defect 8: every number that reaches DynamoDB fits it --------------------------------


def test_a_progress_too_small_for_dynamodb_is_kept_as_zero_and_the_batch_applies(api: Api) -> None:
    first, second, third = (claim_one(api, name) for name in ("a", "b", "c"))
    reports = [
        {"id": first["id"], "attempt": 1, "progress": {"percent": 50}},
        {"id": second["id"], "attempt": 1, "progress": {"percent": 1e-300}},
        {"id": third["id"], "attempt": 1, "progress": {"percent": 100 / 3}, "complete": {}},
    ]
    answer = api.post(REPORT, reports)
    assert answer.status == 200, answer
    assert answer.body["outcomes"] == [{"status": "RUNNING"}, {"status": "RUNNING"}, {"status": "COMPLETED"}]
    percents = [api.get(f"{JOBS}/{j['id']}").body["progress"]["percent"] for j in (first, second, third)]
    assert percents == [50, 0, 33.333333], "kept to six decimal places"


HUGE = 10**40  # past DynamoDB's 38 digits


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (JOBS, {"name": "n", "delayMs": HUGE}, "delayMs: must be at most 31536000000"),
        (JOBS, {"name": "n", "maxAttempts": HUGE}, "maxAttempts: must be at most 1000"),
        (JOBS, {"name": "n", "timeoutMs": HUGE}, "timeoutMs: must be at most 43200000"),
        (JOBS, {"name": "n", "backoffMs": HUGE}, "backoffMs: must be at most 86400000"),
        (JOBS, {"name": "n", "backoff": {"maxMs": HUGE}}, "backoff.maxMs: must be at most 86400000"),
        (CLAIM, {"count": HUGE}, "count: must be at most 1000"),
        (CLAIM, {"count": 1, "leaseMs": HUGE}, "leaseMs: must be at most 43200000"),
        (SPACE, {"maxInFlight": HUGE}, "maxInFlight: must be at most 1000000000"),
        (SPACE, {"unclaimedMs": HUGE}, "unclaimedMs: must be at most 31536000000"),
        (SPACE, {"maxEvents": HUGE}, "maxEvents: must be at most 100000"),
    ],
)
def test_numbers_past_what_dynamodb_holds_are_refused(api: Api, path: str, body: Any, message: str) -> None:
    answer = api.patch(path, body) if path == SPACE else api.post(path, body)
    assert (answer.status, answer.body["message"]) == (400, message)


def test_a_run_time_past_what_dynamodb_holds_is_refused(api: Api) -> None:
    answer = api.post(JOBS, {"name": "n", "runAtMs": HUGE})
    assert answer.status == 400 and answer.body["message"].startswith("runAtMs: must be at most a year ahead")


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"progress": {"percent": HUGE}}, "progress.percent: must be at most 100"),
        ({"progress": {"percent": -1e-300}}, "progress.percent: must be at least 0"),
        ({"touch": {"leaseMs": HUGE}}, "touch.leaseMs: must be at most 43200000"),
        ({"fail": {"retryAfterMs": HUGE}}, "fail.retryAfterMs: must be at most 86400000"),
        ({"attempt": HUGE}, "attempt: must be at most 2147483648"),
    ],
)
def test_a_report_with_a_number_past_dynamodb_is_invalid_and_the_others_apply(
    api: Api, part: dict[str, Any], message: str
) -> None:
    job = claim_one(api)
    reports = [{"id": job["id"], "attempt": 1} | part, {"id": job["id"], "attempt": 1, "touch": {}}]
    answer = api.post(REPORT, reports)
    assert answer.body["outcomes"] == [
        {"rejection": {"reason": "INVALID", "message": f"reports[0].{message}"}},
        {"status": "RUNNING"},
    ]
