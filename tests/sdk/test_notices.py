"""Failure notices through the SDK, under `emit dev` (its stream running on its own)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from emit import Emit, SettledNotices

from tests.support import eventually


def test_a_failed_job_sends_a_notice_job_that_a_worker_claims(client: Emit) -> None:
    shown = client.spaces.update(
        on_failure={"name": "alert"}, on_settled={"name": "audit", "statuses": ["FAILED"]}
    )
    assert shown.on_failure == "alert" and shown.on_settled == SettledNotices("audit", ("failed",))
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


def test_notices_and_deadlines_in_python_terms(client: Emit) -> None:
    """`notify_on_failure` / `notify_on_settled` set the destinations (None clears them);
    `expires_in=` takes a timedelta."""
    shown = client.spaces.notify_on_settled("audit", ["completed", "stalled"])
    assert shown.on_settled is not None and shown.on_settled.statuses == ("completed", "stalled")
    assert client.spaces.notify_on_failure("alert").on_failure == "alert"
    assert client.spaces.notify_on_failure(None).on_failure is None
    made = client.jobs.create("later", expires_in=timedelta(minutes=5))
    job = client.jobs.get(made.id)
    assert job.expires_at is not None and job.created_at + timedelta(minutes=5) == job.expires_at
    at = datetime.now(UTC) + timedelta(hours=1)
    job = client.jobs.get(client.jobs.create("later", expires_at=at).id)
    assert job.expires_at_ms == round(at.timestamp() * 1000) and job.expires_at is not None
    assert abs(job.expires_at - at) < timedelta(milliseconds=1)
