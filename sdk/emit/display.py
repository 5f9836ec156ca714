"""How the `emit` command shows jobs, lines, schedules and tokens to a person (`--json` is for scripts).

Times are shown as the dashboard shows them: in local time with the zone's name, and how
long ago beside (`2026-12-02 17:04:05 CET (3 min ago)`); `--json` keeps the API's Unix ms.
On a terminal, statuses are coloured and headers bold (`Style`); `colour_wanted` says when.

`FollowView` draws a job's progress bar in place on a terminal, with its log lines
scrolling above it; when the output is not a terminal (a pipe, a CI log) it writes a
line per change instead, since carriage returns would only garble it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TextIO

from emit.models import Job, Line, Token
from emit.names import NameDiagnostics, Policy, Rate
from emit.schedules import Schedule

BAR_WIDTH = 24
_CLEAR = "\r\x1b[2K"


def when(ms: int | None, *, now_ms: int | None = None) -> str:
    """Local time and zone, and how long ago: `2026-12-02 17:04:05 CET (3 min ago)`."""
    if ms is None:
        return "-"
    local = datetime.fromtimestamp(ms / 1000).astimezone()
    zone = local.strftime("%Z") or local.strftime("%z")
    return f"{local:%Y-%m-%d %H:%M:%S} {zone} ({ago(ms, now_ms=now_ms)})"


def span(ms: int) -> str:
    """A length of time in the largest units that say it (`850 ms`, `3 min 5 s`, `2 days 4 h`),
    as the dashboard writes it."""
    left = max(0, ms)
    if left < 1000:
        return f"{left} ms"
    parts: list[str] = []
    for unit, size in (("day", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        count, left = divmod(left, size)
        if count and len(parts) < 2:
            parts.append(f"{count} day{'' if count == 1 else 's'}" if unit == "day" else f"{count} {unit}")
        elif parts:
            break
    return " ".join(parts)


def ago(ms: int, *, now_ms: int | None = None) -> str:
    """`just now`, `3 min ago` or `in 2 h`: the first unit only, as the dashboard says it."""
    delta = (round(time.time() * 1000) if now_ms is None else now_ms) - ms
    if abs(delta) < 5000:
        return "just now"
    shown = " ".join(span(abs(delta)).split(" ")[:2])
    return f"{shown} ago" if delta > 0 else f"in {shown}"


# -- colour ---------------------------------------------------------------------------

_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36"}
STATUS_COLOURS = {
    "completed": "green",
    "failed": "red",
    "stalled": "red",
    "running": "cyan",
    "pending": "yellow",
    "cancelled": "dim",
}


def colour_wanted(
    stream: TextIO, *, json_output: bool, forced: bool | None, environ: Mapping[str, str] | None = None
) -> bool:
    """Colour only for a person: never with `--json`; else as `--color`/`--no-color` say;
    else not with `NO_COLOR` set to anything (no-color.org) or `TERM=dumb`; else on a terminal."""
    environ = os.environ if environ is None else environ
    if json_output:
        return False
    if forced is not None:
        return forced
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Style:
    """ANSI colour and weight when `enabled`; the text as it is otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def paint(self, text: str, *names: str) -> str:
        codes = [_SGR[n] for n in names if n in _SGR]
        if not self.enabled or not codes or not text:
            return text
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"

    def bold(self, text: str) -> str:
        return self.paint(text, "bold")

    def status(self, text: str, status: str | None = None) -> str:
        """`text` in the colour of `status` (by default, of the text itself: `failed`)."""
        key = (status if status is not None else text.strip()).lower()
        return self.paint(text, STATUS_COLOURS.get(key, ""))


PLAIN = Style(False)
_LEVEL_COLOURS = {"warn": "yellow", "warning": "yellow", "error": "red", "debug": "dim"}


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def table(
    rows: Sequence[Sequence[str]],
    out: TextIO,
    style: Style = PLAIN,
    *,
    header: bool = True,
    labels: bool = False,
) -> None:
    """Columns padded to their widest cell; the last column is left ragged. With `style`
    on, the header row (or with `labels`, the first column) is bold, and a column headed
    STATUS is coloured by status."""
    if not rows:
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    status_column = next((i for i, cell in enumerate(rows[0]) if cell == "STATUS"), None) if header else None
    for n, row in enumerate(rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)] + [row[-1]]
        if n == 0 and header:
            cells = [style.bold(cell) for cell in cells]
        elif status_column is not None:
            cells[status_column] = style.status(cells[status_column], row[status_column])
        if labels:
            cells[0] = style.bold(cells[0])
        print("  ".join(cells).rstrip(), file=out)


