"""The `emit` command's edges without a server: its version, when it colours, what its
duration and time flags take, its exit statuses as `--help` lists them, the message for
missing configuration, how it shows times, and the README's command lines parsing."""

from __future__ import annotations

import argparse
import io
import re
import shlex
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import emit
import pytest
from emit import cli as emit_cli
from emit import cli_types
from emit.display import Style, ago, colour_wanted, table, when

ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = emit_cli.main(list(args))
    except SystemExit as exit_:  # argparse: --version, --help, usage errors
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_version_prints_the_sdks_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"emit {emit.__version__}"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "json_output", "forced", "environ", "wanted"),
    [
        (Terminal(), False, None, {}, True),
        (io.StringIO(), False, None, {}, False),  # a pipe, a file, a CI log
        (Terminal(), False, None, {"NO_COLOR": "1"}, False),
        (Terminal(), False, None, {"NO_COLOR": "anything"}, False),
        (Terminal(), False, None, {"NO_COLOR": ""}, True),  # no-color.org: set and not empty
        (Terminal(), False, None, {"TERM": "dumb"}, False),
        (Terminal(), True, None, {}, False),  # --json is for scripts
        (Terminal(), True, True, {}, False),  # even with --color
        (io.StringIO(), False, True, {"NO_COLOR": "1"}, True),  # --color wins over the rest
        (Terminal(), False, False, {}, False),  # --no-color
    ],
)
def test_colour_only_for_a_person_at_a_terminal(
    stream: io.StringIO, json_output: bool, forced: bool | None, environ: dict[str, str], wanted: bool
) -> None:
    assert colour_wanted(stream, json_output=json_output, forced=forced, environ=environ) is wanted


def test_a_coloured_table_keeps_its_columns_and_colours_the_status() -> None:
    rows = [("ID", "STATUS", "NAME"), ("j1", "completed", "mail"), ("j2", "failed", "charge")]
    plain, coloured = io.StringIO(), io.StringIO()
    table(rows, plain)
    table(rows, coloured, Style(True))
    assert "\x1b" not in plain.getvalue()
    out = coloured.getvalue()
    assert "\x1b[1mID" in out  # the header bold
    assert "\x1b[32mcompleted" in out and "\x1b[31mfailed" in out
    assert re.sub(r"\x1b\[[0-9;]*m", "", out) == plain.getvalue()  # the same text, aligned the same


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("500ms", timedelta(milliseconds=500)),
        ("10s", timedelta(seconds=10)),
        ("1.5s", timedelta(seconds=1.5)),
        ("5m", timedelta(minutes=5)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("1h30m", timedelta(minutes=90)),
        ("0", timedelta(0)),
        (" 10S ", timedelta(seconds=10)),
    ],
)
def test_durations_take_a_unit(text: str, span: timedelta) -> None:
    assert cli_types.duration(text) == span


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("10", "no unit"),
        ("ten", "not a duration"),
        ("5x", "not a duration"),
        ("-5s", "not a duration"),
        ("", "not a duration"),
    ],
)
def test_a_bad_duration_is_refused(text: str, said: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=said):
        cli_types.duration(text)


@pytest.mark.parametrize(
    "args",
    [
        ("jobs", "create", "n", "--delay", "10"),
        ("jobs", "create", "n", "--timeout", "soon"),
        ("jobs", "create", "n", "--backoff", "5"),
        ("jobs", "create", "n", "--expires-in", "1y"),
        ("jobs", "create", "n", "--room-wait", "60"),
        ("jobs", "follow", "id", "--interval", "0.1"),
        ("names", "set", "n", "--aging-interval", "30"),
        ("schedules", "trigger", "id", "--room-wait", "x"),
    ],
)
def test_a_bad_duration_flag_is_a_usage_error_naming_the_flag(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    code, _, err = run(capsys, *args)
    flag = next(a for a in args if a.startswith("--"))
    assert code == emit_cli.EXIT_USAGE
    assert f"argument {flag}:" in err and ("unit" in err or "duration" in err)


def test_instants_are_iso_8601_with_a_timezone_or_from_now() -> None:
    assert cli_types.instant("2026-12-02T17:00:00+01:00") == datetime(2026, 12, 2, 16, 0, tzinfo=UTC)
    assert cli_types.instant("2026-12-02T16:00:00Z") == datetime(2026, 12, 2, 16, 0, tzinfo=UTC)
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    assert cli_types.instant("+10m", now=now) == now + timedelta(minutes=10)
    with pytest.raises(argparse.ArgumentTypeError, match="no timezone"):
        cli_types.instant("2026-12-02T17:00:00")
    with pytest.raises(argparse.ArgumentTypeError, match="ISO 8601"):
        cli_types.instant("tomorrow")


def test_a_naive_run_at_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "jobs", "create", "n", "--run-at", "2026-12-02T17:00:00")
    assert code == 2 and "argument --run-at:" in err and "no timezone" in err
    code, _, err = run(capsys, "jobs", "create", "n", "--delay", "1m", "--run-at", "+1m")
    assert code == 2 and "not allowed with argument" in err


