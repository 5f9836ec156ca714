"""`client.jobs.retry(...)` and `emit jobs retry ID...` against a real `emit dev`."""

from __future__ import annotations

import json
from collections.abc import Callable

from emit import Emit

from tests.sdk.test_cli import Ran, emit_cmd  # noqa: F401  (the fixture)


def failed(client: Emit, name: str = "charge-invoice") -> str:
    """A job of `name` failed for good: its id."""
    job_id = client.jobs.create(name, {"invoiceId": "inv_9"}, max_attempts=1, priority=3).id
    [held] = client.jobs.claim(count=1, names=[name])
    [outcome] = client.jobs.report(
        [{"id": held.id, "attempt": held.attempt, "fail": {"error": "card declined"}}]
    )
    assert held.id == job_id and outcome.status == "failed"
    return job_id


def test_retry_makes_one_new_job_per_failed_job(client: Emit) -> None:
    old = failed(client)
    [first] = client.jobs.retry(old)
    assert first.new and first.retry_of == old and first.id not in (None, old)
    assert first.id is not None
    job = client.jobs.get(first.id)
    assert (job.retry_of, job.status, job.name, job.payload, job.priority) == (
        old,
        "pending",
        "charge-invoice",
        {"invoiceId": "inv_9"},
        3,
    )
    [again] = client.jobs.retry(old)
    assert (again.id, again.outcome) == (first.id, "duplicate")
    [refused] = client.jobs.retry(first.id)
    assert refused.rejection is not None and refused.rejection.reason == "not_retryable"


def test_emit_jobs_retry(client: Emit, space: str, emit_cmd: Callable[..., Ran]) -> None:  # noqa: F811
    old = failed(client)
    made = emit_cmd(space, "jobs", "retry", old)
    assert made.returncode == 0, made.stderr
    header, row = made.stdout.splitlines()
    assert header.split() == ["ID", "NEW", "JOB", "OUTCOME", "MESSAGE"]
    shown_old, new_id, outcome = row.split()
    assert (shown_old, outcome) == (old, "new") and client.jobs.get(new_id).retry_of == old
    again = emit_cmd(space, "jobs", "retry", old, "--json")
    assert json.loads(again.stdout) == [{"id": new_id, "retryOf": old, "outcome": "DUPLICATE"}]
    refused = emit_cmd(space, "jobs", "retry", new_id)
    assert refused.returncode == 1 and "not_retryable" in refused.stdout
    shown = emit_cmd(space, "jobs", "get", new_id)
    assert f"retry of: {old}" in " ".join(shown.stdout.split())