def job_details(job: Job, out: TextIO, style: Style = PLAIN) -> None:
    progress = job.progress
    rows: list[tuple[str, str]] = [
        ("id", job.id),
        ("name", job.name),
        (
            "status",
            f"{style.status(job.status)} "
            f"(attempt {job.attempt}, {job.failures} of {job.max_attempts} failed)",
        ),
        ("progress", f"{progress.percent:g}% {progress.message or ''}".rstrip() if progress else "-"),
        ("key", job.key or "-"),
        ("created", when(job.created_at_ms)),
    ]
    if job.retry_of is not None:
        rows.append(("retry of", job.retry_of))
    if job.schedule is not None:
        rows.append(("schedule", f"{job.schedule.id} (fire time {when(job.schedule.at_ms)})"))
    if job.finished_at_ms is not None:
        rows.append(("finished", when(job.finished_at_ms)))
    if job.status == "pending" and job.ready_at_ms is not None:
        rows.append(("ready at", when(job.ready_at_ms)))
    rows.append(("lines", f"{job.line_count}, events {job.event_count}"))
    if "payload" in job.raw:
        rows.append(("payload", compact(job.payload)))
    if job.status == "completed":
        rows.append(("result", compact(job.result)))
    first, _, rest = (job.error or "").partition("\n")
    if job.error is not None:
        rows.append(("error", first))  # "Type: message"; its traceback follows the table
    table([(f"{label}:", value) for label, value in rows], out, style, header=False, labels=True)
    if rest:
        out.write("".join(f"  {line}\n" for line in rest.splitlines()))


def job_rows(jobs: Sequence[Job]) -> list[tuple[str, ...]]:
    header = ("ID", "STATUS", "ATTEMPT", "PROGRESS", "CREATED", "NAME")
    rows = [
        (
            j.id,
            j.status,
            str(j.attempt),
            f"{j.progress.percent:g}%" if j.progress else "-",
            when(j.created_at_ms),
            j.name,
        )
        for j in jobs
    ]
    return [header, *rows]


def token_rows(tokens: Sequence[Token]) -> list[tuple[str, ...]]:
    header = ("ID", "SCOPES", "SPACES", "CREATED", "NAME")
    rows = [
        (
            t.id,
            ",".join(t.scopes),
            ",".join(t.spaces) if t.spaces is not None else "*",
            when(t.created_at_ms),
            t.name or "",
        )
        for t in tokens
    ]
    return [header, *rows]


def _last_run(schedule: Schedule) -> str:
    run = schedule.last_run
    return f"{when(run.at_ms)} {run.job_id}" if run else "-"


def schedule_rows(schedules: Sequence[Schedule]) -> list[tuple[str, ...]]:
    """One row each: the next fire time only (`schedules get` shows the next five)."""
    header = ("ID", "CRON", "TIMEZONE", "JOB", "STATE", "NEXT RUN", "LAST RUN")
    rows = [
        (
            s.id,
            s.cron,
            s.timezone,
            s.job.name,
            "paused" if s.paused else "active",
            when(s.next_runs_at_ms[0]) if s.next_runs_at_ms else "-",
            _last_run(s),
        )
        for s in schedules
    ]
    return [header, *rows]


def schedule_details(schedule: Schedule, out: TextIO, style: Style = PLAIN) -> None:
    job = {k: v for k, v in (schedule.raw.get("job") or schedule.job.to_api()).items() if k != "name"}
    rows: list[tuple[str, str]] = [
        ("id", schedule.id),
        ("cron", f"{schedule.cron} ({schedule.timezone})"),
        ("state", "paused" if schedule.paused else "active"),
        ("overlap", schedule.overlap),
        ("job", f"{schedule.job.name} {compact(job)}"),
        ("created", when(schedule.created_at_ms)),
        ("updated", when(schedule.updated_at_ms)),
        ("last run", _last_run(schedule)),
    ]
    times = schedule.next_runs_at_ms
    rows += [("next runs" if i == 0 else "", when(ms)) for i, ms in enumerate(times)] or [("next runs", "-")]
    table(
        [(f"{label}:" if label else "", value) for label, value in rows],
        out,
        style,
        header=False,
        labels=True,
    )