def test_rates_take_a_duration() -> None:
    rate = cli_types.rate("100/1m")
    assert rate is not None and (rate.tokens, rate.interval) == (100, timedelta(minutes=1))
    assert cli_types.rate("none") is None
    for bad in ("10/1000", "ten/1s", "10"):
        with pytest.raises(argparse.ArgumentTypeError, match="TOKENS/DURATION"):
            cli_types.rate(bad)


def test_the_old_ms_flags_say_what_replaced_them(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "jobs", "create", "n", "--delay-ms", "5000")
    assert code == 2 and "--delay-ms is gone" in err and "--delay 10s" in err
    code, _, err = run(capsys, "names", "set", "n", "--aging-interval-ms=none")
    assert code == 2 and "--aging-interval 30s" in err


def test_help_lists_every_exit_status_the_code_uses(capsys: pytest.CaptureFixture[str]) -> None:
    constants = {name: value for name, value in vars(emit_cli).items() if name.startswith("EXIT_")}
    constants.pop("EXIT_CODES")
    assert set(constants.values()) == set(emit_cli.EXIT_CODES)
    assert set(emit_cli.FINISHED_EXIT.values()) <= set(emit_cli.EXIT_CODES)
    assert emit_cli.FINISHED_EXIT["stalled"] == 5 and "stalled" in emit_cli.EXIT_CODES[5]
    # No status returned as a bare number: each is one of the constants listed.
    source = Path(emit_cli.__file__).read_text()
    assert not re.findall(r"return \d+|sys\.exit\(\d+\)", source)

    for args in (("--help",), ("jobs", "follow", "--help")):
        code, out, _ = run(capsys, *args)
        assert code == 0
        listed = {int(n) for n in re.findall(r"^\s+(\d+)  ", out.split("exit status:")[1], re.MULTILINE)}
        assert listed == set(emit_cli.EXIT_CODES), args


@pytest.fixture
def unconfigured(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("EMIT_URL", "EMIT_TOKEN", "EMIT_SPACE"):
        monkeypatch.delenv(variable, raising=False)


@pytest.mark.usefixtures("unconfigured")
def test_missing_configuration_names_the_flag_and_the_variable(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "jobs", "follow", "01M3QSGN0103P7EGVBX9D5NTSN")
    assert code == emit_cli.EXIT_USAGE
    assert err.strip() == "emit: no URL: give --url or set EMIT_URL (`emit dev`: http://127.0.0.1:8787)"
    code, _, err = run(capsys, "jobs", "list", "--url", "http://127.0.0.1:1")
    assert code == 2 and err.strip() == "emit: no token: give --token or set EMIT_TOKEN"
    code, _, err = run(capsys, "jobs", "list", "--url", "http://127.0.0.1:1", "--token", "t")
    assert code == 2 and err.strip() == "emit: no space: give --space or set EMIT_SPACE"
    code, _, err = run(capsys, "tokens", "list")  # no space needed, the URL still is
    assert code == 2 and "EMIT_URL" in err


@pytest.fixture
def paris(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("paris")
def test_times_are_local_with_their_zone_and_how_long_ago() -> None:
    at = datetime(2026, 12, 2, 16, 4, 5, tzinfo=UTC)
    ms = round(at.timestamp() * 1000)
    assert when(ms, now_ms=ms + 3 * 60_000) == "2026-12-02 17:04:05 CET (3 min ago)"
    summer = round(datetime(2026, 7, 1, 12, tzinfo=UTC).timestamp() * 1000)
    assert when(summer, now_ms=summer).startswith("2026-07-01 14:00:00 CEST")
    assert ago(ms, now_ms=ms + 2000) == "just now"
    assert ago(ms, now_ms=ms - 2 * 3_600_000 - 5_000) == "in 2 h"
    assert ago(ms, now_ms=ms + 3 * 86_400_000 + 3_600_000) == "3 days ago"
    assert when(None) == "-"


def _command_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("emit ", ".venv/bin/emit "))]


def test_the_readmes_command_lines_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each `emit ...` line of the README's and the examples' shell blocks is valid as written."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### The `emit` command", 1)[1].split("\n### ", 1)[0]
    examples = (ROOT / "examples" / "README.md").read_text().replace("<id>", "01M3QSGN0103P7EGVBX9D5NTSN")
    lines = _command_lines(section) + _command_lines(examples)
    assert len(lines) > 15
    parser = emit_cli._parser()
    for line in lines:
        argv = shlex.split(line, comments=True)[1:]
        if argv[:1] == ["dev"] or argv == ["--version"]:
            continue
        assert emit_cli._removed_flag(argv) is None, line
        args = parser.parse_args(argv)
        assert callable(args.command), line
