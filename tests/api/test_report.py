"""POST /v1/spaces/{space}/jobs:report through its Lambda handler."""

from __future__ import annotations

import os
from typing import Any

import pytest

from shared.clock import ManualClock
from shared.runtime import Runtime
from tests.conftest import mint
from tests.support import Api

JOBS = "/v1/spaces/work/jobs"


def claimed(api: Api, **job: Any) -> dict:
    api.post(JOBS, {"name": "n", **job})
    [held] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    return dict(held)


def report(api: Api, held: dict, **parts: Any) -> dict:
    answer = api.post(f"{JOBS}:report", {"id": held["id"], "attempt": held["attempt"], **parts})
    assert answer.status == 200, answer
    [outcome] = answer.body["outcomes"]
    return dict(outcome)


def job(api: Api, held: dict) -> dict:
    return dict(api.get(f"{JOBS}/{held['id']}").body)


def test_touch_renews_the_lease_and_never_shortens_it(api: Api, clock: ManualClock) -> None:
    held = claimed(api, timeoutMs=60_000)
    clock.advance(10_000)
    assert report(api, held, touch={}) == {"status": "RUNNING"}
    assert job(api, held)["leaseUntilMs"] == str(clock.now_ms() + 60_000)
    assert report(api, held, touch={"leaseMs": 120_000}) == {"status": "RUNNING"}
    assert report(api, held, touch={"leaseMs": 1_000}) == {"status": "RUNNING"}
    assert job(api, held)["leaseUntilMs"] == str(clock.now_ms() + 120_000)


def test_complete_keeps_the_result(api: Api, clock: ManualClock) -> None:
    held = claimed(api)
    assert report(api, held, complete={"result": {"messageId": "msg_5521"}}) == {"status": "COMPLETED"}
    done = job(api, held)
    assert done["result"] == {"messageId": "msg_5521"} and done["finishedAtMs"] == clock.now_ms()
    assert "leaseUntilMs" not in done


def test_a_failed_attempt_waits_its_backoff_then_runs_again(api: Api, clock: ManualClock) -> None:
    held = claimed(api, backoffMs=2_000)
    assert report(api, held, fail={"error": "SMTP server timed out"}) == {"status": "PENDING"}
    waiting = job(api, held)
    assert waiting["readyAtMs"] == clock.now_ms() + 2_000 and waiting["error"] == "SMTP server timed out"
    assert api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"] == []
    clock.advance(2_000)
    [again] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    assert again["attempt"] == 2
    assert report(api, again, fail={"error": "again"}) == {"status": "PENDING"}
    assert job(api, again)["readyAtMs"] == clock.now_ms() + 4_000, "exponential: the second wait doubles"


def test_retry_after_replaces_the_policy_wait(api: Api, clock: ManualClock) -> None:
    held = claimed(api)
    report(api, held, fail={"error": "rate limited", "retryAfterMs": 30_000})
    assert job(api, held)["readyAtMs"] == clock.now_ms() + 30_000


def test_out_of_attempts_fails_for_good(api: Api, clock: ManualClock) -> None:
    held = claimed(api, maxAttempts=2, backoffMs=0)
    assert report(api, held, fail={"error": "one"}) == {"status": "PENDING"}
    [again] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    assert report(api, again, fail={"error": "two"}) == {"status": "FAILED"}
    failed = job(api, again)
    assert failed["error"] == "two" and failed["failures"] == 2 and "result" not in failed


def test_unrecoverable_fails_for_good_at_once(api: Api) -> None:
    held = claimed(api)
    assert report(api, held, fail={"error": "card declined", "unrecoverable": True}) == {"status": "FAILED"}


def test_release_gives_the_attempt_back(api: Api) -> None:
    held = claimed(api, maxAttempts=1)
    assert report(api, held, release={}) == {"status": "PENDING"}
    [again] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    assert again["attempt"] == 2, "every hand-out has a new attempt number"
    assert report(api, again, fail={"error": "x"}) == {"status": "FAILED"}, (
        "the release did not use up the one attempt"
    )


def test_a_stale_attempt_is_refused(api: Api) -> None:
    held = claimed(api)
    report(api, held, release={})
    [again] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    outcome = report(api, held, complete={"result": 1})
    assert outcome["rejection"]["reason"] == "STALE"
    assert job(api, again)["status"] == "RUNNING"


def test_not_running_already_finished_and_not_found(api: Api) -> None:
    held = claimed(api, backoffMs=60_000)
    report(api, held, fail={"error": "x"})
    assert report(api, held, touch={})["rejection"]["reason"] == "NOT_RUNNING"
    other = claimed(api)
    api.post(f"{JOBS}:cancel", [other["id"]])
    assert report(api, other, complete={})["rejection"]["reason"] == "ALREADY_FINISHED"
    ghost = {"id": "01J00000000000000000000000", "attempt": 1}
    assert report(api, ghost, touch={})["rejection"]["reason"] == "NOT_FOUND"


