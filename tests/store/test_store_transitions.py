"""`JobStore.apply`: a legal transition is one write; one whose guard no longer holds is
refused with `JobConflict` carrying the job as it stood, and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from shared.job import AT_LEAST_ONCE, JobStatus
from shared.machine import Transition, cancel, claim, complete, deadline, expire, fail, release, stall, touch
from shared.store.blobs import pack, replacing
from shared.store.jobs import JobConflict
from tests.store.shelf import KEEP, LEASE, MINUTE, Shelf


def refused(shelf: Shelf, job_id: str, transition: Transition) -> JobConflict:
    """Apply `transition`, which must be refused without a write: the refusal."""
    before = shelf.item(job_id)
    with pytest.raises(JobConflict) as conflict:
        shelf.store.apply(shelf.space, job_id, transition, held=before)
    assert shelf.item(job_id) == before, f"a refused {transition.name} wrote"
    return conflict.value


def test_a_claim_hands_out_the_next_attempt_under_a_lease(shelf: Shelf) -> None:
    job_id = shelf.put()
    job = shelf.apply(job_id, claim(attempt_before=0, now_ms=shelf.now(), lease_ms=LEASE))
    assert (job.status, job.attempt, job.lease_until_ms) == (JobStatus.RUNNING, 1, shelf.now() + LEASE)
    assert shelf.claim() == [], "a running job is not claimable"


def test_a_path_through_fail_retry_and_complete_is_written_as_decided(shelf: Shelf) -> None:
    job_id = shelf.running(maxAttempts=3, backoffMs=1_000)
    now = shelf.now()
    retry = fail(
        shelf.job(job_id),
        now_ms=now,
        error="boom",
        unrecoverable=False,
        retry_after_ms=None,
        rand=0.0,
        retention=KEEP,
        aging_ms=MINUTE,
    )
    error = replacing("error", pack(shelf.space, job_id, "error", b"boom", room=1_000))
    item = shelf.store.apply(shelf.space, job_id, retry, stored=error)
    job = shelf.store.load(shelf.space, item)
    assert (job.status, job.failures, job.ready_at_ms, job.error) == (
        JobStatus.PENDING,
        1,
        now + 1_000,
        "boom",
    )
    assert shelf.claim() == [], "not claimable before its retry's time"
    shelf.clock.advance(1_000)
    assert shelf.claim() == [job_id]
    done = shelf.complete(job_id)
    assert (done.status, done.attempt, done.finished_at_ms) == (JobStatus.COMPLETED, 2, shelf.now())
    assert done.purge_at_ms == shelf.now() + KEEP.completed_ms


def test_a_report_for_a_stale_attempt_is_refused(shelf: Shelf) -> None:
    job_id = shelf.running()
    shelf.apply(job_id, release(attempt=1, now_ms=shelf.now(), priority=0, aging_ms=MINUTE))
    assert shelf.claim() == [job_id]
    conflict = refused(shelf, job_id, complete(attempt=1, now_ms=shelf.now(), retention=KEEP))
    assert conflict.current is not None
    assert (conflict.current.status, conflict.current.attempt) == (JobStatus.RUNNING, 2)


def test_a_claim_of_a_job_already_claimed_is_refused(shelf: Shelf) -> None:
    job_id = shelf.running()
    conflict = refused(shelf, job_id, claim(attempt_before=0, now_ms=shelf.now(), lease_ms=LEASE))
    assert conflict.current is not None and conflict.current.attempt == 1


@pytest.mark.parametrize("late", ["cancel", "complete", "fail", "touch"])
def test_a_transition_of_a_finished_job_is_refused(shelf: Shelf, late: str) -> None:
    job_id = shelf.running()
    shelf.complete(job_id)
    now = shelf.now()
    transition = {
        "cancel": cancel(now_ms=now, retention=KEEP),
        "complete": complete(attempt=1, now_ms=now, retention=KEEP),
        "fail": fail(
            shelf.job(job_id),
            now_ms=now,
            error="late",
            unrecoverable=True,
            retry_after_ms=None,
            rand=0.0,
            retention=KEEP,
            aging_ms=MINUTE,
        ),
        "touch": touch(attempt=1, now_ms=now, lease_ms=LEASE),
    }[late]
    conflict = refused(shelf, job_id, transition)
    assert conflict.current is not None and conflict.current.status == JobStatus.COMPLETED


def test_a_transition_of_a_job_that_is_not_there_is_refused_with_no_job(shelf: Shelf) -> None:
    with pytest.raises(JobConflict) as conflict:
        shelf.store.apply(
            shelf.space, "01J00000000000000000000000", cancel(now_ms=shelf.now(), retention=KEEP)
        )
    assert conflict.value.current is None
    assert shelf.store.get_item(shelf.space, "01J00000000000000000000000") is None, "no job made by a refusal"


def test_a_touch_renews_a_lease_but_never_shortens_it(shelf: Shelf) -> None:
    job_id = shelf.running()
    longer = shelf.apply(job_id, touch(attempt=1, now_ms=shelf.now(), lease_ms=5 * LEASE))
    assert longer.lease_until_ms == shelf.now() + 5 * LEASE
    conflict = refused(shelf, job_id, touch(attempt=1, now_ms=shelf.now(), lease_ms=LEASE))
    assert conflict.current is not None and conflict.current.lease_until_ms == shelf.now() + 5 * LEASE


def test_an_expire_of_a_lease_renewed_since_is_refused(shelf: Shelf) -> None:
    """The lease fences the clock: a lease that has not ended by the expire's time holds."""
    job_id = shelf.running()
    shelf.clock.advance(LEASE // 2)
    shelf.apply(job_id, touch(attempt=1, now_ms=shelf.now(), lease_ms=LEASE))
    shelf.clock.advance(LEASE // 2)
    job = shelf.job(job_id)
    conflict = refused(
        shelf, job_id, expire(job, now_ms=shelf.now(), rand=0.0, retention=KEEP, aging_ms=MINUTE)
    )
    assert conflict.current is not None and conflict.current.status == JobStatus.RUNNING


def test_a_stall_of_an_at_least_once_job_is_refused(shelf: Shelf) -> None:
    """The stored guarantee, not the caller's reading, decides between a retry and a stall."""
    job_id = shelf.running()
    shelf.clock.advance(LEASE)
    job = shelf.job(job_id)
    assert job.guarantee == AT_LEAST_ONCE
    conflict = refused(shelf, job_id, stall(job, now_ms=shelf.now(), retention=KEEP))
    assert conflict.current is not None and conflict.current.status == JobStatus.RUNNING


def test_a_deadline_not_yet_passed_is_refused(shelf: Shelf) -> None:
    job_id = shelf.put(expiresInMs=MINUTE)
    refused(shelf, job_id, deadline(now_ms=shelf.now() + MINUTE - 1, retention=KEEP))
    shelf.clock.advance(MINUTE)
    job = shelf.apply(job_id, deadline(now_ms=shelf.now(), retention=KEEP))
    assert (job.status, job.finished_at_ms) == (JobStatus.CANCELLED, shelf.now())


def test_a_claim_past_the_deadline_is_refused_and_the_claim_reports_it(shelf: Shelf) -> None:
    job_id = shelf.put(expiresInMs=MINUTE)
    shelf.clock.advance(MINUTE)
    refused(shelf, job_id, claim(attempt_before=0, now_ms=shelf.now(), lease_ms=LEASE))
    found = shelf.claimed(count=1)
    claimed, expired = [j.id for j in found.claimed], [j.id for j in found.expired]
    assert claimed == [] and expired == [job_id]


def test_a_claim_that_looks_again_tries_a_job_past_its_deadline_once(
    shelf: Shelf, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim answers a job found past its deadline for its caller to cancel, so the job
    is still in the index when a claim that lost every other candidate reads its shards
    again: it is neither tried nor answered twice."""
    late = shelf.put(expiresInMs=MINUTE)
    taken = shelf.put()
    shelf.clock.advance(MINUTE)
    tried: list[str] = []
    apply = shelf.store.apply

    def racing(space: str, job_id: str, transition: Transition, **kw: Any) -> Any:
        tried.append(job_id)
        if job_id == taken and tried.count(taken) == 1:  # a rival claim takes it first
            apply(space, job_id, claim(attempt_before=0, now_ms=shelf.now(), lease_ms=LEASE))
        return apply(space, job_id, transition, **kw)

    monkeypatch.setattr(shelf.store, "apply", racing)
    found = shelf.claimed(count=1)
    assert (found.claimed, [(j.id, j.status) for j in found.expired]) == ([], [(late, JobStatus.PENDING)])
    assert tried == [late, taken]


def test_a_claim_of_a_job_before_its_ready_time_is_refused(shelf: Shelf) -> None:
    job_id = shelf.put(delayMs=10_000)
    refused(shelf, job_id, claim(attempt_before=0, now_ms=shelf.now() + 9_999, lease_ms=LEASE))
    job = shelf.apply(job_id, claim(attempt_before=0, now_ms=shelf.now() + 10_000, lease_ms=LEASE))
    assert job.status == JobStatus.RUNNING
