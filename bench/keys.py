"""The busiest partition key of a name whose jobs carry a `concurrencyKey` (issue 10, point 4:
`perKeyConcurrency` over 1,000 keys, at least 10,000 jobs/s).

The same workload as `bench.cost`'s batched one (100 jobs a create, 10 a claim and a
report, each request reading its token), each job of one of 1,000 keys, under the default
`perKeyConcurrency` of 1. A keyed job waits in its key's own lane; its key's item counts the
key's running jobs and stands for the key in the name's ready lanes while it has room
(`shared.store.keyed`): every claim and finish of a keyed job is a transaction with its
key's item, and moving a key's entry writes the name's ready shards. Those entries spread over
the width the name's load gives it (`shared.spread`), as its jobs do: the name is first brought
to the width 10,000 jobs/s give it (`bench.spread.warm_up`, which writes nothing but the name's
counter and its item, before anything is counted).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
from collections.abc import Iterator
from typing import Any

from moto.dynamodb import models as moto_models
from moto.dynamodb.models.table import Table

from bench.cost import SPACE, order_payload, run
from bench.partitions import TABLE, _line, describe_family, describe_load, hashed
from bench.spread import NAME, RATE, warm_up
from devserver.wiring import one_backup_per_transaction
from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.store import keys

KEYS = 1_000
JOBS = 1_000
"""One job a key: every claim takes a key's slot and every finish gives one back."""


class _NoTableCopy:
    """moto's `copy` without its whole-table backup before each transaction (kept to roll a
    cancelled one back): every claim and finish here is a transaction, and a thousand copies
    of a growing table take many minutes and gigabytes. A single worker's transactions here
    are never cancelled; if one were, the bench's own checks (every job claimed, every
    report accepted) would fail."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


@contextlib.contextmanager
def _no_table_backups() -> Iterator[None]:
    one_backup_per_transaction()  # patches the same module attribute, once: first
    saved = moto_models.copy
    moto_models.copy = _NoTableCopy()  # type: ignore[assignment]
    try:
        yield
    finally:
        moto_models.copy = saved


def lines(jobs: int = JOBS, batch: int = 100, hand_out: int = 10) -> list[str]:
    widths: list[int] = []

    def busy(rt: Runtime) -> None:
        assert isinstance(rt.clock, ManualClock)
        widths.append(warm_up(rt, rt.clock))

    with _no_table_backups():
        load = run(
            jobs=jobs,
            batch=batch,
            payload=order_payload,
            hand_out=hand_out,
            load=True,
            setup=busy,
            job_fields=lambda n: {"concurrencyKey": f"tenant-{n % KEYS}"},
        ).load
    assert load is not None
    workload = f"perKeyConcurrency over {KEYS:,} keys, {batch} jobs a create, {hand_out} a claim and a report"
    out = [describe_load(workload, load, jobs, {SPACE}, hashed(SPACE))[0]]
    # Where the keys' own traffic lands: the name's ready shards (its keys' entries listed and
    # taken out there), the keys' items and their lanes.
    ceilings = load.ceilings(jobs)
    for label, family in (
        (f"the name's ready shards ({widths[0]} wide at {RATE:,} jobs/s; keys' entries)", f"{SPACE}#{NAME}#"),
        ("the keys' items", "Q#"),
        ("the keys' lanes", f"{SPACE}#{NAME}#K#"),
    ):
        top = next(
            c
            for c in ceilings
            if c.key.value.startswith(family) and ("#K#" in family) == ("#K#" in c.key.value)
        )
        out.append(f"  busiest of {label}: {top.key}: {_line(top)}")
    # The space's job partitions, by a hash of the id: each takes its even share at scale
    # (a short run puts a few more jobs on one by chance); a keyed job's claim and finish are
    # transactions, which bill the job item twice.
    out.append(describe_family(load, jobs, f"{keys.JOB_PREFIX}{SPACE}#", keys.JOB_SHARDS, where=TABLE))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--jobs", type=int, default=JOBS, help="jobs the workload runs (one key each up to 1,000)"
    )
    args = parser.parse_args()
    print("Partition keys of one name whose jobs each carry one of 1,000 concurrency keys:")
    print("\n".join(f"  {line}" for line in lines(args.jobs)))
