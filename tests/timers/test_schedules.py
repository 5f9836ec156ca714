"""Schedules through the handlers, on the test clock: each fire time makes one job, once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from shared.clock import ManualClock
from shared.job import Fired
from shared.jobs.create import create
from shared.jobs.schedules import fire_id
from shared.schema import NewJob
from tests.conftest import mint
from tests.support import Api, Background

SPACE = "/v1/spaces/work"
SCHEDULES = f"{SPACE}/schedules"
MINUTE = 60_000
QUARTER = 15 * MINUTE
START = 1_790_000_000_000
"""The test clock's start: 2026-09-21 14:13:20 UTC."""


def put(api: Api, schedule_id: str = "every-quarter", **fields: Any) -> dict[str, Any]:
    body = {"cron": "*/15 * * * *", "job": {"name": "report", "payload": {"n": 1}}} | fields
    answer = api.request("PUT", f"{SCHEDULES}/{schedule_id}", body)
    assert answer.status == 200, answer
    return dict(answer.body)


def made(api: Api, name: str = "report") -> list[dict[str, Any]]:
    """The schedule's jobs, oldest fire time first."""
    jobs = api.get(f"{SPACE}/jobs", query={"name": name, "limit": 1000}).body["jobs"]
    return sorted(jobs, key=lambda j: j["schedule"]["atMs"])


