"""Fencing: the attempt a report names, and the lease it holds, decide whether it speaks
for the job; a job whose lease ran out is handed out again as a new attempt (or, at most
once, never again); the lease book learns of every claim before it is made."""

from __future__ import annotations

import pytest

from shared.job import JobStatus
from shared.machine import complete, expire, keep
from shared.store.jobs import JobConflict
from tests.store.shelf import KEEP, LEASE, MINUTE, Shelf


def lapse(shelf: Shelf, job_id: str) -> None:
    """The clock finds the job's lease over."""
    shelf.clock.advance(LEASE)
    job = shelf.job(job_id)
    shelf.apply(job_id, expire(job, now_ms=shelf.now(), rand=0.0, retention=KEEP, aging_ms=MINUTE))


def test_an_expired_lease_fails_the_attempt_and_the_job_waits_to_retry(shelf: Shelf) -> None:
    job_id = shelf.running(backoffMs=1_000, maxAttempts=3)
    lapse(shelf, job_id)
    job = shelf.job(job_id)
    assert (job.status, job.failures, job.lapsed_attempt) == (JobStatus.PENDING, 1, 1)
    assert shelf.claim() == []
    shelf.clock.advance(1_000)
    assert shelf.claim() == [job_id]
    assert shelf.job(job_id).attempt == 2


def test_the_lapsed_attempts_report_is_refused_after_the_job_is_handed_out_again(shelf: Shelf) -> None:
    job_id = shelf.running(backoffMs=0)
    lapse(shelf, job_id)
    with pytest.raises(JobConflict):
        shelf.store.apply(shelf.space, job_id, keep(attempt=1))
    assert shelf.claim() == [job_id]
    with pytest.raises(JobConflict) as conflict:
        shelf.store.apply(shelf.space, job_id, complete(attempt=1, now_ms=shelf.now(), retention=KEEP))
    assert conflict.value.current is not None and conflict.value.current.attempt == 2
    assert shelf.complete(job_id).status == JobStatus.COMPLETED


def test_an_at_most_once_job_whose_lease_ended_stalls_and_is_not_handed_out_again(shelf: Shelf) -> None:
    job_id = shelf.running(guarantee="AT_MOST_ONCE", maxAttempts=5)
    lapse(shelf, job_id)
    job = shelf.job(job_id)
    assert (job.status, job.failures, job.purge_at_ms) == (JobStatus.STALLED, 1, shelf.now() + KEEP.failed_ms)
    shelf.clock.advance(MINUTE)
    assert shelf.claim() == []


def test_an_expire_delivered_twice_applies_once(shelf: Shelf) -> None:
    job_id = shelf.running(backoffMs=0)
    shelf.clock.advance(LEASE)
    job = shelf.job(job_id)
    tick = expire(job, now_ms=shelf.now(), rand=0.0, retention=KEEP, aging_ms=MINUTE)
    shelf.apply(job_id, tick)
    with pytest.raises(JobConflict):
        shelf.store.apply(shelf.space, job_id, tick)
    assert shelf.job(job_id).failures == 1


def test_a_claim_files_its_leases_in_the_lease_book(shelf: Shelf) -> None:
    job_id = shelf.put()
    assert shelf.claim() == [job_id]
    until = shelf.now() + LEASE
    book = shelf.store.leases

    def due(now_ms: int) -> list[tuple[str, int, int]]:
        return [
            (e.job_id, e.attempt, e.lease_until_ms)
            for p in book.look(now_ms).partitions
            for b in book.due(p, now_ms)[0]
            for e in b.entries
        ]

    assert due(until - 1) == []
    assert due(until) == [(job_id, 1, until)]


def test_a_job_with_a_deadline_is_filed_in_the_deadline_book(shelf: Shelf) -> None:
    job_id = shelf.put(expiresInMs=MINUTE)
    shelf.put()
    at = shelf.now() + MINUTE
    book = shelf.store.deadlines

    def due(now_ms: int) -> list[tuple[str, int]]:
        return [
            (e.job_id, e.expires_at_ms)
            for p in book.look(now_ms).partitions
            for b in book.due(p, now_ms)[0]
            for e in b.entries
        ]

    assert due(at - 1) == []
    assert due(at) == [(job_id, at)]
