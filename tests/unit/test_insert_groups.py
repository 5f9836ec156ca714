"""New jobs whose payloads go to side items are written in transactions, each job with its
side item: grouped so that no transaction passes DynamoDB's limits."""

from __future__ import annotations

import random

from shared.store.codec import approximate_size
from shared.store.dynamo import Item
from shared.store.jobs import TRANSACTION_ACTIONS, TRANSACTION_BYTES, transaction_groups


def new_job(n: int, side_bytes: int) -> list[Item]:
    """A job item and its payload's side item, as `JobStore.insert` writes them."""
    job_id = f"01J{n:023d}"
    job = {"pk": f"J#s#{n % 8}", "sk": job_id, "name": "n", "status": "PENDING", "payloadRef": "item"}
    side = {"pk": f"B#s#{job_id}", "sk": "payload", "data": random.Random(n).randbytes(side_bytes)}
    return [job, side]


def weight(job: list[Item]) -> int:
    return sum(approximate_size(item) for item in job)


def test_at_most_100_actions_a_transaction() -> None:
    jobs = [new_job(n, 1_000) for n in range(120)]
    groups = transaction_groups(jobs)
    assert [len(g) for g in groups] == [50, 50, 20], "two puts a job"
    assert [job for g in groups for job in g] == jobs, "every job once, in order, whole"


def test_at_most_4_mb_a_transaction() -> None:
    jobs = [new_job(n, 340_000) for n in range(30)]
    groups = transaction_groups(jobs)
    assert len(groups) > 1 and [job for g in groups for job in g] == jobs
    for group in groups:
        assert sum(weight(job) for job in group) <= TRANSACTION_BYTES < 4_000_000
        assert sum(len(job) for job in group) <= TRANSACTION_ACTIONS
