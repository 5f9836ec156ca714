"""`make bench` runs end to end, prints the partition-key ceilings and ends with the units per job."""

from __future__ import annotations

import re

import pytest

from bench import cost


def test_bench_prints_units_per_job(capsys: pytest.CaptureFixture[str]) -> None:
    assert cost.main(["--jobs", "20", "--batch", "10", "--drain-buckets", "40"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    last = out[-1]
    found = re.fullmatch(r"per job: ([\d.]+) write units, ([\d.]+) read units, ([\d.]+) calls", last)
    assert found, last
    writes, reads, calls = map(float, found.groups())
    # Create, claim and complete each write the job item once, and each claim's lease is
    # read once later: at least 3 write units and some reads, whatever the scale.
    # (The figures against the target are the benchmark's to print, at 1,000 jobs.)
    assert writes >= 3 and reads > 0 and calls > 2

    # Each workload names its busiest partition key and the ceiling it sets, on a line
    # of its own; then the keys every space shares: every request reads its token.
    busiest = [line for line in out if "busiest key" in line]
    assert [line.split(":")[0] for line in busiest] == [
        "20 jobs a create, 10 a claim and a report",
        "1 jobs a create, 1 a claim and a report",
        "jobs with a callback, 20 a create, 10 a claim and a report",
    ]
    ceiling = re.compile(r"ceiling: [\d,]+ jobs/s")
    assert all(ceiling.search(line) for line in busiest), busiest
    shared = [line for line in out if "shared by every space: " in line]
    assert any("T (table)" in line and ceiling.search(line) for line in shared), shared
    assert any("LEASE#n (table)" in line for line in shared), shared
    # The clock's lease check: how fast one tick drains the lease book, against 10,000 jobs/s.
    # Jobs with a callback load their space's own callback partitions, not one every space shares.
    assert any(line.startswith("  the space's own CALLBACK#bench#n") and ceiling.search(line) for line in out)
    # Each workload's job partitions (64 a space, by a hash of the id), at their even share.
    jobs = [line for line in out if line.startswith("  the space's own J#bench#n (table), 64 key(s)")]
    assert len(jobs) == 3 and all(ceiling.search(line) for line in jobs), jobs
    drains = [line for line in out if line.startswith("lease check drain")]
    assert len(drains) == 2 and all(re.search(r"[\d,]+ leases/s", line) for line in drains), drains
