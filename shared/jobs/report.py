"""Reporting on jobs: a worker's progress, lines, events and the attempt's end.

Each report applies on its own, as one conditional write of its transition on the
attempt it speaks for (`shared.jobs.report_decision` decides which, or why not), with
the report's progress and counts in the same write; its lines and event are journaled
after. A value too large for the job item is stored outside it first, its place named
on the job, so a report stopped at any write leaves nothing unaccounted for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from shared.errors import InvalidArgument
from shared.job import Job, Progress
from shared.jobs.context import Context
from shared.jobs.deadlines import cancel_found
from shared.jobs.outcomes import Applied, Outcome, Refused
from shared.jobs.report_decision import REASONS, Rejected, decide, refusal_of, rejected
from shared.machine import Transition, before_deadline
from shared.machine import keep as keep_transition
from shared.observability import logger
from shared.schema import Report, dump_json
from shared.settings import Settings
from shared.store.port import JobConflict, Packed, ReportExtras


def report(ctx: Context, space: str, reports: Sequence[Report | InvalidArgument]) -> list[Outcome]:
    """Apply each report on its own: one outcome per report, in order. A report that
    broke a rule (`schema.reports_in` says which) is answered `INVALID`, the rest apply."""
    settings = ctx.settings.get(space)
    outcomes: list[Outcome] = []
    for p in reports:
        if isinstance(p, InvalidArgument):
            outcomes.append(Refused("INVALID", p.message))
            continue
        outcomes.append(_report_one(ctx, space, p, settings))
    return outcomes


def _report_one(ctx: Context, space: str, report: Report, settings: Settings) -> Outcome:
    """The report's outcome (a count the job holds is let go by its transition's own write).

    A value too large for the job item (a result, an error) takes three writes, each
    safe to stop after: its place is named on the job while this attempt runs (nothing
    is written for a report that cannot count), then the value, then the transition
    that points at it. A report refused at the last step removes its own value; if it
    is killed first, retention removes it, as the job names it."""
    now = ctx.clock.now_ms()
    try:
        decision = decide(ctx, space, report, settings, now)
        transition = before_deadline(decision.transition, now_ms=now)
        outside = decision.outside
        if outside is not None:
            _name_place(ctx, space, report, outside, now)
    except Rejected as rejected:
        return _rejection(ctx, space, rejected, now)
    if outside is not None:
        ctx.jobs.keep_values([outside])
    try:
        job, with_event, events_full = _apply_report(
            ctx, space, report, transition, decision.value, settings=settings, now=now, read=decision.read
        )
    except Rejected as rejected:
        if outside is not None:
            _discard(ctx, space, report.id, outside)
        return _rejection(ctx, space, rejected, now)
    _journal(ctx, space, report, job, now, with_event=with_event)
    if events_full:
        message = REASONS["TOO_MANY_EVENTS"].format(max=settings.max_events)
        return Refused("TOO_MANY_EVENTS", message)
    return Applied(job.status, job.traceparent)


def _apply_report(
    ctx: Context,
    space: str,
    report: Report,
    transition: Transition,
    value: Packed | None,
    *,
    settings: Settings,
    now: int,
    read: Job | None,
) -> tuple[Job, bool, bool]:
    """The job after the report's write, whether its event was kept, whether the job's
    events were full; raises Rejected when the report cannot count. `read`: the job as
    the decision read it, if it did (the holds its write lets go)."""
    with_event = report.event is not None
    events_full = False
    # Where jobs are likely to hold a count, the job is read first (a read is cheaper than
    # the write refused for holding one that would find it out).
    held = read
    if held is None and transition.lets_go and _counted(ctx, space, settings):
        held = ctx.jobs.job(space, report.id, now_ms=now)
    for _ in range(3):
        try:
            extras = _extras(report, settings.max_events, with_event=with_event)
            job = ctx.jobs.transition(space, report.id, transition, value=value, extras=extras, held=held)
            return job, with_event, events_full
        except JobConflict as failed:
            reason = refusal_of(failed.current, report, now)
            events = failed.current.event_count if failed.current is not None else 0
            if reason is None and with_event and events >= settings.max_events:
                # The rest of the report is still applied, without its event.
                with_event, events_full = False, True
                continue
            if reason is None and transition.name == "touch":
                # The lease already ends later than asked: a lease is never shortened.
                transition = before_deadline(keep_transition(attempt=report.attempt), now_ms=now)
                continue
            raise rejected(reason or "RACE", report, failed.current) from None
    raise rejected("RACE", report)


def _counted(ctx: Context, space: str, settings: Settings) -> bool:
    """Whether the space's jobs may hold a count: it has a cap, or a name has a concurrency."""
    if settings.max_in_flight is not None:
        return True
    policies = ctx.policies.space(space)
    return any(policies.get(n).concurrency is not None for n in ("", *policies.own))


def _name_place(ctx: Context, space: str, report: Report, value: Packed, now: int) -> None:
    """Name `value`'s place on the job, only while the report's attempt is running."""
    try:
        ctx.jobs.transition(
            space,
            report.id,
            before_deadline(keep_transition(attempt=report.attempt), now_ms=now),
            place=value,
        )
    except JobConflict as failed:
        reason = refusal_of(failed.current, report, now) or "RACE"
        raise rejected(reason, report, failed.current) from None


def _discard(ctx: Context, space: str, job_id: str, value: Packed) -> None:
    try:
        ctx.jobs.discard_values(space, job_id, [value])
    except Exception:  # the job names the place: retention removes it later
        logger.warning("could not remove a refused report's value", extra={"job": job_id})


def _rejection(ctx: Context, space: str, rejected: Rejected, now: int) -> Refused:
    """A refused report's outcome; a job found past its deadline is cancelled first (the
    clock would have soon), so the worker is told it has finished, and it has."""
    if rejected.expired is not None:
        cancel_found(ctx, space, rejected.expired, now=now)
    return Refused(rejected.reason, rejected.message)


def _journal(ctx: Context, space: str, report: Report, job: Job, now: int, *, with_event: bool) -> None:
    """The report's lines and event, numbered from the job's counts after its write (which
    counted them)."""
    if report.lines:
        first = job.line_count - len(report.lines)
        lines = [line.model_dump(exclude_none=True) | {"atMs": now} for line in report.lines]
        for line in lines:
            if "metadata" in line:
                line["metadata"] = json.dumps(line["metadata"], separators=(",", ":"))
        ctx.journal.append_lines(space, report.id, first, lines)
    if with_event:
        ctx.journal.put_event(space, report.id, job.event_count - 1, dump_json(report.event).decode(), now)


def _extras(report: Report, max_events: int, *, with_event: bool) -> ReportExtras:
    """What a report adds to its transition's write: progress, line and event counts (an
    event only while the job's events are not full)."""
    progress = report.progress
    return ReportExtras(
        progress=Progress(progress.percent, progress.message) if progress is not None else None,
        lines=len(report.lines),
        event=with_event,
        max_events=max_events,
    )
