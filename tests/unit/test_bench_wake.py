"""`bench.wake`: an idle listening worker's month on AWS, from prices, settings and a measured
empty claim (the latency half runs `emit dev` and is `make bench`'s, not a test's)."""

from __future__ import annotations

import pytest
from emit import wake

from bench import wake as bench
from shared.wake import CONNECTION_MS

TARGET_DOLLARS = 0.10
"""The issue's ceiling for one idle worker connected around the clock."""


@pytest.mark.moto_only
def test_an_idle_listening_worker_costs_at_most_ten_cents_a_month() -> None:
    usage = bench.empty_claim_usage()
    assert 0 < usage.read_units < 10, "an empty claim reads a token, a partition and a name's shards"
    lines = bench.priced(
        bench.idle_worker(
            usage, claim_every_s=wake.CLAIM_EVERY_S, keepalive_s=wake.KEEPALIVE_S, connection_ms=CONNECTION_MS
        )
    )
    by_what = {line.what: line for line in lines}
    assert by_what["WebSocket connection minutes"].count == 730 * 60
    assert by_what["claims: HTTP API requests"].count == 730 * 60, "one claim a minute"
    assert sum(line.dollars for line in lines) <= TARGET_DOLLARS


@pytest.mark.moto_only
def test_it_prints_the_idle_workers_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--no-latency"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("idle worker: $") and last.endswith(" a month")


@pytest.mark.moto_only
def test_a_hint_costs_one_query_and_one_write_however_many_listen() -> None:
    """The two items every hint of a name touches (its listeners, its last-hinted item): the
    bench's ceilings for them follow from this."""
    few, many = bench.hint_usage(3), bench.hint_usage(1_000)
    assert few.calls == many.calls == 2 and few.write_units == many.write_units == 1
    assert many.read_units * bench.HINTING_PROCESSES < 3_000, "the listeners' partition under its limit"
