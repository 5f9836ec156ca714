"""The state machine on its own: each transition's target, changes and guard."""

from __future__ import annotations

import pytest

from shared import job as jobs_values
from shared import machine
from shared.job import Backoff, Job, JobStatus, Retention

RETENTION = Retention(completed_ms=1_000, failed_ms=5_000)
AGING = 60_000


def running(**overrides: object) -> Job:
    fields: dict = {
        "id": "01J0000000000000000000000A",
        "space": "s",
        "name": "n",
        "status": JobStatus.RUNNING,
        "attempt": 2,
        "failures": 1,
        "max_attempts": 4,
        "timeout_ms": 60_000,
        "backoff": Backoff("exponential", 1_000, 3_600_000, False),
        "created_at_ms": 0,
        "run_at_ms": 0,
        "lease_until_ms": 90_000,
    }
    fields.update(overrides)
    return Job(**fields)


def fail(
    job: Job,
    *,
    now_ms: int,
    unrecoverable: bool = False,
    retry_after_ms: int | None = None,
    rand: float = 0,
    error: str = "x",
) -> machine.Transition:
    """machine.fail with this file's retention and aging: only what a test varies is named."""
    return machine.fail(
        job,
        now_ms=now_ms,
        error=error,
        unrecoverable=unrecoverable,
        retry_after_ms=retry_after_ms,
        rand=rand,
        retention=RETENTION,
        aging_ms=AGING,
    )


@pytest.mark.parametrize(
    ("kind", "failures", "expected"),
    [
        ("exponential", 1, 1_000),
        ("exponential", 2, 2_000),
        ("exponential", 5, 16_000),
        ("exponential", 40, 3_600_000),  # capped at the ceiling
        ("linear", 1, 1_000),
        ("linear", 3, 3_000),
        ("constant", 7, 1_000),
    ],
)
def test_backoff_grows_by_kind_up_to_the_ceiling(kind: str, failures: int, expected: int) -> None:
    assert Backoff(kind, 1_000, 3_600_000, False).wait_ms(failures, rand=0.99) == expected  # type: ignore[arg-type]


def test_jitter_draws_from_the_upper_half_of_the_wait() -> None:
    backoff = Backoff("exponential", 1_000, 3_600_000, True)
    assert backoff.wait_ms(3, rand=0.0) == 2_000
    assert backoff.wait_ms(3, rand=0.5) == 3_000
    assert backoff.wait_ms(3, rand=0.999999) == 3_999


def test_claim_takes_a_ready_pending_job_out_of_the_ready_set() -> None:
    t = machine.claim(attempt_before=2, now_ms=100, lease_ms=30_000)
    assert t.to == JobStatus.RUNNING
    assert t.changes == {"attempt": 3, "lease_until_ms": 30_100, "ready_at_ms": None}
    assert t.guard.statuses == {JobStatus.PENDING} and t.guard.attempt == 2 and t.guard.ready_by_ms == 100
    assert t.ready_index == "leave"


def test_fail_with_attempts_left_waits_the_backoff_and_goes_back_to_pending() -> None:
    t = fail(running(), now_ms=1_000, rand=0.5, error="boom")
    assert t.to == JobStatus.PENDING
    assert t.changes["failures"] == 2 and t.changes["ready_at_ms"] == 1_000 + 2_000
    assert t.ready_index == "enter"
    assert t.guard.statuses == {JobStatus.RUNNING} and t.guard.attempt == 2
    due_before_it_was_made = machine.give_back(
        running(run_at_ms=40, created_at_ms=100), now_ms=1_000, aging_ms=AGING
    )
    assert due_before_it_was_made.changes["ready_at_ms"] == 100, "the never-claimed wait starts at creation"


def test_fail_with_retry_after_uses_that_wait_instead_of_the_policy() -> None:
    t = fail(running(), now_ms=1_000, retry_after_ms=30_000, rand=0.5)
    assert t.changes["ready_at_ms"] == 31_000


