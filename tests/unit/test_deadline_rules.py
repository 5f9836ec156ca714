"""Deadlines in the state machine and its writes: the guards, the cancel, and a retry that
could not start before the deadline."""

from __future__ import annotations

from shared import job as jobs_values
from shared import machine
from shared.job import Backoff, Job, JobStatus, Retention
from shared.store import deadlines
from shared.store.codec import expired, transition_update

RETENTION = Retention(completed_ms=1_000, failed_ms=5_000)


def running(**overrides: object) -> Job:
    fields: dict = {
        "id": "01J0000000000000000000000A",
        "space": "s",
        "name": "n",
        "status": JobStatus.RUNNING,
        "attempt": 1,
        "failures": 0,
        "max_attempts": 4,
        "timeout_ms": 60_000,
        "backoff": Backoff("constant", 1_000, 3_600_000, False),
        "created_at_ms": 0,
        "run_at_ms": 0,
        "lease_until_ms": 90_000,
        "expires_at_ms": 10_000,
    }
    fields.update(overrides)
    return Job(**fields)


def fail(job: Job, *, now_ms: int, retry_after_ms: int | None = None) -> machine.Transition:
    return machine.fail(
        job,
        now_ms=now_ms,
        error="boom",
        unrecoverable=False,
        retry_after_ms=retry_after_ms,
        rand=0,
        retention=RETENTION,
        aging_ms=60_000,
    )


def test_a_retry_ready_before_the_deadline_waits() -> None:
    t = fail(running(), now_ms=8_999)
    assert (t.to, t.changes["ready_at_ms"]) == (JobStatus.PENDING, 9_999)


def test_a_retry_ready_at_or_after_the_deadline_fails_for_good_with_its_error() -> None:
    for now, retry_after in ((9_000, None), (5_000, 5_000), (5_000, 60_000)):
        t = fail(running(), now_ms=now, retry_after_ms=retry_after)
        assert (t.to, t.changes["error"], t.changes["failures"]) == (JobStatus.FAILED, "boom", 1)


def test_without_a_deadline_a_retry_waits_however_long() -> None:
    assert fail(running(expires_at_ms=None), now_ms=9_000, retry_after_ms=86_400_000).to == JobStatus.PENDING


def test_a_lease_ending_when_no_retry_could_start_in_time_fails_the_job() -> None:
    t = machine.expire(running(lease_until_ms=9_500), now_ms=9_500, rand=0, retention=RETENTION, aging_ms=1)
    assert (t.name, t.to, t.changes["error"]) == ("expire", JobStatus.FAILED, machine.LEASE_EXPIRED)


def test_the_deadline_cancel_is_guarded_by_the_deadline_and_an_unfinished_status() -> None:
    t = machine.deadline(now_ms=10_000, retention=RETENTION, has_callback=False)
    assert (t.to, t.changes["error"], t.ready_index) == (JobStatus.CANCELLED, "expired", "leave")
    assert t.guard.statuses == jobs_values.UNFINISHED
    update = transition_update("s", "j", t)
    assert "#expiresAt <= " in update.condition()
    assert 10_000 in update.vals.values()


def test_claims_and_reports_require_no_deadline_or_one_still_ahead() -> None:
    claim = machine.claim(attempt_before=0, now_ms=5_000, lease_ms=1_000)
    report = machine.before_deadline(machine.keep(attempt=1), now_ms=5_000)
    for t in (claim, report):
        condition = transition_update("s", "j", t).condition()
        assert "(attribute_not_exists(#expiresAt) OR #expiresAt > " in condition, condition
    assert "expiresAt" not in transition_update("s", "j", machine.keep(attempt=1)).condition()


def test_an_item_is_expired_only_unfinished_and_at_or_past_its_deadline() -> None:
    assert expired({"status": "PENDING", "expiresAt": 10}, 10)
    assert expired({"status": "RUNNING", "expiresAt": 10}, 11)
    assert not expired({"status": "PENDING", "expiresAt": 10}, 9)
    assert not expired({"status": "COMPLETED", "expiresAt": 10}, 11)
    assert not expired({"status": "PENDING"}, 11)


def test_a_deadline_bucket_round_trips_grouped_by_deadline() -> None:
    entries = [deadlines.DeadlineEntry(i, at) for i, at in (("a", 5), ("b", 5), ("c", 7))]
    text = deadlines.encode(entries)
    assert text == "5=a,b;7=c"
    assert deadlines.decode(text) == entries