def test_progress_lines_and_event_in_one_report(api: Api) -> None:
    held = claimed(api)
    outcome = report(
        api,
        held,
        touch={},
        progress={"percent": 40, "message": "2000 rows"},
        lines=[
            {"level": "INFO", "message": "import started", "source": "importer", "metadata": {"rows": 5000}}
        ],
        event={"stage": "importing"},
    )
    assert outcome == {"status": "RUNNING"}
    assert job(api, held)["progress"] == {"percent": 40, "message": "2000 rows"}
    lines = api.get(f"{JOBS}/{held['id']}/lines").body
    assert [(line["level"], line["message"], line["metadata"]) for line in lines["lines"]] == [
        ("INFO", "import started", {"rows": 5000})
    ]
    events = api.get(f"{JOBS}/{held['id']}/events").body
    assert [e["event"] for e in events["events"]] == [{"stage": "importing"}]


def test_lines_and_events_page_in_order(api: Api) -> None:
    held = claimed(api)
    for batch in range(3):
        report(
            api,
            held,
            lines=[{"level": "DEBUG", "message": f"{batch}-{i}"} for i in range(4)],
            event={"n": batch},
        )
    path = f"{JOBS}/{held['id']}"
    seen, cursor = [], None
    while True:
        page = api.get(f"{path}/lines", query={"limit": 5, **({"cursor": cursor} if cursor else {})}).body
        seen += [line["message"] for line in page["lines"]]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert seen == [f"{b}-{i}" for b in range(3) for i in range(4)]
    first = api.get(f"{path}/events", query={"limit": 2}).body
    rest = api.get(f"{path}/events", query={"cursor": first["cursor"]}).body
    assert [e["event"]["n"] for e in first["events"] + rest["events"]] == [0, 1, 2] and rest["cursor"] is None


