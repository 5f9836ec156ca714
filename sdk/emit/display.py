"""How the `emit` command shows jobs, lines, schedules and tokens to a person (`--json` is for scripts).

`FollowView` draws a job's progress bar in place on a terminal, with its log lines
scrolling above it; when the output is not a terminal (a pipe, a CI log) it writes a
line per change instead, since carriage returns would only garble it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, TextIO

from emit.models import Job, Line, Token
from emit.names import NameDiagnostics, Policy, Rate
from emit.schedules import Schedule

BAR_WIDTH = 24
_CLEAR = "\r\x1b[2K"


def when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    """Columns padded to their widest cell; the last column is left ragged."""
    if not rows:
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)] + [row[-1]]
        print("  ".join(cells).rstrip(), file=out)


def job_details(job: Job, out: TextIO) -> None:
    progress = job.progress
    rows: list[tuple[str, str]] = [
        ("id", job.id),
        ("name", job.name),
        ("status", f"{job.status} (attempt {job.attempt}, {job.failures} of {job.max_attempts} failed)"),
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
    if job.error is not None:
        rows.append(("error", job.error))
    table([(f"{label}:", value) for label, value in rows], out)


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


def schedule_details(schedule: Schedule, out: TextIO) -> None:
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
    table([(f"{label}:" if label else "", value) for label, value in rows], out)


class FollowView:
    """A job's progress bar and log lines, as they arrive."""

    def __init__(self, out: TextIO, *, live: bool) -> None:
        self.out = out
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
        text = f"{datetime.fromtimestamp(line.at_ms / 1000):%H:%M:%S} {line.level.upper():<5} {line.message}"
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
        if job.status == "completed":
            self.out.write(f"completed: {compact(job.result)}\n")
        elif job.status == "failed":
            self.out.write(f"failed: {job.error or 'no error given'}\n")
        elif job.status == "stalled":
            self.out.write(f"stalled: {job.error or 'no error given'} (at most once: not retried)\n")
        else:
            self.out.write("cancelled\n")


def _limit(value: int | None) -> str:
    return "no limit" if value is None else str(value)


def _rate(rate: Rate | None) -> str:
    return "no limit" if rate is None else f"{rate.tokens} per {_ms(rate.interval)} ms"


def _ms(span: timedelta) -> int:
    return round(span.total_seconds() * 1000)


def policy_details(policy: Policy, out: TextIO) -> None:
    """Each field of the policy in force, and whether the name sets it or the space does."""
    aging = None if policy.aging_interval is None else _ms(policy.aging_interval)
    fields: list[tuple[str, str, str]] = [
        ("paused", "paused", "yes" if policy.paused else "no"),
        ("concurrency", "concurrency", _limit(policy.concurrency)),
        ("rate", "rate", _rate(policy.rate)),
        ("per-key concurrency", "per_key_concurrency", _limit(policy.per_key_concurrency)),
        ("per-key rate", "per_key_rate", _rate(policy.per_key_rate)),
        ("aging interval", "aging_interval", "strict priority" if aging is None else f"{aging} ms"),
    ]
    rows = [("name", policy.name, "")]
    rows += [
        (label, value, "own" if field in policy.overridden else "space default")
        for label, field, value in fields
    ]
    table(rows, out)


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
