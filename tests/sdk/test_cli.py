"""The `emit` command, run as a user runs it, against a real `emit dev`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import emit
import pytest
from emit import Emit, HeldJob
from emit import cli as emit_cli

from tests.e2e.conftest import DevServer
from tests.sdk.support import FAST, running
from tests.support import PATIENCE_S, eventually

EMIT = str(Path(sys.executable).parent / "emit")


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run(
    dev: DevServer, space: str | None, *args: str, timeout: float = PATIENCE_S
) -> subprocess.CompletedProcess[str]:
    """The installed `emit` command, in a process of its own."""
    env = dict(os.environ, EMIT_URL=dev.url, EMIT_TOKEN=dev.token)
    env.pop("EMIT_SPACE", None)
    if space:
        env["EMIT_SPACE"] = space
    return subprocess.run(
        [EMIT, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture
def emit_cmd(
    dev: DevServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Ran]:
    """`emit ...` run by its `main` in this process: the same code as the command, faster."""

    def call(space: str | None, *args: str) -> Ran:
        monkeypatch.setenv("EMIT_URL", dev.url)
        monkeypatch.setenv("EMIT_TOKEN", dev.token)
        if space:
            monkeypatch.setenv("EMIT_SPACE", space)
        else:
            monkeypatch.delenv("EMIT_SPACE", raising=False)
        try:
            code = emit_cli.main(list(args))
        except SystemExit as exit_:  # argparse's usage errors
            code = int(exit_.code or 0)
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return call


def test_jobs_create_get_list_and_cancel(client: Emit, space: str, emit_cmd: Callable[..., Ran]) -> None:
    created = emit_cmd(space, "jobs", "create", "charge-invoice", '{"invoiceId": "inv_7"}', "--key", "k7")
    assert created.returncode == 0, created.stderr
    job_id, outcome = created.stdout.split()
    assert outcome == "new"
    again = emit_cmd(
        space, "jobs", "create", "charge-invoice", '{"invoiceId": "inv_7"}', "--key", "k7", "--json"
    )
    assert json.loads(again.stdout) == {"id": job_id, "outcome": "DUPLICATE"}

    shown = emit_cmd(space, "jobs", "get", job_id)
    assert "pending" in shown.stdout and '{"invoiceId": "inv_7"}' in shown.stdout
    assert json.loads(emit_cmd(space, "jobs", "get", job_id, "--json").stdout)["payload"] == {
        "invoiceId": "inv_7"
    }
    listed = emit_cmd(space, "jobs", "list", "--status", "pending")
    assert job_id in listed.stdout and listed.stdout.startswith("ID")
    assert [j["id"] for j in json.loads(emit_cmd(space, "jobs", "list", "--json").stdout)] == [job_id]

    cancelled = emit_cmd(space, "jobs", "cancel", job_id)
    assert cancelled.returncode == 0 and "cancelled" in cancelled.stdout
    again_cancelled = emit_cmd(space, "jobs", "cancel", job_id)
    assert again_cancelled.returncode == 1 and "already_finished" in again_cancelled.stdout
    assert client.jobs.get(job_id).status == "cancelled"


class Followed:
    """`emit jobs follow` in a process of its own, its output read as it is printed."""

    def __init__(self, dev: DevServer, space: str, *args: str) -> None:
        env = dict(os.environ, EMIT_URL=dev.url, EMIT_TOKEN=dev.token, EMIT_SPACE=space, PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(
            [EMIT, "jobs", "follow", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def shown(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def wait(self) -> tuple[int, str, str]:
        code = self.process.wait(timeout=PATIENCE_S)
        self.reader.join(PATIENCE_S)
        assert self.process.stderr is not None
        return code, "".join(self.lines), self.process.stderr.read()


def test_follow_shows_progress_and_lines_and_exits_0_when_the_job_completes(
    dev: DevServer, client: Emit, space: str
) -> None:
    job_id = client.jobs.create("charge-invoice", {"invoiceId": "inv_9"}).id
    follow = Followed(dev, space, job_id, "--interval", "100ms")

    @client.worker(names=["charge-invoice"], **FAST)
    def charge(job: HeldJob[dict[str, str]]) -> dict[str, str]:
        job.log("info", "card accepted")
        job.progress(40, "charging")
        eventually(lambda: follow.shown(" 40%  charging"))  # each step stays until it is seen
        job.progress(90, "sending the receipt")
        job.log("warn", "receipt mailer slow")
        eventually(lambda: follow.shown(" 90%  sending the receipt"))
        return {"chargeId": "ch_9"}

    with running(charge):
        code, out, err = follow.wait()
    assert code == 0, err
    assert " 40%  charging" in out and " 90%  sending the receipt" in out
    assert "INFO  card accepted" in out and "WARN  receipt mailer slow" in out
    assert out.index("card accepted") < out.index("receipt mailer slow") < out.index("completed:")
    assert out.rstrip().endswith('completed: {"chargeId": "ch_9"}')


def test_follow_exits_3_when_the_job_fails_and_4_when_it_is_cancelled(
    client: Emit, space: str, emit_cmd: Callable[..., Ran]
) -> None:
    failing = client.jobs.create("charge-invoice", max_attempts=3).id
    cancelled = client.jobs.create("charge-invoice", delay=timedelta(minutes=1)).id
    client.jobs.cancel(cancelled)

    @client.worker(names=["charge-invoice"], **FAST)
    def charge(job: HeldJob[Any]) -> None:
        raise emit.Unrecoverable("card declined")

    with running(charge):
        followed = emit_cmd(space, "jobs", "follow", failing, "--interval", "100ms")
    assert followed.returncode == 3
    assert "failed: card declined" in followed.stdout
    assert emit_cmd(space, "jobs", "follow", cancelled).returncode == 4


def test_follow_exits_5_when_an_at_most_once_job_stalls(
    client: Emit, space: str, emit_cmd: Callable[..., Ran]
) -> None:
    """Its own code: a stalled job may or may not have run, unlike a failed one."""
    job_id = client.jobs.create("charge-once", guarantee="at_most_once").id
    [held] = client.jobs.claim(count=1, names=["charge-once"], lease=1)
    assert held.guarantee == "at_most_once"
    eventually(lambda: client.jobs.get(job_id).status == "stalled")  # the clock, once the lease ends
    followed = emit_cmd(space, "jobs", "follow", job_id)
    assert followed.returncode == 5
    assert "stalled: lease expired" in followed.stdout
    assert [j.id for j in client.jobs.list(status="stalled")] == [job_id]


def test_follow_json_streams_a_json_line_per_change(
    client: Emit, space: str, emit_cmd: Callable[..., Ran]
) -> None:
    job_id = client.jobs.create("n").id
    [held] = client.jobs.claim(count=1, names=["n"])
    me = {"id": held.id, "attempt": held.attempt}
    client.jobs.report([me | {"lines": [{"level": "INFO", "message": "hi"}], "complete": {"result": 1}}])

    followed = emit_cmd(space, "jobs", "follow", job_id, "--json")
    updates = [json.loads(line) for line in followed.stdout.splitlines()]
    assert followed.returncode == 0
    assert updates[0]["line"]["message"] == "hi"
    assert updates[-1]["job"]["status"] == "COMPLETED"


def test_tokens_create_list_and_revoke(space: str, emit_cmd: Callable[..., Ran]) -> None:
    created = emit_cmd(
        None, "tokens", "create", "--scope", "work", "--scope", "read", "--space", space, "--json"
    )
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)
    assert token["token"].startswith("emit_") and token["spaces"] == [space]

    human = emit_cmd(None, "tokens", "create", "--scope", "read", "--name", "shown once")
    assert human.stdout.startswith("emit_") and "shown only once" in human.stderr

    listed = emit_cmd(None, "tokens", "list")
    assert token["id"] in listed.stdout and "shown once" in listed.stdout
    assert emit_cmd(None, "tokens", "revoke", token["id"]).stdout.strip() == f"revoked {token['id']}"
    gone = emit_cmd(None, "tokens", "revoke", token["id"])
    assert gone.returncode == 1 and "NotFound" in gone.stderr


def test_usage_and_configuration_errors_say_what_is_missing(emit_cmd: Callable[..., Ran]) -> None:
    no_space = emit_cmd(None, "jobs", "get", "01M3QSGN0103P7EGVBX9D5NTSN")
    assert no_space.returncode == 2 and "EMIT_SPACE" in no_space.stderr
    bad_payload = emit_cmd("s", "jobs", "create", "n", "not json")
    assert bad_payload.returncode == 2 and "payload: not JSON" in bad_payload.stderr
    assert emit_cmd("s", "jobs").returncode == 2


def test_emit_dev_still_starts_the_local_service(dev: DevServer) -> None:
    helped = run(dev, None, "dev", "--help")
    assert helped.returncode == 0 and "--dynamodb-endpoint" in helped.stdout


def test_emit_dev_says_where_it_runs_when_the_service_is_not_installed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "devserver.cli", None)  # as in an environment with only the SDK
    assert emit_cli.main(["dev", "--port", "1"]) == 2
    said = capsys.readouterr().err
    assert "emit-service[local]" in said and "make dev" in said


def test_names_policy_set_pause_resume_reset_and_diagnostics(
    client: Emit, space: str, emit_cmd: Callable[..., Ran]
) -> None:
    created = emit_cmd(
        space, "jobs", "create", "mail", "--priority", "7", "--concurrency-key", "acme", "--json"
    )
    assert created.returncode == 0, created.stderr
    job = client.jobs.get(json.loads(created.stdout)["id"])
    assert job.priority == 7 and job.concurrency_key == "acme"

    shown = emit_cmd(space, "names", "policy", "mail")
    assert shown.returncode == 0 and "paused" in shown.stdout and "space default" in shown.stdout
    changed = emit_cmd(space, "names", "set", "mail", "--concurrency", "3", "--rate", "10/1s", "--json")
    assert changed.returncode == 0, changed.stderr
    assert json.loads(changed.stdout)["rate"] == {"tokens": 10, "intervalMs": 1000}
    unlimited = emit_cmd(
        space, "names", "set", "mail", "--concurrency", "none", "--aging-interval", "none", "--json"
    )
    policy = json.loads(unlimited.stdout)
    assert policy["concurrency"] is None and policy["agingIntervalMs"] is None
    assert policy["overridden"] == ["concurrency", "rate", "agingIntervalMs"]
    assert emit_cmd(space, "names", "set", "mail").returncode == 2, "nothing to set"
    assert emit_cmd(space, "names", "set", "mail", "--rate", "ten").returncode == 2

    assert emit_cmd(space, "names", "pause", "mail").returncode == 0
    assert client.jobs.claim(count=1, names=["mail"]) == []
    diagnostics = emit_cmd(space, "names", "diagnostics")
    assert diagnostics.returncode == 0
    assert "mail" in diagnostics.stdout and "paused" in diagnostics.stdout
    assert json.loads(emit_cmd(space, "names", "diagnostics", "--json").stdout)[0]["waitingOn"] == ["PAUSED"]
    assert emit_cmd(space, "names", "resume", "mail").returncode == 0
    assert len(client.jobs.claim(count=1, names=["mail"])) == 1
    reset = emit_cmd(space, "names", "reset", "mail", "--json")
    assert json.loads(reset.stdout)["overridden"] == []
    refused = emit_cmd(space, "names", "set", "mail", "--concurrency", "0")
    assert refused.returncode == 1 and "concurrency: must be at least 1" in refused.stderr


def test_jobs_list_pages_by_cursor_and_all_follows_every_page(
    client: Emit, space: str, emit_cmd: Callable[..., Ran]
) -> None:
    made = [client.jobs.create("page-me", {"n": n}).id for n in range(5)]
    newest_first = [j.id for j in client.jobs.list()]
    assert sorted(newest_first) == sorted(made)

    first = emit_cmd(space, "jobs", "list", "--limit", "2", "--json")
    assert first.returncode == 0, first.stderr
    assert [j["id"] for j in json.loads(first.stdout)] == newest_first[:2]
    [cursor] = re.findall(r"--cursor (\S+)", first.stderr)
    second = emit_cmd(space, "jobs", "list", "--limit", "2", "--cursor", cursor, "--json")
    assert [j["id"] for j in json.loads(second.stdout)] == newest_first[2:4]

    every = emit_cmd(space, "jobs", "list", "--limit", "2", "--all", "--json")
    assert every.returncode == 0, every.stderr
    assert [j["id"] for j in json.loads(every.stdout)] == newest_first, "three pages, in order"
    assert "--cursor" not in every.stderr
    shown = emit_cmd(space, "jobs", "list", "--all", "--limit", "2", "--name", "page-me")
    assert shown.stdout.splitlines()[0].split() == ["ID", "STATUS", "ATTEMPT", "PROGRESS", "CREATED", "NAME"]
    assert len(shown.stdout.splitlines()) == 1 + 5
    assert " ago)" in shown.stdout or "(just now)" in shown.stdout  # local time, and how long ago


def test_colour_on_a_terminal_and_never_with_no_color_or_json(
    client: Emit, space: str, emit_cmd: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    client.jobs.create("paint")
    assert "\x1b[" not in emit_cmd(space, "jobs", "list").stdout  # captured: not a terminal
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = emit_cmd(space, "jobs", "list").stdout
    assert "\x1b[1mID" in coloured and "\x1b[33mpending" in coloured
    assert "\x1b[" not in emit_cmd(space, "jobs", "list", "--json").stdout
    assert "\x1b[" not in emit_cmd(space, "jobs", "list", "--no-color").stdout
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in emit_cmd(space, "jobs", "list").stdout
    assert "\x1b[33mpending" in emit_cmd(space, "jobs", "list", "--color").stdout


def test_jobs_create_takes_durations_and_times_with_units(
    client: Emit, space: str, emit_cmd: Callable[..., Ran]
) -> None:
    delayed = emit_cmd(space, "jobs", "create", "later", "--delay", "1h30m", "--timeout", "45s", "--json")
    assert delayed.returncode == 0, delayed.stderr
    job = client.jobs.get(json.loads(delayed.stdout)["id"])
    assert job.ready_at_ms is not None
    assert job.ready_at_ms - job.created_at_ms == pytest.approx(90 * 60_000, abs=2000)
    assert job.timeout == timedelta(seconds=45)

    at = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    local = at.astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat()
    scheduled = emit_cmd(space, "jobs", "create", "later", "--run-at", local, "--expires-in", "2d", "--json")
    assert scheduled.returncode == 0, scheduled.stderr
    job = client.jobs.get(json.loads(scheduled.stdout)["id"])
    assert job.ready_at_ms == round(at.timestamp() * 1000)
    shown = emit_cmd(space, "jobs", "get", job.id)
    assert "ready at:" in shown.stdout
    assert "(in 23 h)" in shown.stdout or "(in 1 day)" in shown.stdout


def test_jobs_get_shows_an_errors_type_in_its_table_and_its_traceback_below(
    client: Emit, space: str, emit_cmd: Callable[..., Ran]
) -> None:
    created = client.jobs.create("crashes", max_attempts=1)
    [held] = client.jobs.claim(count=1, names=["crashes"])
    error = "\n".join(
        [
            "ValueError: bad width 0",
            "Traceback (most recent call last):",
            '  File "w.py", line 3, in h',
            "    raise ValueError",
        ]
    )
    client.jobs.report([{"id": held.id, "attempt": held.attempt, "fail": {"error": error}}])
    shown = emit_cmd(space, "jobs", "get", created.id).stdout.splitlines()
    [row] = [line for line in shown if line.startswith("error:")]
    assert row.split(None, 1)[1] == "ValueError: bad width 0"
    assert shown[-3:] == [
        "  Traceback (most recent call last):",
        '    File "w.py", line 3, in h',
        "      raise ValueError",
    ]
