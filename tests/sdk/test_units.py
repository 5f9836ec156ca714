"""The SDK's one unit system (`emit.units`): durations as timedeltas or seconds, instants as
aware datetimes, milliseconds only on the wire. No server: these check what is sent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import emit
import pytest
from emit import Backoff, JobDefaults, JobTemplate, NewJob, Rate
from emit.spaces import settings_body
from emit.units import duration_ms, instant_ms, utc

PARIS_SUMMER = timezone(timedelta(hours=2))


@pytest.mark.parametrize("given", [timedelta(seconds=90), 90, 90.0])
def test_a_duration_is_a_timedelta_or_seconds(given: emit.Duration) -> None:
    assert duration_ms(given, "delay") == 90_000
    assert NewJob("n", delay=given, timeout=given, expires_in=given).to_api() | {"payload": 0} == {
        "name": "n",
        "payload": 0,
        "delayMs": 90_000,
        "timeoutMs": 90_000,
        "expiresInMs": 90_000,
    }


def test_an_instant_is_an_aware_datetime_in_any_zone() -> None:
    at = datetime(2030, 6, 1, 12, 0, tzinfo=PARIS_SUMMER)
    assert instant_ms(at, "run_at") == instant_ms(datetime(2030, 6, 1, 10, 0, tzinfo=UTC), "run_at")
    sent = NewJob("n", run_at=at, expires_at=at + timedelta(hours=1)).to_api()
    assert (sent["runAtMs"], sent["expiresAtMs"] - sent["runAtMs"]) == (
        round(at.timestamp() * 1000),
        3_600_000,
    )
    assert utc(sent["runAtMs"]) == at and utc(sent["runAtMs"]).tzinfo is UTC


def test_a_naive_datetime_is_refused_with_the_arguments_name() -> None:
    with pytest.raises(ValueError, match=r"^run_at: give a timezone-aware datetime"):
        NewJob("n", run_at=datetime(2030, 6, 1, 12, 0)).to_api()
    with pytest.raises(ValueError, match=r"^now: give a timezone-aware datetime"):
        emit.sign("secret", b"{}", now=datetime(2030, 6, 1))


@pytest.mark.parametrize("bad", [True, "90", float("nan"), float("inf")])
def test_what_is_not_a_duration_is_refused(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match=r"^timeout: "):
        NewJob("n", timeout=bad).to_api()  # type: ignore[arg-type]


def test_one_of_each_pair() -> None:
    with pytest.raises(ValueError, match="delay or run_at"):
        NewJob("n", delay=1, run_at=datetime.now(UTC)).to_api()
    with pytest.raises(ValueError, match="expires_at or expires_in"):
        NewJob("n", expires_in=1, expires_at=datetime.now(UTC)).to_api()


def test_backoff_is_a_first_wait_or_a_backoff() -> None:
    assert NewJob("n", backoff=timedelta(seconds=5)).to_api()["backoffMs"] == 5_000
    shaped = NewJob("n", backoff=Backoff("linear", first=2, max=timedelta(minutes=1), jitter=True)).to_api()
    assert (shaped["backoffMs"], shaped["backoff"]) == (
        2_000,
        {"kind": "linear", "maxMs": 60_000, "jitter": True},
    )
    assert Backoff(first=2) == Backoff(first=timedelta(seconds=2)), "seconds are kept as a timedelta"
    assert JobTemplate("n", backoff=Backoff(kind="constant")).to_api()["backoff"] == {"kind": "constant"}


def test_models_a_caller_makes_hold_timedeltas() -> None:
    assert Rate(10, 60).interval == timedelta(minutes=1) and Rate(10, 60).to_api() == {
        "tokens": 10,
        "intervalMs": 60_000,
    }
    defaults = JobDefaults(timeout=30, delay=timedelta(seconds=1))
    assert defaults.timeout == timedelta(seconds=30)
    assert defaults.to_api() == {
        "priority": None,
        "maxAttempts": None,
        "timeoutMs": 30_000,
        "backoffMs": None,
        "backoff": None,
        "guarantee": None,
        "concurrencyKey": None,
        "delayMs": 1_000,
        "expiresInMs": None,
    }
    assert JobDefaults.from_api(defaults.to_api()) == defaults


def test_space_settings_are_sent_in_ms_and_unknown_ones_refused() -> None:
    body = settings_body(
        {
            "timeout": timedelta(minutes=5),
            "unclaimed": None,
            "key_window": 90,
            "policy": {"aging_interval": 30},
        }
    )
    assert body == {
        "timeoutMs": 300_000,
        "unclaimedMs": None,
        "keyWindowMs": 90_000,
        "policy": {"agingIntervalMs": 30_000},
    }
    with pytest.raises(TypeError, match="not a space setting: timeout_ms"):
        settings_body({"timeout_ms": 1})


def test_retry_after_and_worker_options_take_durations() -> None:
    assert emit.RetryAfter("later", after=90).after == timedelta(seconds=90)
    assert emit.RetryAfter("later", timedelta(minutes=1)).after == timedelta(minutes=1)
    with pytest.raises(ValueError, match=r"^RetryAfter: after must be from 0 to a day"):
        emit.RetryAfter("later", after=timedelta(days=2))
    with emit.Emit("http://127.0.0.1:1", "t", "s") as client:
        worker = client.worker(
            names=["n"], lease=timedelta(minutes=2), poll_wait=1, grace=timedelta(seconds=3)
        )(lambda job: None)
        assert (worker.lease, worker.poll_wait, worker.grace) == (
            timedelta(minutes=2),
            timedelta(seconds=1),
            timedelta(seconds=3),
        )
        with pytest.raises(ValueError, match=r"^lease: must be from 1 to 43200 seconds"):
            client.worker(names=["n"], lease=0.5)(lambda job: None)