def test_fail_out_of_attempts_is_final_and_kept_for_the_failed_retention() -> None:
    t = fail(running(failures=3), now_ms=1_000, rand=0.5)
    assert t.to == JobStatus.FAILED
    assert t.changes["purge_at_ms"] == 6_000 and t.changes["finished_at_ms"] == 1_000
    assert t.ready_index == "keep"


def test_unrecoverable_fails_for_good_whatever_attempts_are_left() -> None:
    t = fail(running(failures=0), now_ms=1, unrecoverable=True)
    assert t.to == JobStatus.FAILED


def test_release_does_not_count_the_attempt() -> None:
    t = machine.release(attempt=2, now_ms=50, priority=0, aging_ms=AGING)
    assert t.to == JobStatus.PENDING and "failures" not in t.changes
    assert t.changes["ready_at_ms"] == 50 and t.ready_index == "enter"


def test_give_back_undoes_a_claim_never_handed_out() -> None:
    t = machine.give_back(running(run_at_ms=40, failures=0), now_ms=1_000, aging_ms=AGING)
    assert t.to == JobStatus.PENDING and t.ready_index == "enter"
    assert t.changes == {"attempt": 1, "lease_until_ms": None, "ready_at_ms": 40}
    assert t.guard.statuses == {JobStatus.RUNNING} and t.guard.attempt == 2


def test_touch_never_shortens_a_lease() -> None:
    t = machine.touch(attempt=2, now_ms=10, lease_ms=1_000)
    assert t.guard.lease_at_most_ms == 1_010 and t.changes == {"lease_until_ms": 1_010}


def test_complete_is_final_with_the_completed_retention() -> None:
    t = machine.complete(attempt=2, now_ms=10, retention=RETENTION)
    assert t.to == JobStatus.COMPLETED and t.changes["purge_at_ms"] == 1_010


@pytest.mark.parametrize("status", sorted(jobs_values.FINAL))
def test_no_transition_applies_to_a_finished_job(status: JobStatus) -> None:
    transitions = [
        machine.claim(attempt_before=1, now_ms=0, lease_ms=1),
        machine.touch(attempt=1, now_ms=0, lease_ms=1),
        machine.complete(attempt=1, now_ms=0, retention=RETENTION),
        machine.release(attempt=1, now_ms=0, priority=0, aging_ms=AGING),
        machine.cancel(now_ms=0, retention=RETENTION),
        machine.keep(attempt=1),
    ]
    assert all(status not in t.guard.statuses for t in transitions)


def test_cancel_applies_to_anything_unfinished() -> None:
    assert machine.cancel(now_ms=0, retention=RETENTION).guard.statuses == jobs_values.UNFINISHED


@pytest.mark.parametrize(
    ("status", "attempt", "reported", "lapsed", "reason"),
    [
        (JobStatus.RUNNING, 2, 2, None, None),
        (JobStatus.RUNNING, 3, 2, None, "STALE"),
        (JobStatus.PENDING, 2, 2, None, "NOT_RUNNING"),
        (JobStatus.PENDING, 3, 2, None, "STALE"),
        # Its lease ran out: the worker page's "a later report from the first worker is
        # answered STALE", even while the job waits its backoff with nobody holding it.
        (JobStatus.PENDING, 2, 2, 2, "STALE"),
        (JobStatus.PENDING, 2, 2, 1, "NOT_RUNNING"),
        (JobStatus.RUNNING, 2, 2, 1, None),
        (JobStatus.COMPLETED, 2, 2, None, "ALREADY_FINISHED"),
        (JobStatus.FAILED, 2, 2, 2, "ALREADY_FINISHED"),
        (JobStatus.CANCELLED, 3, 2, None, "ALREADY_FINISHED"),
    ],
)
def test_why_a_report_is_refused(
    status: JobStatus, attempt: int, reported: int, lapsed: int | None, reason: str | None
) -> None:
    assert (
        machine.refusal(status, attempt=attempt, reported_attempt=reported, lapsed_attempt=lapsed) == reason
    )


