"""Retention: a finished job goes, and what belonged to it goes with it."""

from __future__ import annotations

import os
from typing import Any

import pytest

from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.store import keys
from tests.support import Api, Background
from tests.timers.conftest import Receiver

JOBS = "/v1/spaces/keep/jobs"


def test_a_removed_job_takes_its_lines_events_values_key_and_delivery(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, receiver: Receiver
) -> None:
    api.patch("/v1/spaces/keep", {"completedRetentionMs": 60_000})
    big = os.urandom(400_000).hex()  # compresses to more than a side item holds: S3
    job_id = api.post(
        JOBS, {"name": "n", "key": "k1", "payload": big, "callback": {"url": "https://example.com/hook"}}
    ).body["id"]
    [held] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    api.post(
        f"{JOBS}:report",
        {
            "id": job_id,
            "attempt": held["attempt"],
            "lines": [{"level": "INFO", "message": "hi"}],
            "event": {"e": 1},
            "complete": {"result": os.urandom(2_000).hex()},
        },
    )
    bg.stream()
    bg.stream()  # the record of the stream clearing the job's callback mark
    assert rt.s3.list_objects_v2(Bucket=rt.bucket)["KeyCount"] == 1
    [result] = rt.db.query("pk = :pk", vals={":pk": f"B#keep#{job_id}"}, consistent=True)[0]
    assert result["sk"].startswith("result-1")
    clock.advance(60_000)
    assert bg.expire_ttl() == 1
    records = bg.stream()
    assert [r["eventName"] for r in records if r["dynamodb"]["Keys"]["pk"]["S"].startswith("J#")] == [
        "REMOVE"
    ]
    bg.stream(records)  # a REMOVE record delivered twice is harmless
    left = [
        rt.db.query("pk = :pk", vals={":pk": pk}, consistent=True)[0]
        for pk in (keys.lines("keep", job_id), keys.events("keep", job_id), f"B#keep#{job_id}")
    ]
    assert left == [[], [], []]
    assert rt.db.get(keys.delivery("keep", job_id))["state"] == "REMOVED", "a tombstone, for late records"
    assert rt.s3.list_objects_v2(Bucket=rt.bucket).get("KeyCount", 0) == 0
    # The key outlives its job by the key window (10 minutes), then goes too.
    assert api.post(JOBS, {"name": "n", "key": "k1"}).body == {"id": job_id, "outcome": "DUPLICATE"}
    clock.advance(86_400_000)
    bg.expire_ttl()
    assert rt.db.get(keys.idempotency_key("keep", "k1")) is None
    again = api.post(JOBS, {"name": "n", "key": "k1"}).body
    assert again["outcome"] == "NEW"


def test_the_errors_of_earlier_attempts_go_with_their_job(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock
) -> None:
    api.patch("/v1/spaces/keep", {"failedRetentionMs": 1_000})
    job_id = api.post(JOBS, {"name": "n", "maxAttempts": 2, "backoffMs": 0}).body["id"]
    for attempt in (1, 2):
        api.post(f"{JOBS}:claim", {"count": 1})
        trace = f"attempt {attempt}: " + os.urandom(1_500).hex()  # too long to stay in the job item
        api.post(f"{JOBS}:report", {"id": job_id, "attempt": attempt, "fail": {"error": trace}})
    side = rt.db.query("pk = :pk", vals={":pk": f"B#keep#{job_id}"}, consistent=True)[0]
    assert sorted(row["sk"][: len("error-1")] for row in side) == ["error-1", "error-2"]
    bg.stream()
    clock.advance(1_000)
    bg.expire_ttl()
    bg.stream()
    assert rt.db.query("pk = :pk", vals={":pk": f"B#keep#{job_id}"}, consistent=True)[0] == []


