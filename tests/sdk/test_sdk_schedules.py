"""`client.schedules` and `emit schedules ...` against the session's `emit dev`.

A schedule that could fire while a test looks at its jobs or its last run is put at an
hour twelve hours away (`away`), or paused, so the only jobs a test sees are those it
triggers, whatever the time of day it runs at.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from datetime import time as clock_time
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from emit import (
    Backoff,
    Emit,
    InvalidArgument,
    JobTemplate,
    LastRun,
    NotFound,
    ResourceExhausted,
    Unavailable,
)
from emit import cli as emit_cli
from emit.models import utc

from tests.dev import DevServer
from tests.sdk.support import Flaky

PARIS = ZoneInfo("Europe/Paris")


class Sent(httpx.BaseTransport):
    """Passes every request on, and keeps each one's method, path, query and JSON body."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        with self.lock:
            self.requests.append((request.method, request.url.path, dict(request.url.params), body))
        return self.inner.handle_request(request)


@pytest.fixture
def sent(dev: DevServer, space: str) -> Iterator[tuple[Emit, Sent]]:
    recorder = Sent()
    with Emit(dev.url, dev.token, space, http_transport=recorder) as client:
        yield client, recorder


def now_ms() -> int:
    return int(time.time() * 1000)


def away(timezone: str = "UTC") -> int:
    """The hour of the day twelve hours from now in `timezone`: no fire time of a schedule
    at that hour comes while a test runs."""
    return (datetime.now(ZoneInfo(timezone)).hour + 12) % 24


# -- the SDK ------------------------------------------------------------------


def test_utc_is_aware_and_keeps_the_milliseconds() -> None:
    assert utc(1_700_000_000_123) == datetime(2023, 11, 14, 22, 13, 20, 123_000, tzinfo=UTC)
    assert utc(-1) == datetime(1969, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)


def test_put_answers_the_schedule_with_its_times_as_utc_datetimes(client: Emit, space: str) -> None:
    template = JobTemplate(
        "send-report",
        {"team": "ops"},
        max_attempts=3,
        backoff=Backoff(kind="linear"),
        priority=5,
        guarantee="at_most_once",
        expires_in=timedelta(minutes=1),
    )
    before = now_ms()
    hour = away("Europe/Paris")
    made = client.schedules.put("daily", cron=f"0 {hour} * * *", timezone="Europe/Paris", job=template)

    assert (made.id, made.space, made.cron) == ("daily", space, f"0 {hour} * * *")
    assert made.timezone == "Europe/Paris"
    assert (made.paused, made.overlap, made.last_run) == (False, "allow", None)
    assert made.job == template
    assert made.raw["job"] == {
        "name": "send-report",
        "payload": {"team": "ops"},
        "maxAttempts": 3,
        "backoff": {"kind": "linear"},
        "priority": 5,
        "guarantee": "AT_MOST_ONCE",
        "expiresInMs": 60_000,
    }
    assert made.next_runs_at_ms == tuple(made.raw["nextRunsAtMs"]) and len(made.next_runs) == 5
    for at, ms in zip(made.next_runs, made.next_runs_at_ms, strict=True):
        assert at.tzinfo is UTC and round(at.timestamp() * 1000) == ms
        assert at.astimezone(PARIS).time() == clock_time(hour, 0)  # the hour where the schedule lives
    days = [at.astimezone(PARIS).date() for at in made.next_runs]
    assert all(b - a == timedelta(days=1) for a, b in pairwise(days))
    assert made.next_runs[0].timestamp() * 1000 > before
    assert made.created_at == made.updated_at == utc(made.raw["createdAtMs"])
    assert before <= made.created_at_ms <= now_ms()

    assert client.schedules.get("daily") == made


def test_put_takes_a_mapping_and_replaces_the_schedule_whole(client: Emit) -> None:
    hour = away()
    first = client.schedules.put("weekly", cron=f"0 {hour} * * MON", job={"name": "digest", "payload": 1})
    assert first.timezone == "UTC" and first.job == JobTemplate("digest", 1)
    assert all(at.weekday() == 0 and at.hour == hour for at in first.next_runs)

    again = client.schedules.put(
        "weekly", cron="30 18 * * FRI", job=JobTemplate("summary"), paused=True, overlap="skip"
    )
    assert (again.cron, again.job, again.paused, again.overlap) == (
        "30 18 * * FRI",
        JobTemplate("summary"),
        True,
        "skip",
    )
    assert again.next_runs == [] and again.raw["overlap"] == "SKIP"
    assert again.created_at_ms == first.created_at_ms and again.updated_at_ms >= first.updated_at_ms