def test_an_expired_lease_marks_its_attempt_lapsed_and_a_release_or_failure_does_not() -> None:
    """Only the clock's expire says the attempt's worker lost its hold (its reports: STALE)."""
    retried = machine.expire(running(), now_ms=100_000, rand=0, retention=RETENTION, aging_ms=AGING)
    assert (retried.to, retried.changes["lapsed_attempt"]) == (JobStatus.PENDING, 2)
    given_up = [
        fail(running(), now_ms=100),
        machine.release(attempt=2, now_ms=100, priority=0, aging_ms=AGING),
    ]
    assert all("lapsed_attempt" not in t.changes for t in given_up)


def test_every_transition_that_finishes_a_job_marks_it_for_the_clocks_callback_look() -> None:
    """A grace after it finishes, a job with a callback is where the clock looks, unless the
    stream recorded its delivery; transitions that leave the job unfinished mark nothing."""
    job = running()
    finishing = [
        machine.complete(attempt=2, now_ms=100, retention=RETENTION),
        fail(job, now_ms=100, unrecoverable=True),
        machine.expire(running(failures=3), now_ms=100, rand=0, retention=RETENTION, aging_ms=AGING),
        machine.cancel(now_ms=100, retention=RETENTION),
        machine.unclaimed(now_ms=100, window_ms=10, retention=RETENTION),
    ]
    assert all(t.to.is_final for t in finishing)
    assert [t.callback_due_ms for t in finishing] == [100 + machine.CALLBACK_GRACE_MS] * 5
    assert [t.has_callback for t in finishing] == [None, False, False, None, None], "known where the job is"
    unfinished = [
        fail(job, now_ms=100),
        machine.release(attempt=2, now_ms=100, priority=0, aging_ms=AGING),
        machine.touch(attempt=2, now_ms=100, lease_ms=1_000),
    ]
    assert [t.callback_due_ms for t in unfinished] == [None, None, None]


def test_a_lease_ending_on_an_at_most_once_job_stalls_it_whatever_attempts_are_left() -> None:
    job = running(failures=0, guarantee=jobs_values.AT_MOST_ONCE, callback=jobs_values.Callback("https://x"))
    t = machine.expire(job, now_ms=100_000, rand=0, retention=RETENTION, aging_ms=AGING)
    assert (t.name, t.to, t.ready_index) == ("stall", JobStatus.STALLED, "keep")
    assert t.guard == machine.Guard(
        statuses=frozenset({JobStatus.RUNNING}),
        attempt=2,
        lease_ended_by_ms=100_000,
        guarantee="AT_MOST_ONCE",
    )
    assert t.changes["failures"] == 1 and t.changes["error"] == machine.LEASE_EXPIRED
    assert t.changes["purge_at_ms"] == 105_000, "kept for the failed retention"
    assert t.callback_due_ms == 100_000 + machine.CALLBACK_GRACE_MS and t.has_callback is True
    usual = machine.expire(running(failures=0), now_ms=100_000, rand=0, retention=RETENTION, aging_ms=AGING)
    assert usual.to == JobStatus.PENDING and usual.guard.guarantee == "AT_LEAST_ONCE"


def test_a_job_whose_time_has_come_is_due_in_order_of_hand_out() -> None:
    """Priority p at ready time t goes as if ready at t - p x aging; not yet due: later."""
    due = jobs_values.place(ready_at_ms=1_000, now_ms=1_000, priority=2, aging_ms=AGING)
    assert due.due and due.order == 1_000 - 2 * AGING + jobs_values.ORDER_OFFSET
    later = jobs_values.place(ready_at_ms=1_001, now_ms=1_000, priority=1_000, aging_ms=AGING)
    assert not later.due and later.order is None and later.ready_at_ms == 1_001
    low_but_old = jobs_values.hand_out_order(ready_at_ms=0, priority=0, aging_ms=AGING)
    high_but_new = jobs_values.hand_out_order(ready_at_ms=AGING + 1, priority=1, aging_ms=AGING)
    assert low_but_old < high_but_new, "a job that waited longer than an aging interval goes first"


