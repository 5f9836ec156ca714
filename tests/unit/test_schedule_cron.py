"""Fire times (`shared.schedules`) on the hard cases: daylight saving's gaps and repeats,
the end of February, steps, day of month with day of week, macros."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from shared import schedules
from shared.schedules import CronError

PARIS = ZoneInfo("Europe/Paris")


def ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def local(ms_: int, tz: ZoneInfo = PARIS) -> str:
    return datetime.fromtimestamp(ms_ / 1000, tz).strftime("%Y-%m-%d %H:%M %Z")


def times(cron: str, start: datetime, count: int, timezone: str = "Europe/Paris") -> list[str]:
    tz = ZoneInfo(timezone)
    return [local(t, tz) for t in schedules.fire_times(cron, timezone, ms(start), count)]


def test_a_time_daylight_saving_skips_does_not_fire() -> None:
    """Paris, 2027-03-28: 02:00 becomes 03:00, so 02:30 names no instant that day."""
    assert times("30 2 * * *", datetime(2027, 3, 27, 12, tzinfo=PARIS), 2) == [
        "2027-03-29 02:30 CEST",
        "2027-03-30 02:30 CEST",
    ]
    assert times("*/20 * * * *", datetime(2027, 3, 28, 1, 30, tzinfo=PARIS), 3) == [
        "2027-03-28 01:40 CET",
        "2027-03-28 03:00 CEST",
        "2027-03-28 03:20 CEST",
    ]


def test_a_time_daylight_saving_repeats_fires_once() -> None:
    """Paris, 2027-10-31: 03:00 goes back to 02:00, so 02:30 comes twice; it fires at the first."""
    got = schedules.fire_times("30 2 * * *", "Europe/Paris", ms(datetime(2027, 10, 30, 12, tzinfo=UTC)), 2)
    assert [local(t) for t in got] == ["2027-10-31 02:30 CEST", "2027-11-01 02:30 CET"]
    assert got[1] - got[0] == 25 * 3_600_000
    # Asked from within the repeated hour (its second pass), the time already made is not made again.
    second_pass = ms(datetime(2027, 10, 31, 1, 0, tzinfo=UTC))  # 02:00 CET
    assert (
        local(schedules.fire_times("30 2 * * *", "Europe/Paris", second_pass, 1)[0]) == "2027-11-01 02:30 CET"
    )


def test_the_last_day_of_february_in_leap_and_common_years() -> None:
    assert times("0 12 29 2 *", datetime(2027, 1, 1, tzinfo=UTC), 2, "UTC") == [
        "2028-02-29 12:00 UTC",
        "2032-02-29 12:00 UTC",
    ]
    assert times("0 0 28 2 *", datetime(2027, 1, 1, tzinfo=UTC), 1, "UTC") == ["2027-02-28 00:00 UTC"]
    assert times("0 0 L 2 *", datetime(2027, 1, 1, tzinfo=UTC), 2, "UTC") == [
        "2027-02-28 00:00 UTC",
        "2028-02-29 00:00 UTC",
    ]


def test_steps_start_at_the_field_start_each_hour() -> None:
    assert times("*/7 * * * *", datetime(2027, 1, 1, 0, 50, tzinfo=UTC), 3, "UTC") == [
        "2027-01-01 00:56 UTC",
        "2027-01-01 01:00 UTC",
        "2027-01-01 01:07 UTC",
    ]


def test_day_of_month_and_day_of_week_both_set_fire_on_either() -> None:
    """As cron does: the 13th of the month, and every Friday (2027-08-06 is one)."""
    assert times("0 0 13 * FRI", datetime(2027, 8, 1, tzinfo=UTC), 4, "UTC") == [
        "2027-08-06 00:00 UTC",
        "2027-08-13 00:00 UTC",
        "2027-08-20 00:00 UTC",
        "2027-08-27 00:00 UTC",
    ]


def test_names_lists_ranges_and_macros() -> None:
    start = datetime(2027, 1, 1, tzinfo=UTC)  # a Friday
    assert times("0 9 * JAN,MAR MON-WED", start, 2, "UTC") == ["2027-01-04 09:00 UTC", "2027-01-05 09:00 UTC"]
    assert times("@hourly", start, 2, "UTC") == ["2027-01-01 01:00 UTC", "2027-01-01 02:00 UTC"]
    assert times("@daily", start, 1, "UTC") == ["2027-01-02 00:00 UTC"]
    assert times("@weekly", start, 1, "UTC") == ["2027-01-03 00:00 UTC"]
    assert times("@monthly", start, 1, "UTC") == ["2027-02-01 00:00 UTC"]
    assert times("@yearly", start, 1, "UTC") == ["2028-01-01 00:00 UTC"]


def test_weekdays_at_nine_in_paris_across_the_change_to_winter() -> None:
    got = schedules.fire_times("0 9 * * MON-FRI", "Europe/Paris", ms(datetime(2027, 10, 28, tzinfo=UTC)), 3)
    assert [datetime.fromtimestamp(t / 1000, UTC).strftime("%m-%d %H:%M") for t in got] == [
        "10-28 07:00",  # Thursday, CEST
        "10-29 07:00",  # Friday, CEST
        "11-01 08:00",  # Monday, CET
    ]


def test_a_fire_time_is_strictly_after_the_time_asked() -> None:
    at = ms(datetime(2027, 1, 1, 9, tzinfo=UTC))
    assert schedules.next_fire("0 9 * * *", "UTC", at) == at + 86_400_000
    assert schedules.next_fire("0 9 * * *", "UTC", at - 1) == at


@pytest.mark.parametrize(
    ("cron", "timezone", "why"),
    [
        ("60 * * * *", "UTC", "bad minute"),
        ("* * * *", "UTC", "five fields"),
        ("* * * * * *", "UTC", "five fields"),
        ("0 0 31 4 *", "UTC", "bad day-of-month"),
        ("@fortnightly", "UTC", "the macros are"),
        ("* * * * *", "Europe/Atlantis", "not an IANA timezone"),
        ("* * * * *", "", "not an IANA timezone"),
    ],
)
def test_what_names_no_schedule_is_refused(cron: str, timezone: str, why: str) -> None:
    with pytest.raises(CronError, match=why):
        schedules.check(cron, timezone, ms(datetime(2027, 1, 1, tzinfo=UTC)))
