"""`make bench`'s spread part runs end to end and prints its lines: a busy name's busiest
key and ready shard with their ceilings, and the figures of 16 workers racing."""

from __future__ import annotations

import re

import pytest

from bench import spread


def test_bench_prints_ceilings_and_the_race_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert spread.main(["--jobs", "20", "--race-jobs", "160"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    ceiling = re.compile(r"ceiling: [\d,]+ jobs/s")
    busiest = [line for line in out if "busiest key" in line]
    assert [line.split(":")[0] for line in busiest] == [
        "one busy name at 10,000 jobs/s, 20 jobs a create, 10 a claim and a report",
        "one busy name at 10,000 jobs/s, 1 jobs a create, 1 a claim and a report",
    ]
    assert all(ceiling.search(line) for line in busiest), busiest
    shards = [line for line in out if "its ready shards (64 wide)" in line]
    assert len(shards) == 2 and all(ceiling.search(line) for line in shards), out
    races = [line for line in out if line.startswith("16 workers claiming 10 at a time")]
    figures = re.compile(r"([\d.]+) failed conditional writes per job; (\d+) empty claims while work waited")
    assert len(races) == 2 and all(figures.search(line) for line in races), races
