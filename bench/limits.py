"""The busiest partition key of a name with a `concurrency` or a `rate` (issue 10, point 4:
at least 2,000 jobs/s for one name).

The same workload as `bench.cost`'s batched one (100 jobs a create, 10 a claim and a
report, each request reading its token), for one name whose policy limits it. Every claim
of such a name reads its slot counters and takes its rate (`shared.store.counters`), and
every claim and finish of a job holding a slot is a transaction with one slot item: the
limit is split over up to 16 items so none of them is the ceiling.
"""

from __future__ import annotations

from typing import Any

from bench.cost import SPACE, order_payload, run
from bench.partitions import describe_load
from shared.runtime import Runtime
from shared.schema import PolicyPatch

NAME = "charge-invoice"
WORKLOADS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("concurrency 1,000", {"concurrency": 1_000}),
    ("rate 2,000 a second", {"rate": {"tokens": 2_000, "intervalMs": 1_000}}),
)
"""(label, policy): a concurrency the bench's jobs, all claimed before any finishes, fit in;
a rate whose burst lets them all go at one instant of the bench's clock."""


JOBS = 200
"""Fewer jobs than `bench.cost`'s: moto copies the whole table (its stream's records too) for
every transaction, and every claim and finish here is one."""


def lines(jobs: int = JOBS, batch: int = 100, hand_out: int = 10) -> list[str]:
    out = []
    for label, fields in WORKLOADS:

        def limit(rt: Runtime, fields: dict[str, Any] = fields) -> None:
            rt.policies.patch(SPACE, NAME, PolicyPatch.model_validate(fields))

        _, load = run(
            jobs=jobs, batch=batch, payload=order_payload, hand_out=hand_out, load=True, setup=limit
        )
        assert load is not None
        workload = f"one name with {label}, {batch} jobs a create, {hand_out} a claim and a report"
        out.append(describe_load(workload, load, jobs, {SPACE})[0])
    return out


if __name__ == "__main__":
    print("Partition keys of one name with a limit (its slots and rate split over up to 16 items each):")
    print("\n".join(f"  {line}" for line in lines()))