def quarters(after_ms: int, count: int) -> list[int]:
    first = (after_ms // QUARTER + 1) * QUARTER
    return [first + i * QUARTER for i in range(count)]


def test_a_schedule_answers_its_definition_next_runs_and_last_run(api: Api) -> None:
    shown = put(api, timezone="Europe/Paris", overlap="SKIP")
    assert shown == {
        "id": "every-quarter",
        "space": "work",
        "cron": "*/15 * * * *",
        "timezone": "Europe/Paris",
        "job": {"name": "report", "payload": {"n": 1}},
        "paused": False,
        "overlap": "SKIP",
        "createdAtMs": START,
        "updatedAtMs": START,
        "nextRunsAtMs": quarters(START, 5),
        "lastRun": None,
    }
    assert api.get(f"{SCHEDULES}/every-quarter").body == shown
    # The space exists from the schedule on (its job's name listed), as after a create.
    assert api.get(SPACE).status == 200
    assert api.get(SCHEDULES).body == {"schedules": [shown], "cursor": None}


def test_each_fire_time_makes_one_job_carrying_its_schedule_and_time(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    put(api)
    times = quarters(START, 3)
    for at in times:
        clock.advance(at - clock.now_ms())
        bg.tick()
        bg.tick()  # a tick again at the same time makes nothing more
    jobs = made(api)
    assert [j["schedule"] for j in jobs] == [{"id": "every-quarter", "atMs": at} for at in times]
    full = api.get(f"{SPACE}/jobs/{jobs[-1]['id']}").body
    assert full["payload"] == {"n": 1}
    shown = api.get(f"{SCHEDULES}/every-quarter").body
    assert shown["lastRun"] == {"atMs": times[-1], "jobId": jobs[-1]["id"]}
    assert shown["nextRunsAtMs"][0] == times[-1] + QUARTER


def test_a_tick_an_hour_late_makes_each_missed_time_once(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    put(api)
    clock.advance(61 * MINUTE)
    bg.tick()
    bg.tick()
    times = quarters(START, 4)
    assert [j["schedule"]["atMs"] for j in made(api)] == times
    assert api.get(f"{SCHEDULES}/every-quarter").body["nextRunsAtMs"][0] == times[-1] + QUARTER


def test_a_tick_whose_jobs_a_racing_tick_made_first_leaves_the_rest_to_the_next(
    api: Api, bg: Background, clock: ManualClock, rt: Any
) -> None:
    """Two ticks at once over more missed times than a tick makes (`MAX_SCHEDULE_FIRES_PER_TICK`):
    each finds about half the jobs made by the other first (DUPLICATE, which counts none), so
    neither reached the limit before its tries ran out, and the schedule was left due with no
    timer filed: it never fired again (two threads over 150 missed minutes did so 3 runs of 3).
    Here one tick finds the first 100 of 150 missed minutes' jobs made, as a racing tick makes
    them; the next ticks must go on."""
    put(api, cron="* * * * *")
    first = (START // MINUTE + 1) * MINUTE
    clock.advance(150 * MINUTE)
    read = rt.context.schedules.get("work", "every-quarter")
    for at in range(first, first + 100 * MINUTE, MINUTE):
        job = NewJob.model_validate(read.job)
        create(rt.context, "work", [job], batch=False, once=fire_id(read, at), fired=Fired(read.id, at))
    bg.tick()
    for _ in range(3):
        clock.advance(MINUTE)
        bg.tick()
    last = clock.now_ms() // MINUTE * MINUTE
    assert [j["schedule"]["atMs"] for j in made(api)] == list(range(first, last + 1, MINUTE))


def test_two_ticks_at_once_make_one_job(api: Api, bg: Background, clock: ManualClock) -> None:
    put(api)
    clock.advance(QUARTER)
    bg.stream()
    start = threading.Barrier(2)

    def tick() -> None:
        start.wait()
        bg.tick()

    threads = [threading.Thread(target=tick) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made(api)) == 1


def test_a_paused_schedule_makes_nothing_and_does_not_make_up_what_it_missed(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    put(api)
    paused = api.patch(f"{SCHEDULES}/every-quarter", {"paused": True}).body
    assert paused["paused"] is True
    assert paused["nextRunsAtMs"] == []
    clock.advance(2 * QUARTER)
    bg.tick()
    assert made(api) == []
    resumed = api.patch(f"{SCHEDULES}/every-quarter", {"paused": False}).body
    assert resumed["nextRunsAtMs"][0] == quarters(clock.now_ms(), 1)[0]
    clock.advance(QUARTER)
    bg.tick()
    assert [j["schedule"]["atMs"] for j in made(api)] == [resumed["nextRunsAtMs"][0]]


def test_overlap_skip_makes_no_job_while_the_last_is_unfinished(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    put(api, overlap="SKIP", job={"name": "report", "timeoutMs": 3_600_000})
    first, second, third = quarters(START, 3)
    clock.advance(first - clock.now_ms())
    bg.tick()
    [claimed] = api.claimed("/v1/spaces/work", names=["report"])
    clock.advance(second - clock.now_ms())
    bg.tick()
    assert [j["schedule"]["atMs"] for j in made(api)] == [first]  # still running: skipped
    assert api.get(f"{SCHEDULES}/every-quarter").body["lastRun"]["atMs"] == first
    done = api.post(f"{SPACE}/jobs:report", {"id": claimed, "attempt": 1, "complete": {"result": None}})
    assert done.body["outcomes"] == [{"status": "COMPLETED"}], done
    clock.advance(third - clock.now_ms())
    bg.tick()
    assert [j["schedule"]["atMs"] for j in made(api)] == [first, third]


def test_overlap_allow_makes_a_job_while_the_last_runs(api: Api, bg: Background, clock: ManualClock) -> None:
    put(api)
    first, second = quarters(START, 2)
    clock.advance(first - clock.now_ms())
    bg.tick()
    api.claimed("/v1/spaces/work", names=["report"])
    clock.advance(second - clock.now_ms())
    bg.tick()
    assert [j["schedule"]["atMs"] for j in made(api)] == [first, second]


def test_trigger_makes_one_job_now_and_a_key_makes_it_once(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    put(api, paused=True)
    clock.advance(1234)
    first = api.post(f"{SCHEDULES}/every-quarter:trigger")
    assert first.status == 200, first
    assert first.body["outcome"] == "NEW"
    keyed = api.post(f"{SCHEDULES}/every-quarter:trigger", {"key": "deploy-42"})
    again = api.post(f"{SCHEDULES}/every-quarter:trigger", {"key": "deploy-42"})
    assert keyed.body["outcome"] == "NEW"
    assert again.body == {"id": keyed.body["id"], "outcome": "DUPLICATE"}
    jobs = made(api)
    assert len(jobs) == 2
    assert {j["schedule"]["atMs"] for j in jobs} == {START + 1234}
    assert api.get(f"{SCHEDULES}/every-quarter").body["lastRun"]["jobId"] == keyed.body["id"]


def test_a_trigger_sent_again_after_a_crash_is_the_last_run_skip_waits_for(
    api: Api, bg: Background, clock: ManualClock, rt: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keyed trigger whose process died after making the job, before noting it as the
    schedule's last run: the trigger sent again (DUPLICATE) notes it, so `overlap: SKIP`
    makes no job while it is unfinished (found by tests/faults)."""
    put(api, overlap="SKIP")
    write = rt.context.schedules.write

    def dies(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(rt.context.schedules, "write", write)
        raise RuntimeError("the process died")

    monkeypatch.setattr(rt.context.schedules, "write", dies)
    assert api.post(f"{SCHEDULES}/every-quarter:trigger", {"key": "deploy-42"}).status == 500
    again = api.post(f"{SCHEDULES}/every-quarter:trigger", {"key": "deploy-42"}).body
    assert again["outcome"] == "DUPLICATE"
    assert api.get(f"{SCHEDULES}/every-quarter").body["lastRun"] == {"atMs": START, "jobId": again["id"]}
    clock.advance(QUARTER)
    bg.tick()
    assert [j["id"] for j in made(api)] == [again["id"]]  # still pending: the quarter skipped


def test_a_deleted_schedule_makes_nothing_more(api: Api, bg: Background, clock: ManualClock) -> None:
    put(api)
    assert api.delete(f"{SCHEDULES}/every-quarter").status == 204
    assert api.get(f"{SCHEDULES}/every-quarter").status == 404
    assert api.delete(f"{SCHEDULES}/every-quarter").status == 404
    assert api.get(SCHEDULES).body == {"schedules": [], "cursor": None}
    clock.advance(QUARTER)
    bg.tick()
    assert made(api) == []


def test_a_changed_cron_fires_at_its_new_times_only(api: Api, bg: Background, clock: ManualClock) -> None:
    put(api)
    changed = api.patch(f"{SCHEDULES}/every-quarter", {"cron": "@hourly"}).body
    hour = (START // 3_600_000 + 1) * 3_600_000
    assert changed["nextRunsAtMs"][:2] == [hour, hour + 3_600_000]
    assert changed["job"] == {"name": "report", "payload": {"n": 1}}
    clock.advance(hour - clock.now_ms())
    bg.tick()
    assert [j["schedule"]["atMs"] for j in made(api)] == [hour]  # the old quarter's timer made nothing


def test_weekdays_at_nine_in_paris_follow_its_summer_time(api: Api) -> None:
    """2026-10-25 ends summer time in Paris: 9:00 is 07:00 UTC before, 08:00 UTC after."""
    shown = put(api, "standup", cron="0 9 * * MON-FRI", timezone="Europe/Paris")
    paris = ZoneInfo("Europe/Paris")
    runs = [datetime.fromtimestamp(ms / 1000, paris) for ms in shown["nextRunsAtMs"]]
    assert all((r.hour, r.minute) == (9, 0) and r.weekday() < 5 for r in runs)
    assert datetime.fromtimestamp(shown["nextRunsAtMs"][0] / 1000, UTC).hour == 7  # September: UTC+2


def test_schedules_list_a_page_at_a_time(api: Api) -> None:
    for n in range(5):
        put(api, f"s{n}")
    first = api.get(SCHEDULES, query={"limit": 2}).body
    assert [s["id"] for s in first["schedules"]] == ["s0", "s1"]
    rest = api.get(SCHEDULES, query={"limit": 10, "cursor": first["cursor"]}).body
    assert [s["id"] for s in rest["schedules"]] == ["s2", "s3", "s4"]
    assert rest["cursor"] is None
    for bad in ("", "no spaces", "x" * 200):
        refused = api.get(SCHEDULES, query={"cursor": bad})
        assert (refused.status, refused.body["message"]) == (400, "cursor: is not a cursor this API gave")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"cron": "61 * * * *"}, "cron: '61 * * * *': bad minute"),
        ({"cron": "* * * *"}, "cron: '* * * *': five fields"),
        ({"cron": "@often"}, "cron: '@often': the macros are"),
        ({"cron": "0 0 30 2 *"}, "cron: '0 0 30 2 *': bad day-of-month"),
        ({"timezone": "Mars/Olympus"}, "timezone: 'Mars/Olympus' is not an IANA timezone"),
        ({"overlap": "QUEUE"}, "overlap:"),
        ({"job": {"name": "n", "key": "k"}}, "job.key: is not a known field"),
        ({"job": {"name": "n", "runAtMs": 5}}, "job.runAtMs: is not a known field"),
        ({"job": {"name": "n", "delayMs": 5}}, "job.delayMs: is not a known field"),
        ({"job": {"name": "bad name"}}, "job.name:"),
        ({"job": {"name": "n", "payload": "x" * 17_000}}, "job: must be at most 16384 bytes of JSON"),
        ({"job": {"name": "n", "callback": {"url": "ftp://example.com/x"}}}, "job.callback.url:"),
        ({"paused": "yes"}, "paused:"),
    ],
)
def test_a_bad_schedule_is_refused_naming_its_field(api: Api, body: dict[str, Any], message: str) -> None:
    sent = {"cron": "*/15 * * * *", "job": {"name": "report"}} | body
    answer = api.request("PUT", f"{SCHEDULES}/s", sent)
    assert answer.status == 400, answer
    assert answer.body["message"].startswith(message), answer.body
    assert api.get(f"{SCHEDULES}/s").status == 404


def test_bad_ids_patches_and_triggers_are_refused(api: Api) -> None:
    bad = api.request("PUT", f"{SCHEDULES}/no%20spaces", {"cron": "@daily", "job": {"name": "n"}})
    assert bad.status == 400
    assert bad.body["message"].startswith("id: ")
    assert api.patch(f"{SCHEDULES}/missing", {"paused": True}).status == 404
    assert api.post(f"{SCHEDULES}/missing:trigger").status == 404
    put(api)
    assert api.patch(f"{SCHEDULES}/every-quarter", {"job": None}).body["message"].startswith("job: ")
    assert api.patch(f"{SCHEDULES}/every-quarter", {"cron": "1 2 3"}).body["message"].startswith("cron: ")
    assert api.post(f"{SCHEDULES}/every-quarter:trigger", {"key": ""}).status == 400


def test_schedules_need_admin_to_change_and_read_to_see(api: Api, rt: Any) -> None:
    put(api)
    reader = api.as_token(mint(rt, ["read"], ["work"]))
    assert reader.get(f"{SCHEDULES}/every-quarter").status == 200
    assert reader.get(SCHEDULES).status == 200
    assert reader.patch(f"{SCHEDULES}/every-quarter", {"paused": True}).status == 403
    assert reader.post(f"{SCHEDULES}/every-quarter:trigger").status == 403
    assert reader.delete(f"{SCHEDULES}/every-quarter").status == 403


def test_a_delete_killed_before_its_listing_entry_goes_takes_it_when_sent_again(
    api: Api, rt: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(api)
    store = rt.context.schedules
    monkeypatch.setattr(store, "unlist", lambda space, schedule_id: (_ for _ in ()).throw(OSError("killed")))
    assert api.delete(f"{SCHEDULES}/every-quarter").status == 500
    monkeypatch.undo()
    assert rt.db.get({"pk": "SCHEDULES#work", "sk": "every-quarter"}) is not None  # left behind
    assert api.delete(f"{SCHEDULES}/every-quarter").status == 404
    assert rt.db.get({"pk": "SCHEDULES#work", "sk": "every-quarter"}) is None
