"""The busiest partition key of a name with a `concurrency` or a `rate` (issue 10, point 4:
at least 2,000 jobs/s for one name).

The same workload as `bench.cost`'s batched one (100 jobs a create, 10 a claim and a
report, each request reading its token), for one name whose policy limits it. Every claim
of such a name reads its slot counters and takes its rate (`shared.store.counters`), and
every claim and finish of a job holding a slot is a transaction with one slot item: the
limit is split over up to 16 items so none of them is the ceiling. The name is first brought
to the width 10,000 jobs/s give it (`bench.spread.warm_up`), as its load would spread it.
"""

from __future__ import annotations

from typing import Any

from bench.cost import SPACE, order_payload, run
from bench.keys import _no_table_backups
from bench.partitions import TABLE, describe_family, describe_load, hashed
from bench.spread import NAME, warm_up
from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.schema import PolicyPatch
from shared.store import keys

WORKLOADS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("concurrency 1,000", {"concurrency": 1_000}),
    ("rate 2,000 a second", {"rate": {"tokens": 2_000, "intervalMs": 1_000}}),
)
"""(label, policy): a concurrency the bench's jobs, all claimed before any finishes, fit in;
a rate whose burst lets them all go at one instant of the bench's clock."""


JOBS = 1_000
"""As many as `bench.cost`'s: every claim and finish here is a transaction, whose whole-table
copy moto is spared (`bench.keys._no_table_backups`)."""


def lines(jobs: int = JOBS, batch: int = 100, hand_out: int = 10) -> list[str]:
    out = []
    for label, fields in WORKLOADS:
        widths: list[int] = []

        def limit(rt: Runtime, fields: dict[str, Any] = fields, widths: list[int] = widths) -> None:
            rt.policies.patch(SPACE, NAME, PolicyPatch.model_validate(fields))
            assert isinstance(rt.clock, ManualClock)
            widths.append(warm_up(rt, rt.clock))

        with _no_table_backups():
            load = run(
                jobs=jobs, batch=batch, payload=order_payload, hand_out=hand_out, load=True, setup=limit
            ).load
        assert load is not None
        workload = (
            f"one name with {label} (spread {widths[0]} wide), {batch} jobs a create,"
            f" {hand_out} a claim and a report"
        )
        out.append(describe_load(workload, load, jobs, {SPACE}, hashed(SPACE))[0])
        # The space's job partitions at their even share (a short run puts a few more jobs
        # on one by chance): a claim and finish holding a slot bill the job item twice.
        out.append(describe_family(load, jobs, f"{keys.JOB_PREFIX}{SPACE}#", keys.JOB_SHARDS, where=TABLE))
    return out


if __name__ == "__main__":
    print("Partition keys of one name with a limit (its slots and rate split over up to 16 items each):")
    print("\n".join(f"  {line}" for line in lines()))