def test_list_pages_through_every_schedule_by_id(sent: tuple[Emit, Sent]) -> None:
    client, recorder = sent
    assert list(client.schedules.list()) == []
    for sid in ("c", "a", "b"):
        client.schedules.put(sid, cron=f"0 {away()} 1 1 *", job=JobTemplate(f"job-{sid}"))
    recorder.requests.clear()

    listed = list(client.schedules.list(page_size=2))
    assert [(s.id, s.job.name) for s in listed] == [("a", "job-a"), ("b", "job-b"), ("c", "job-c")]
    assert all(len(s.next_runs) == 5 for s in listed)
    pages = [(method, query) for method, _, query, _ in recorder.requests]
    assert [m for m, _ in pages] == ["GET", "GET"]
    assert pages[0][1] == {"limit": "2"} and pages[1][1]["limit"] == "2" and pages[1][1]["cursor"]

    recorder.requests.clear()
    assert [s.id for s in client.schedules.list(limit=2, page_size=5)] == ["a", "b"]
    assert [query for _, _, query, _ in recorder.requests] == [{"limit": "2"}]


def test_update_sends_only_the_fields_given(sent: tuple[Emit, Sent]) -> None:
    client, recorder = sent
    hour = away()  # in New York too, hours from now
    made = client.schedules.put("noon", cron=f"0 {hour} * * *", job=JobTemplate("report", {"n": 1}))
    recorder.requests.clear()

    moved = client.schedules.update("noon", timezone="America/New_York")
    method, _, _, body = recorder.requests[-1]
    assert (method, body) == ("PATCH", {"timezone": "America/New_York"})
    assert (moved.cron, moved.job, moved.overlap) == (made.cron, made.job, made.overlap)
    new_york = ZoneInfo("America/New_York")
    assert all(at.astimezone(new_york).time() == clock_time(hour, 0) for at in moved.next_runs)

    cron = f"30 {hour} * * *"
    swapped = client.schedules.update("noon", job={"name": "other"}, overlap="skip", cron=cron)
    assert recorder.requests[-1][3] == {
        "job": {"name": "other", "payload": None},
        "overlap": "SKIP",
        "cron": cron,
    }
    assert (swapped.job, swapped.overlap) == (JobTemplate("other"), "skip")
    assert swapped.timezone == "America/New_York" and swapped.created_at_ms == made.created_at_ms
    assert all(at.astimezone(new_york).time() == clock_time(hour, 30) for at in swapped.next_runs)

    recorder.requests.clear()
    with pytest.raises(TypeError, match="not a schedule field: name"):
        client.schedules.update("noon", name="x")
    assert recorder.requests == []


def test_pause_clears_the_next_runs_and_resume_brings_them_back(client: Emit) -> None:
    client.schedules.put("hourly", cron="@hourly", job=JobTemplate("tick"))
    paused = client.schedules.pause("hourly")
    assert paused.paused and paused.next_runs == []
    assert client.schedules.get("hourly").paused

    before = now_ms()
    resumed = client.schedules.resume("hourly")
    assert not resumed.paused and len(resumed.next_runs) == 5
    assert all(at.minute == 0 and at.second == 0 for at in resumed.next_runs)
    assert before < resumed.next_runs_at_ms[0] <= before + 3_600_000  # from now: nothing made up


def test_trigger_makes_a_job_of_the_schedule_once_per_key(client: Emit) -> None:
    client.schedules.put("noon", cron=f"0 {away()} * * *", job=JobTemplate("report", {"n": 1}, priority=7))
    before = now_ms()
    first = client.schedules.trigger("noon", key="run-1")
    after = now_ms()
    again = client.schedules.trigger("noon", key="run-1")
    assert first.new and again.outcome == "duplicate" and again.id == first.id

    job = client.jobs.get(first.id)
    assert (job.name, job.payload, job.priority, job.key) == ("report", {"n": 1}, 7, "run-1")
    assert job.schedule is not None and job.schedule.id == "noon"
    assert before <= job.schedule.at_ms <= after and job.schedule.at == utc(job.schedule.at_ms)
    assert client.schedules.get("noon").last_run == LastRun(job.schedule.at_ms, first.id)

    other = client.schedules.trigger("noon")  # no key: a new job each time
    assert other.new and other.id != first.id
    last = client.schedules.get("noon").last_run
    assert last is not None and last.job_id == other.id and last.at.tzinfo is UTC


