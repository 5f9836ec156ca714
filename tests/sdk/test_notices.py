"""Failure notices through the SDK, under `emit dev` (its stream running on its own)."""

from __future__ import annotations

from emit import Emit

from tests.support import eventually


def test_a_failed_job_sends_a_notice_job_that_a_worker_claims(client: Emit) -> None:
    shown = client.spaces.update(
        on_failure={"name": "alert"}, on_settled={"name": "audit", "statuses": ["FAILED"]}
    )
    assert shown["onFailure"]["name"] == "alert" and shown["onSettled"]["statuses"] == ["FAILED"]
    job = client.jobs.create("charge", {"order": 7}, max_attempts=2).id
    [held] = client.jobs.claim(count=1, names=["charge"])
    client.jobs.report(
        [{"id": held.id, "attempt": held.attempt, "fail": {"error": "declined", "unrecoverable": True}}]
    )

    [notice] = eventually(lambda: client.jobs.claim(count=1, names=["alert"]))
    assert notice.payload["jobId"] == job
    assert (notice.payload["status"], notice.payload["error"], notice.payload["attempts"]) == (
        "FAILED",
        "declined",
        1,
    )
    assert notice.payload["maxAttempts"] == 2 and "failedAtMs" in notice.payload
    [audit] = eventually(lambda: list(client.jobs.list(name="audit")))
    assert client.jobs.get(audit.id).payload["settledAtMs"] == notice.payload["failedAtMs"]
