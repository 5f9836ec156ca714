"""`make bench`'s spread part (`bench.spread`), small: a busy name's busiest key and ready
shard with their ceilings, and the figures of workers racing, each on a line of its own."""

from __future__ import annotations

import re

from bench import spread

CEILING = re.compile(r"ceiling: [\d,]+ jobs/s")


def test_a_busy_name_is_spread_and_its_ceilings_printed() -> None:
    lines = spread.busy_name(20, 10, 10)
    assert lines[0].startswith(
        "one busy name at 10,000 jobs/s, 10 jobs a create, 10 a claim and a report: busiest key"
    )
    assert CEILING.search(lines[0]), lines
    [shards] = [line for line in lines if "its ready shards (64 wide)" in line]
    assert CEILING.search(shards), lines
    # The space's job partitions: the busiest one by name, and its ceiling.
    [jobs] = [line for line in lines if "its job partitions J#bench#n (64 keys" in line]
    assert re.search(r"busiest J#bench#\d+ \(table\): ", jobs) and CEILING.search(jobs), lines
    assert re.search(r"at an even share each is at \d+% of its limit at 10,000 jobs/s", jobs), lines


def test_racing_workers_print_failed_writes_per_job_and_empty_claims() -> None:
    line = spread.contention(48, spread=False, workers=4, count=4)
    figures = re.search(
        r"([\d.]+) failed conditional writes per job; (\d+) empty claims while work waited", line
    )
    assert line.startswith("4 workers claiming 4 at a time, 48 jobs") and figures, line