def test_strict_priority_outweighs_any_wait_and_every_order_is_positive() -> None:
    strict = jobs_values.STRICT_AGING_MS
    old_low = jobs_values.hand_out_order(ready_at_ms=0, priority=-1_000, aging_ms=strict)
    new_high = jobs_values.hand_out_order(ready_at_ms=2 * 365 * 86_400_000, priority=-999, aging_ms=strict)
    assert new_high < old_low
    assert jobs_values.hand_out_order(ready_at_ms=0, priority=1_000, aging_ms=strict) == 0
    assert old_low < 10**16, "fits the sort key's 16 digits"


def test_every_transition_that_puts_a_job_back_chooses_its_place() -> None:
    job = running(priority=5)
    retry = fail(job, now_ms=1_000)
    assert retry.place == jobs_values.Place(due=False, ready_at_ms=1_000 + 2_000), (
        "a backoff waits in the later lane"
    )
    at_once = fail(job, now_ms=1_000, retry_after_ms=0)
    assert at_once.place is not None and at_once.place.due
    assert at_once.place.order == jobs_values.hand_out_order(ready_at_ms=1_000, priority=5, aging_ms=AGING)
    release = machine.release(attempt=2, now_ms=1_000, priority=5, aging_ms=AGING)
    assert release.place == at_once.place
    back = machine.give_back(job, now_ms=1_000, aging_ms=AGING)
    assert back.place is not None and back.place.due and back.place.ready_at_ms == 0


def test_every_transition_that_ends_an_attempt_records_how() -> None:
    """A claim starts the next attempt's record; every report or clock transition that takes
    the job out of RUNNING ends the running one; a give-back removes the claim's."""
    job = running()
    ended = {
        "complete": machine.complete(attempt=2, now_ms=7, retention=RETENTION),
        "retry": fail(job, now_ms=7, error="e" * 500),
        "fail": fail(job, now_ms=7, unrecoverable=True),
        "release": machine.release(attempt=2, now_ms=7, priority=0, aging_ms=AGING),
        "expire": machine.expire(job, now_ms=90_000, rand=0, retention=RETENTION, aging_ms=AGING),
        "stall": machine.stall(running(guarantee="AT_MOST_ONCE"), now_ms=90_000, retention=RETENTION),
    }
    outcomes = {name: (t.tried.attempt, t.tried.outcome) for name, t in ended.items() if t.tried}
    assert outcomes == {
        "complete": (2, "COMPLETED"),
        "retry": (2, "FAILED"),
        "fail": (2, "FAILED"),
        "release": (2, "RELEASED"),
        "expire": (2, "EXPIRED"),
        "stall": (2, "EXPIRED"),
    }
    assert ended["retry"].tried is not None and ended["retry"].tried.error == "e" * 100
    assert machine.claim(attempt_before=2, now_ms=5, lease_ms=10).tried == machine.Tried(3, started_at_ms=5)
    back = machine.give_back(job, now_ms=5, aging_ms=AGING).tried
    assert back == machine.Tried(2, undone=True)
    for kept in (machine.touch(attempt=2, now_ms=5, lease_ms=10), machine.keep(attempt=2)):
        assert kept.tried is None, "the attempt goes on"


def test_a_job_finished_while_an_attempt_ran_ends_that_attempt_as_cancelled() -> None:
    started = jobs_values.Attempt(1, started_at_ms=10, ended_at_ms=20, outcome="FAILED", error="x")
    open_attempt = jobs_values.Attempt(2, started_at_ms=30)
    cancelled = running(status=JobStatus.CANCELLED, finished_at_ms=50, attempts=(started, open_attempt))
    assert cancelled.history() == (started, jobs_values.Attempt(2, 30, 50, "CANCELLED"))
    assert running(attempts=(started, open_attempt)).history()[-1] == open_attempt, "still running"
    pending_then_cancelled = running(
        status=JobStatus.CANCELLED, finished_at_ms=50, attempt=1, attempts=(started,)
    )
    assert pending_then_cancelled.history() == (started,), "no attempt ran when it was cancelled"
