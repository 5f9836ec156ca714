"""Retention: a finished job goes, and what belonged to it goes with it."""

from __future__ import annotations

import os

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
    assert rt.db.get(keys.blob("keep", job_id, "result-1")) is not None
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
    assert rt.db.get(keys.idempotency_key("keep", "k1")) is None
    assert rt.db.get(keys.delivery("keep", job_id))["state"] == "REMOVED", "a tombstone, for late records"
    assert rt.s3.list_objects_v2(Bucket=rt.bucket).get("KeyCount", 0) == 0
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
    assert sorted(row["sk"] for row in side) == ["error-1", "error-2"]
    bg.stream()
    clock.advance(1_000)
    bg.expire_ttl()
    bg.stream()
    assert rt.db.query("pk = :pk", vals={":pk": f"B#keep#{job_id}"}, consistent=True)[0] == []
