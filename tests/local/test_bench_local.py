"""`make bench`'s local part runs a real `emit dev` and prints each of its figures (at a
small size here: the figures themselves are the benchmark's to judge, not a test's)."""

from __future__ import annotations

import re

import pytest

from bench import local

FIGURES = [
    r"local: emit dev with 200 jobs stored \(100 finished with 3 lines and an event each, 100 pending\), "
    r"filled in \d+ s; load average [\d.]+ on \d+ cores",
    r"local: empty claim: median [\d.]+ ms over 5 \([\d.]+ ms of server CPU each\)",
    r"local: one-job claim: median [\d.]+ ms over 5 \([\d.]+ ms of server CPU each\)",
    r"local: capped-name claim \(concurrency 3\), each job then completed: median [\d.]+ ms over 5",
    r"local: create \+ claim \+ complete in batches of 100: [\d,]+ jobs/s "
    r"\([\d.]+ ms of server CPU a job, its stream records included\)",
    r"local: 16 workers claiming and completing one job per request: [\d,]+ jobs/s \(40 jobs\), "
    r"0 attempts held twice",
    r"local: an idle waiting claim: [\d.]+ % of a core",
    r"local: 64 clients connecting at once: 64 served",
    r"local: server memory: [\d,]+ MB resident",
]


def test_the_local_bench_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--jobs", "200", "--claims", "5", "--capped-claims", "5"]
    args += ["--rounds", "2", "--worker-jobs", "40", "--idle-s", "1"]
    assert local.main(args) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(FIGURES), lines
    for line, figure in zip(lines, FIGURES, strict=True):
        assert re.fullmatch(figure, line), line
