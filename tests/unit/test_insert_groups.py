"""New jobs whose payloads go to side items are written in transactions, each job with its
side item: grouped so that no transaction passes DynamoDB's limits."""

from __future__ import annotations

import random

from shared.machine import Backoff, Job, JobStatus
from shared.store.blobs import pack
from shared.store.codec import approximate_size
from shared.store.jobs import TRANSACTION_ACTIONS, TRANSACTION_BYTES, NewRecord, _item, transaction_groups


def record(n: int, payload_bytes: int) -> NewRecord:
    job = Job(
        id=f"01J{n:023d}",
        space="s",
        name="n",
        status=JobStatus.PENDING,
        attempt=0,
        failures=0,
        max_attempts=4,
        timeout_ms=60_000,
        backoff=Backoff("exponential", 1_000, 3_600_000, False),
        created_at_ms=0,
        run_at_ms=0,
    )
    raw = random.Random(n).randbytes(payload_bytes // 2).hex().encode()
    return NewRecord(job, pack("s", job.id, "payload", raw, room=500))


def weight(r: NewRecord) -> int:
    return approximate_size(_item(r)) + approximate_size(r.payload.side_item or {})


def test_at_most_100_actions_a_transaction() -> None:
    records = [record(n, 1_500) for n in range(120)]
    groups = transaction_groups(records)
    assert [len(g) for g in groups] == [50, 50, 20], "two puts a job"
    assert [r for g in groups for r in g] == records, "every job once, in order"


def test_at_most_4_mb_a_transaction() -> None:
    records = [record(n, 600_000) for n in range(30)]
    assert all(r.payload.side_item and weight(r) > 250_000 for r in records)
    groups = transaction_groups(records)
    assert len(groups) > 1 and [r for g in groups for r in g] == records
    for group in groups:
        assert sum(weight(r) for r in group) <= TRANSACTION_BYTES < 4_000_000
        assert 2 * len(group) <= TRANSACTION_ACTIONS