def test_a_paused_schedule_can_still_be_triggered(client: Emit) -> None:
    client.schedules.put("off", cron="0 12 * * *", job=JobTemplate("report"), paused=True)
    made = client.schedules.trigger("off")
    assert made.new and client.jobs.get(made.id).schedule is not None


def test_a_trigger_with_a_key_is_sent_again_after_a_lost_answer(dev: DevServer, space: str) -> None:
    lost = Flaky({("POST", ":trigger"): 1}, after=True)
    with Emit(dev.url, dev.token, space, http_transport=lost) as client:
        client.schedules.put("noon", cron=f"0 {away()} * * *", job=JobTemplate("report"))
        made = client.schedules.trigger("noon", key="k")
        assert lost.failed == [f"POST /v1/spaces/{space}/schedules/noon:trigger"]
        assert made.outcome == "duplicate"  # the lost first try made it
        assert [j.id for j in client.jobs.list()] == [made.id]


def test_a_trigger_without_a_key_is_not_sent_again(dev: DevServer, space: str) -> None:
    lost = Flaky({("POST", ":trigger"): 1}, after=True)
    with Emit(dev.url, dev.token, space, http_transport=lost) as client:
        client.schedules.put("noon", cron=f"0 {away()} * * *", job=JobTemplate("report"))
        with pytest.raises(Unavailable) as raised:
            client.schedules.trigger("noon")
        assert raised.value.outcome_unknown
        assert len(list(client.jobs.list())) == 1  # made once, by the try whose answer was lost


def test_a_trigger_into_a_full_space_raises_resource_exhausted(dev: DevServer, space: str) -> None:
    with Emit(dev.url, dev.token, space, room_wait=0) as client:
        client.spaces.update(max_in_flight=1)
        client.schedules.put("noon", cron=f"0 {away()} * * *", job=JobTemplate("report"))
        assert client.schedules.trigger("noon").new
        with pytest.raises(ResourceExhausted):
            client.schedules.trigger("noon")
        assert len(list(client.jobs.list())) == 1


def test_delete_removes_the_schedule_and_keeps_its_jobs(client: Emit) -> None:
    client.schedules.put("noon", cron=f"0 {away()} * * *", job=JobTemplate("report"))
    made = client.schedules.trigger("noon")
    assert client.schedules.delete("noon") is None
    with pytest.raises(NotFound):
        client.schedules.get("noon")
    assert list(client.schedules.list()) == []
    assert client.jobs.get(made.id).schedule is not None


def test_an_unknown_schedule_raises_not_found(client: Emit) -> None:
    calls: list[Callable[[], object]] = [
        lambda: client.schedules.get("missing"),
        lambda: client.schedules.update("missing", paused=True),
        lambda: client.schedules.pause("missing"),
        lambda: client.schedules.delete("missing"),
        lambda: client.schedules.trigger("missing", key="k"),
    ]
    for call in calls:
        with pytest.raises(NotFound, match="schedule missing not found"):
            call()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"cron": "61 * * * *"}, "cron: "),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone: "),
        ({"job": JobTemplate("report", max_attempts=0)}, "job.maxAttempts: "),
        ({"job": JobTemplate("")}, "job.name: "),
    ],
)
def test_a_refused_schedule_names_the_field(client: Emit, change: dict[str, Any], field: str) -> None:
    put: dict[str, Any] = {"cron": "0 12 * * *", "job": JobTemplate("report")} | change
    with pytest.raises(InvalidArgument) as raised:
        client.schedules.put("bad", **put)
    assert raised.value.status == 400 and str(raised.value).startswith(field)
    with pytest.raises(NotFound):
        client.schedules.get("bad")

    client.schedules.put("good", cron="0 12 * * *", job=JobTemplate("report"))
    with pytest.raises(InvalidArgument, match=f"^{field}"):
        client.schedules.update("good", **change)


def test_a_template_has_no_fields_of_one_job_alone() -> None:
    with pytest.raises(TypeError):
        JobTemplate(**{"name": "report", "key": "k"})  # type: ignore[arg-type]


