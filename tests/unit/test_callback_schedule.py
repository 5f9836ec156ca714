"""The callback retry schedule of the contract: 5 s, doubling, at most an hour apart."""

from __future__ import annotations

from shared.callbacks import GIVE_UP_AFTER_MS, HOLD_MS, SEND_DEADLINE_S, retry_wait_ms


def test_waits_start_at_5_s_and_double_up_to_an_hour() -> None:
    assert [retry_wait_ms(n) for n in range(1, 8)] == [
        5_000,
        10_000,
        20_000,
        40_000,
        80_000,
        160_000,
        320_000,
    ]
    assert retry_wait_ms(10) == 2_560_000
    assert retry_wait_ms(11) == retry_wait_ms(500) == 3_600_000


def test_it_tries_for_about_a_day() -> None:
    assert GIVE_UP_AFTER_MS == 86_400_000


def test_a_send_is_over_well_before_its_hold_runs_out() -> None:
    """What keeps two sends of one delivery apart: the hold on an attempt outlasts any send
    (a total deadline, not a per-read timeout), with room for the writes around it."""
    assert SEND_DEADLINE_S * 1000 * 2 <= HOLD_MS