class FollowView:
    """A job's progress bar and log lines, as they arrive."""

    def __init__(self, out: TextIO, *, live: bool, style: Style = PLAIN) -> None:
        self.out = out
        self.style = style
        self.live = live
        self._status = ""
        self._finished = False
        unicode = (getattr(out, "encoding", None) or "").lower().replace("-", "") == "utf8"
        self._full, self._empty = ("█", "░") if unicode else ("#", "-")

    def job(self, job: Job) -> None:
        status = self._status_line(job)
        if self.live:  # a line wider than the terminal wraps, and `\r` would redraw only its tail
            status = status[: max(shutil.get_terminal_size().columns - 1, 20)]
        if status == self._status and not job.finished:
            return
        self._status = status
        self._finished = job.finished
        if self.live:
            self.out.write(_CLEAR + status + ("\n" if job.finished else ""))
        else:
            self.out.write(status + "\n")
        if job.finished:
            self._outcome(job)
        self.out.flush()

    def line(self, line: Line) -> None:
        level = self.style.paint(f"{line.level.upper():<5}", _LEVEL_COLOURS.get(line.level.lower(), ""))
        text = f"{datetime.fromtimestamp(line.at_ms / 1000):%H:%M:%S} {level} {line.message}"
        if self.live:
            self.out.write(_CLEAR + text + "\n" + self._status)
        else:
            self.out.write(text + "\n")
        self.out.flush()

    def close(self) -> None:
        """End an unfinished live status line, so the shell's prompt starts on its own."""
        if self.live and self._status and not self._finished:
            self.out.write("\n")
            self.out.flush()

    def _status_line(self, job: Job) -> str:
        percent = job.progress.percent if job.progress else None
        if job.status == "completed":
            percent = 100.0  # done is done, whatever the last progress said
        filled = round(BAR_WIDTH * (percent or 0) / 100)
        bar = "[" + self._full * filled + self._empty * (BAR_WIDTH - filled) + "]"
        shown = f"{percent:3.0f}%" if percent is not None else "   -"
        message = job.progress.message if job.progress and job.progress.message else ""
        state = f"{job.status}, attempt {job.attempt}" if job.attempt else job.status
        return "  ".join(part for part in (bar, shown, message, f"({state})") if part)

    def _outcome(self, job: Job) -> None:
        said = self.style.status(job.status)
        if job.status == "completed":
            self.out.write(f"{said}: {compact(job.result)}\n")
        elif job.status == "failed":
            self.out.write(f"{said}: {job.error or 'no error given'}\n")
        elif job.status == "stalled":
            self.out.write(f"{said}: {job.error or 'no error given'} (at most once: not retried)\n")
        else:
            self.out.write(f"{said}\n")


def _limit(value: int | None) -> str:
    return "no limit" if value is None else str(value)


def _rate(rate: Rate | None) -> str:
    return "no limit" if rate is None else f"{rate.tokens} per {span(_ms(rate.interval))}"


def _ms(span: timedelta) -> int:
    return round(span.total_seconds() * 1000)


def policy_details(policy: Policy, out: TextIO, style: Style = PLAIN) -> None:
    """Each field of the policy in force, and whether the name sets it or the space does."""
    aging = None if policy.aging_interval is None else _ms(policy.aging_interval)
    fields: list[tuple[str, str, str]] = [
        ("paused", "paused", "yes" if policy.paused else "no"),
        ("concurrency", "concurrency", _limit(policy.concurrency)),
        ("rate", "rate", _rate(policy.rate)),
        ("per-key concurrency", "per_key_concurrency", _limit(policy.per_key_concurrency)),
        ("per-key rate", "per_key_rate", _rate(policy.per_key_rate)),
        ("aging interval", "aging_interval", "strict priority" if aging is None else span(aging)),
    ]
    rows = [("name", policy.name, "")]
    rows += [
        (label, value, "own" if field in policy.overridden else "space default")
        for label, field, value in fields
    ]
    table(rows, out, style, header=False, labels=True)


def diagnostics_rows(names: Sequence[NameDiagnostics]) -> list[tuple[str, ...]]:
    header = ("NAME", "PENDING", "CLAIMABLE", "RUNNING", "OLDEST CLAIMABLE", "WAITING ON")
    rows = [
        (
            n.name,
            f"{n.pending}{'+' if n.capped else ''}",
            f"{n.claimable}{'+' if n.capped else ''}",
            str(n.running),
            when(n.oldest_claimable_at_ms),
            ", ".join(n.waiting_on) or "-",
        )
        for n in names
    ]
    return [header, *rows]