def test_schedules_are_the_spaces_own(client: Emit, space: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMIT_SPACE", raising=False)
    client.schedules.put("noon", cron="0 12 * * *", job=JobTemplate("report"))
    with pytest.raises(NotFound):
        client.with_space(f"{space}-other").schedules.get("noon")
    token = client.authorization.removeprefix("Bearer ")
    with Emit(client.url, token) as no_space, pytest.raises(ValueError, match="no space"):
        no_space.schedules.get("noon")


# -- the command --------------------------------------------------------------


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def emit_cmd(
    dev: DevServer, space: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Ran]:
    """`emit ...` in the test's space, run by its `main` in this process."""
    monkeypatch.setenv("EMIT_URL", dev.url)
    monkeypatch.setenv("EMIT_TOKEN", dev.token)
    monkeypatch.setenv("EMIT_SPACE", space)

    def call(*args: str) -> Ran:
        try:
            code = emit_cli.main(list(args))
        except SystemExit as exit_:  # argparse's usage errors
            code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return call


def shown(ms: int) -> str:
    """A time as the command shows it: local, to the second, with the zone (and how long
    ago beside it, which `timeless` takes away)."""
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def timeless(text: str) -> list[str]:
    """The command's lines without the `(3 min ago)` beside each time, which moves on."""
    return [re.sub(r" \((?:just now|in [^)]*|[^()]* ago)\)", "", line) for line in text.splitlines()]


def test_emit_schedules_put_get_and_list_show_the_next_runs_and_the_last(
    emit_cmd: Callable[..., Ran],
) -> None:
    hour = away("Europe/Paris")
    put = emit_cmd(
        "schedules", "put", "noon", "--cron", f"0 {hour} * * *", "--timezone", "Europe/Paris",
        "--name", "report", "--payload", '{"team": "ops"}',
    )  # fmt: skip
    assert put.returncode == 0, put.stderr
    raw = json.loads(emit_cmd("schedules", "get", "noon", "--json").stdout)
    assert raw["job"] == {"name": "report", "payload": {"team": "ops"}} and raw["timezone"] == "Europe/Paris"
    assert raw["overlap"] == "ALLOW" and raw["paused"] is False and len(raw["nextRunsAtMs"]) == 5
    lines = timeless(put.stdout)
    assert lines[0].split() == ["id:", "noon"]
    assert "last run:   -" in lines
    first = lines.index(f"next runs:  {shown(raw['nextRunsAtMs'][0])}")
    assert [line.strip() for line in lines[first + 1 :]] == [shown(ms) for ms in raw["nextRunsAtMs"][1:]]

    triggered = emit_cmd("schedules", "trigger", "noon", "--key", "run-1")
    assert triggered.returncode == 0, triggered.stderr
    job_id, outcome = triggered.stdout.split()
    assert outcome == "new"
    assert emit_cmd("schedules", "trigger", "noon", "--key", "run-1").stdout.split() == [job_id, "duplicate"]
    at_ms = json.loads(emit_cmd("schedules", "get", "noon", "--json").stdout)["lastRun"]["atMs"]

    got = timeless(emit_cmd("schedules", "get", "noon").stdout)
    assert f"last run:   {shown(at_ms)} {job_id}" in got
    assert f"cron:       0 {hour} * * * (Europe/Paris)" in got
    assert 'job:        report {"payload": {"team": "ops"}}' in got

    emit_cmd("schedules", "put", "later", "--cron", "0 12 1 1 *", "--name", "yearly", "--paused")
    listed = timeless(emit_cmd("schedules", "list").stdout)
    assert listed[0].split() == ["ID", "CRON", "TIMEZONE", "JOB", "STATE", "NEXT", "RUN", "LAST", "RUN"]
    assert listed[1].split() == [
        "later", "0", "12", "1", "1", "*", "UTC", "yearly", "paused", "-", "-",
    ]  # fmt: skip
    assert listed[2].split() == [
        "noon", "0", str(hour), "*", "*", "*", "Europe/Paris", "report", "active",
        *shown(raw["nextRunsAtMs"][0]).split(), *shown(at_ms).split(), job_id,
    ]  # fmt: skip
    assert [s["id"] for s in json.loads(emit_cmd("schedules", "list", "--json").stdout)] == ["later", "noon"]
    assert len(emit_cmd("schedules", "list", "--limit", "1").stdout.splitlines()) == 2

    job = timeless(emit_cmd("jobs", "get", job_id).stdout)
    assert f"schedule:  noon (fire time {shown(at_ms)})" in job


def test_emit_schedules_put_takes_the_apis_job_json(emit_cmd: Callable[..., Ran]) -> None:
    job = {"name": "report", "payload": [1, 2], "maxAttempts": 2, "guarantee": "AT_MOST_ONCE"}
    put = emit_cmd(
        "schedules", "put", "nightly", "--cron", "@daily", "--job", json.dumps(job),
        "--overlap", "SKIP", "--paused", "--json",
    )  # fmt: skip
    assert put.returncode == 0, put.stderr
    raw = json.loads(put.stdout)
    assert (raw["job"], raw["overlap"], raw["paused"], raw["nextRunsAtMs"]) == (job, "SKIP", True, [])
    assert "next runs:  -" in emit_cmd("schedules", "get", "nightly").stdout.splitlines()


def test_emit_schedules_update_pause_and_resume(emit_cmd: Callable[..., Ran]) -> None:
    hour = away("Asia/Tokyo")
    emit_cmd(
        "schedules", "put", "noon", "--cron", f"0 {hour} * * *", "--timezone", "Asia/Tokyo",
        "--name", "report", "--payload", "1", "--overlap", "skip",
    )  # fmt: skip
    cron = f"30 {hour} * * *"
    updated = json.loads(emit_cmd("schedules", "update", "noon", "--cron", cron, "--json").stdout)
    assert (updated["cron"], updated["job"], updated["timezone"], updated["overlap"]) == (
        cron,
        {"name": "report", "payload": 1},
        "Asia/Tokyo",
        "SKIP",
    )
    tokyo = ZoneInfo("Asia/Tokyo")
    assert all(utc(ms).astimezone(tokyo).time() == clock_time(hour, 30) for ms in updated["nextRunsAtMs"])
    replaced = json.loads(emit_cmd("schedules", "update", "noon", "--name", "other", "--json").stdout)
    assert (replaced["job"], replaced["cron"]) == ({"name": "other", "payload": None}, cron)

    paused = emit_cmd("schedules", "pause", "noon").stdout.splitlines()
    assert "state:      paused" in paused and "next runs:  -" in paused
    resumed = emit_cmd("schedules", "resume", "noon").stdout.splitlines()
    assert "state:      active" in resumed and "next runs:  -" not in resumed


def test_emit_schedules_delete(emit_cmd: Callable[..., Ran]) -> None:
    emit_cmd("schedules", "put", "noon", "--cron", "0 12 * * *", "--name", "report")
    deleted = emit_cmd("schedules", "delete", "noon")
    assert (deleted.returncode, deleted.stdout) == (0, "deleted noon\n")
    gone = emit_cmd("schedules", "get", "noon")
    assert gone.returncode == 1 and "emit: NotFound: schedule noon not found" in gone.stderr
    assert emit_cmd("schedules", "delete", "noon").returncode == 1


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["put", "s", "--cron", "0 12 * * *"], 2, "give --job, or --name"),
        (
            ["put", "s", "--cron", "0 12 * * *", "--job", '{"name": "a"}', "--name", "b"],
            2,
            "--job: give it alone",
        ),
        (["put", "s", "--cron", "0 12 * * *", "--job", "[1]"], 2, '--job: a JSON object with a "name"'),
        (["put", "s", "--cron", "0 12 * * *", "--name", "a", "--payload", "{"], 2, "payload: not JSON"),
        (["put", "s", "--name", "a"], 2, "--cron"),
        (["put", "s", "--cron", "0 12 * * *", "--name", "a", "--overlap", "never"], 2, "--overlap"),
        (["put", "s", "--cron", "every day", "--name", "a"], 1, "emit: InvalidArgument: cron: "),
        (["put", "s", "--cron", "0 12 * * *", "--timezone", "Nowhere", "--name", "a"], 1, "timezone: "),
        (["update", "s"], 2, "give at least one field"),
        (["update", "s", "--payload", "1"], 2, "--payload: give --name too"),
        (["trigger", "s"], 1, "emit: NotFound: schedule s not found"),
    ],
)
def test_emit_schedules_refuses_what_it_cannot_send(
    emit_cmd: Callable[..., Ran], args: list[str], code: int, said: str
) -> None:
    ran = emit_cmd("schedules", *args)
    assert ran.returncode == code and said in ran.stderr, ran.stderr
    assert emit_cmd("schedules", "list", "--json").stdout == "[]\n"