@pytest.mark.parametrize("kind", ["lines", "events"])
def test_lines_and_events_lost_to_a_fault_still_come_to_an_end(
    rt: Runtime, api: Api, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A fault after the job's write and before its lines or event (the README says they are
    lost) must not leave a listing whose cursor never runs out."""
    held = claimed(api)
    report(api, held, lines=[{"level": "INFO", "message": "kept"}], event={"n": 0})

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the store failed")

    monkeypatch.setattr(rt.journal, "append_lines" if kind == "lines" else "put_event", broken)
    ending = {"lines": [{"level": "INFO", "message": "lost"}], "event": {"n": 1}, "complete": {}}
    assert api.post(f"{JOBS}:report", {"id": held["id"], "attempt": 1, **ending}).status == 500
    monkeypatch.undo()
    path = f"{JOBS}/{held['id']}/{kind}"
    first = api.get(path, query={"limit": 1}).body
    assert len(first[kind]) == 1 and first["cursor"] == "1", "a full page: there may be more"
    assert api.get(path, query={"cursor": "1"}).body == {kind: [], "cursor": None}


def test_too_many_events_applies_the_rest_of_the_report(api: Api) -> None:
    api.patch("/v1/spaces/work", {"maxEvents": 1, "maxInFlight": 5})
    held = claimed(api)
    assert report(api, held, event={"n": 1}) == {"status": "RUNNING"}
    outcome = report(api, held, event={"n": 2}, progress={"percent": 90}, complete={"result": "done"})
    assert outcome["rejection"]["reason"] == "TOO_MANY_EVENTS"
    finished = job(api, held)
    assert finished["status"] == "COMPLETED" and finished["progress"]["percent"] == 90
    assert finished["eventCount"] == 1
    assert api.get("/v1/spaces/work").body["inFlight"] == 0, "the finished job left the in-flight count"


def test_a_result_over_4_mib_fails_the_attempt(api: Api) -> None:
    held = claimed(api)
    outcome = report(api, held, complete={"result": "x" * (4 * 1024 * 1024)})
    assert outcome == {"status": "PENDING"}
    assert job(api, held)["error"].startswith("result is larger than")


def test_an_error_is_cut_to_4_kib(api: Api) -> None:
    held = claimed(api, maxAttempts=1)
    report(api, held, fail={"error": "é" * 5000})
    assert len(job(api, held)["error"].encode()) <= 4096


def test_a_batch_of_reports_answers_each_and_invalid_ones_do_not_block_the_rest(api: Api) -> None:
    api.post(JOBS, [{"name": "n"}, {"name": "n"}])
    a, b = api.post(f"{JOBS}:claim", {"count": 2}).body["jobs"]
    answer = api.post(
        f"{JOBS}:report",
        {
            "reports": [
                {"id": a["id"], "attempt": 1, "complete": {}},
                {"id": b["id"], "attempt": 1, "touch": {}, "release": {}},
            ]
        },
    )
    assert answer.status == 200
    first, second = answer.body["outcomes"]
    assert first == {"status": "COMPLETED"}
    assert second["rejection"]["reason"] == "INVALID"
    assert second["rejection"]["message"] == (
        "reports[1]: give at most one of touch, complete, fail and release, not touch and release"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"attempt": 1}, "id: is required"),
        ({"id": "x"}, "attempt: is required"),
        ({"id": "x", "attempt": 0}, "attempt: must be at least 1"),
        (
            {"id": "x", "attempt": 1, "fail": {"retryAfterMs": 86_400_001}},
            "fail.retryAfterMs: must be at most 86400000",
        ),
        ({"id": "x", "attempt": 1, "progress": {"percent": 101}}, "progress.percent: must be at most 100"),
        (
            {"id": "x", "attempt": 1, "lines": [{"level": "LOUD", "message": "m"}]},
            "lines[0].level: must be one of 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR' or 'FATAL'",
        ),
        (
            {"id": "x", "attempt": 1, "lines": [{"level": "INFO", "message": "m" * 4097}]},
            "lines[0].message: must be at most 4096 bytes of UTF-8",
        ),
        (
            {"id": "x", "attempt": 1, "lines": [{"level": "INFO", "message": "m"}] * 1001},
            "lines: must have at most 1000 items",
        ),
        (
            {"id": "x", "attempt": 1, "event": {"big": "x" * 4097}},
            "body: event: must be at most 4096 bytes of JSON",
        ),
        ({"id": "x", "attempt": 1, "touch": {"leaseMs": 5}}, "touch.leaseMs: must be at least 1000"),
        (
            {"id": "x", "attempt": 1, "complete": {}, "fail": {}},
            "body: give at most one of touch, complete, fail and release, not complete and fail",
        ),
    ],
)
def test_a_request_of_only_invalid_reports_is_refused(api: Api, body: dict, message: str) -> None:
    answer = api.post(f"{JOBS}:report", body)
    assert (answer.status, answer.body) == (400, {"code": "InvalidArgument", "message": message})


def test_reporting_needs_the_work_scope(rt: Runtime, api: Api) -> None:
    held = claimed(api)
    reader = api.as_token(mint(rt, ["read"]))
    assert reader.post(f"{JOBS}:report", {"id": held["id"], "attempt": 1, "touch": {}}).status == 403


def _stored_outside(rt: Runtime, space: str = "work") -> tuple[list[str], int]:
    """The side items (their keys) and S3 objects (their count) of a space's stored values."""
    side = rt.dynamodb.scan(
        TableName=rt.table,
        FilterExpression="begins_with(pk, :b)",
        ExpressionAttributeValues={":b": {"S": f"B#{space}#"}},
    )["Items"]
    objects = rt.s3.list_objects_v2(Bucket=rt.bucket).get("KeyCount", 0)
    return sorted(f"{i['pk']['S']}/{i['sk']['S']}" for i in side), objects


@pytest.mark.parametrize("size", [3_000, 400_000], ids=["side item", "s3"])
def test_a_second_complete_for_one_attempt_keeps_the_first_result(rt: Runtime, api: Api, size: int) -> None:
    """Results too big for the job item live elsewhere: a refused report must not replace one."""
    held = claimed(api)
    first = {"by": "first", "blob": os.urandom(size).hex()}
    second = {"by": "second", "blob": os.urandom(size).hex()}
    assert report(api, held, complete={"result": first}) == {"status": "COMPLETED"}
    assert report(api, held, complete={"result": second})["rejection"]["reason"] == "ALREADY_FINISHED"
    assert job(api, held)["result"] == first
    side, objects = _stored_outside(rt)
    assert len(side) + objects == 1, "the refused report left nothing behind"


@pytest.mark.parametrize("size", [3_000, 400_000], ids=["side item", "s3"])
def test_reports_on_jobs_that_do_not_exist_store_nothing(rt: Runtime, api: Api, size: int) -> None:
    ghost = {"id": "01J00000000000000000000000", "attempt": 1}
    big = os.urandom(size).hex()
    assert report(api, ghost, complete={"result": big})["rejection"]["reason"] == "NOT_FOUND"
    assert report(api, ghost, fail={"error": big[:4_000]})["rejection"]["reason"] == "NOT_FOUND"
    assert _stored_outside(rt) == ([], 0)
