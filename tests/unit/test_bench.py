"""`make bench` runs end to end and ends with the line the issue asks for."""

from __future__ import annotations

import re

import pytest

from bench import cost


def test_bench_prints_units_per_job(capsys: pytest.CaptureFixture[str]) -> None:
    assert cost.main(["--jobs", "20", "--batch", "10"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    found = re.fullmatch(r"per job: ([\d.]+) write units, ([\d.]+) read units, ([\d.]+) calls", last)
    assert found, last
    writes, reads, calls = map(float, found.groups())
    # Create, claim and complete each write the small job item once: never fewer than 3 units.
    assert 3 <= writes <= cost.TARGET_WRITE_UNITS and reads <= cost.TARGET_READ_UNITS and calls > 2