def test_every_value_a_report_stored_goes_with_its_job(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report killed between storing its value and the write that points at it, a refused
    stale report, and the winning one: retention removes all they stored (S3 included)."""
    api.patch("/v1/spaces/keep", {"completedRetentionMs": 1_000})
    job_id = api.post(JOBS, {"name": "n", "backoffMs": 0, "timeoutMs": 1_000}).body["id"]
    [first] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    clock.advance(1_000)
    bg.tick()
    [second] = api.post(f"{JOBS}:claim", {"count": 1, "leaseMs": 60_000}).body["jobs"]

    def big() -> dict[str, str]:
        return {"blob": os.urandom(400_000).hex()}  # S3

    store = rt.blobs.store

    def store_then_die(values: list[Any]) -> None:
        store(values)
        raise RuntimeError("killed")

    monkeypatch.setattr(rt.blobs, "store", store_then_die)
    killed = api.post(
        f"{JOBS}:report", {"id": job_id, "attempt": second["attempt"], "complete": {"result": big()}}
    )
    assert killed.status == 500
    monkeypatch.setattr(rt.blobs, "store", store)
    result = big()
    done = api.post(
        f"{JOBS}:report", {"id": job_id, "attempt": second["attempt"], "complete": {"result": result}}
    )
    assert done.body["outcomes"] == [{"status": "COMPLETED"}]
    stale = api.post(
        f"{JOBS}:report", {"id": job_id, "attempt": first["attempt"], "complete": {"result": big()}}
    )
    assert stale.body["outcomes"][0]["rejection"]["reason"] == "ALREADY_FINISHED"
    assert api.get(f"{JOBS}/{job_id}").body["result"] == result
    bg.stream()
    clock.advance(1_000)
    bg.expire_ttl()
    bg.stream()
    assert rt.db.query("pk = :pk", vals={":pk": f"B#keep#{job_id}"}, consistent=True)[0] == []
    assert rt.s3.list_objects_v2(Bucket=rt.bucket).get("KeyCount", 0) == 0


def test_a_key_is_held_for_its_window_even_after_its_job_is_removed(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    api.patch("/v1/spaces/keep", {"keyWindowMs": 600_000, "completedRetentionMs": 0})
    job_id = api.post(JOBS, {"name": "n", "key": "once"}).body["id"]
    [held] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": held["attempt"], "complete": {}})
    finished = clock.now_ms()
    clock.advance(1_000)
    duplicate = {"id": job_id, "outcome": "DUPLICATE"}
    assert api.post(JOBS, {"name": "n", "key": "once"}).body == duplicate, "past retention, in the window"
    bg.stream()
    assert bg.expire_ttl() == 1
    bg.stream()  # the job's REMOVE record
    assert api.get(f"{JOBS}/{job_id}").status == 404
    assert api.post(JOBS, {"name": "n", "key": "once"}).body == duplicate, "removed, in the window"
    clock.advance(finished + 600_000 - 1 - clock.now_ms())
    bg.expire_ttl()
    bg.stream()
    assert api.post(JOBS, {"name": "n", "key": "once"}).body == duplicate
    clock.advance(1)
    assert api.post(JOBS, {"name": "n", "key": "once"}).body["outcome"] == "NEW"


def test_removing_a_job_looks_only_for_what_it_had(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The REMOVE record's old image says what the job had: a job without lines, events,
    stored values, key or callback costs the stream no call; one with lines but no events
    costs the lines query (and the delete) only."""
    api.patch("/v1/spaces/keep", {"completedRetentionMs": 60_000})
    plain = api.post(JOBS, {"name": "n"}).body["id"]
    logged = api.post(JOBS, {"name": "n"}).body["id"]
    for held in api.post(f"{JOBS}:claim", {"count": 2}).body["jobs"]:
        report: dict[str, Any] = {"id": held["id"], "attempt": held["attempt"], "complete": {}}
        if held["id"] == logged:
            report["lines"] = [{"level": "INFO", "message": "hi"}]
        assert api.post(f"{JOBS}:report", report).status == 200
    bg.stream()
    clock.advance(60_000)
    assert bg.expire_ttl() == 2
    removes = [r for r in bg.records() if r["eventName"] == "REMOVE"]
    assert len(removes) == 2

    calls: list[tuple[str, str]] = []
    for method in (
        "get",
        "put",
        "update",
        "apply",
        "delete",
        "query",
        "batch_put",
        "batch_delete",
        "batch_get",
    ):
        real = getattr(rt.db, method)

        def spy(*args: Any, _name: str = method, _real: Any = real, **kw: Any) -> Any:
            calls.append((_name, str(args[0])[:60]))
            return _real(*args, **kw)

        monkeypatch.setattr(rt.db, method, spy)
    by_job = {r["dynamodb"]["Keys"]["sk"]["S"]: r for r in removes}
    bg.stream([by_job[plain]])
    assert calls == []
    bg.stream([by_job[logged]])
    assert [name for name, _ in calls] == ["query", "batch_delete"]
    assert rt.db.query("pk = :pk", vals={":pk": keys.lines("keep", logged)}, consistent=True)[0] == []
