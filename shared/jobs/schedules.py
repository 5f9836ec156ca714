"""Schedules: their edits, and the job each fire time makes, exactly once.

Each fire time makes one job, whatever the clock does (fires twice, two ticks at once,
late, killed between two writes):

- the job's id is made from the schedule and the fire time (`fire_id`), and its put is
  conditional on no job having that id (`create(once=...)`): a fire run again makes
  nothing more, and answers the job made;
- the schedule is then advanced past the fire time by a write conditional on the version
  it read: of two fires at once, or a fire and an edit, one advances and the other reads
  again and finds the time made;
- the timer of the next fire time is filed before the write that sets it
  (`shared.timers`), and the timer being handled stays in its book until it has been: a
  fire killed anywhere is handled again at the next tick, and goes on from where the
  schedule stands.

The items decide, never the timers: a timer left by an edit (a cron changed, a schedule
paused or deleted) finds no fire due and does nothing.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from ulid import ULID

from shared import limits, schedules
from shared.errors import InvalidArgument, NotFound
from shared.job import Fired
from shared.jobs.context import Context
from shared.jobs.create import create
from shared.schedules import CronError
from shared.schema import NAME_PATTERN, JobTemplate, NewJob, ScheduleBody, SchedulePatch, dump_json
from shared.store.port import SCHEDULE, Inserted, LastRun, Schedule, ScheduleConflict, Timer

logger = logging.getLogger(__name__)

_ID = re.compile(NAME_PATTERN)

WRITE_ATTEMPTS = 8
"""Reads and writes an edit tries while other writes of the schedule get in first."""


@dataclass
class Fires:
    """What one handling of a schedule's timer did."""

    made: int = 0
    """Jobs made (a repeat of a fire already made counts none)."""
    skipped: int = 0
    """Fire times passed over: `overlap: SKIP` with the last job unfinished, or a job that
    could no longer be made (its template refused)."""


def fire_id(schedule: Schedule, at_ms: int) -> str:
    """The id of the job `schedule` makes for fire time `at_ms`, the same on every repeat:
    a ULID whose time is the fire time and whose 80 random bits are a hash of the space,
    the schedule and its creation (a schedule deleted and made again is another)."""
    seed = f"{schedule.space}\0{schedule.id}\0{schedule.created_at_ms}\0{at_ms}"
    digest = hashlib.blake2b(seed.encode(), digest_size=10).digest()
    return str(ULID.from_int((at_ms << 80) | int.from_bytes(digest, "big")))


# -- edits ------------------------------------------------------------------


def get(ctx: Context, space: str, schedule_id: str) -> Schedule:
    found = ctx.schedules.get(space, schedule_id)
    if found is None:
        raise NotFound(f"schedule {schedule_id} not found in space {space}")
    return found


def page(ctx: Context, space: str, *, cursor: str | None, limit: int) -> tuple[list[Schedule], str | None]:
    """A page of the space's schedules by id, after `cursor` (the last id a page showed)."""
    if cursor is not None and not _ID.fullmatch(cursor):
        raise InvalidArgument("cursor: is not a cursor this API gave")
    return ctx.schedules.page(space, cursor, limit)


def put(ctx: Context, space: str, schedule_id: str, body: ScheduleBody) -> Schedule:
    """Create or replace the schedule; it keeps its creation time and its last run."""
    return _edit(ctx, space, schedule_id, lambda _: body, create_if_missing=True)


def patch(ctx: Context, space: str, schedule_id: str, changes: SchedulePatch) -> Schedule:
    """Change the fields `changes` sets; the others keep their values."""

    def merged(read: Schedule | None) -> ScheduleBody:
        assert read is not None
        sent = changes.model_fields_set
        return ScheduleBody.model_construct(
            cron=changes.cron if "cron" in sent else read.cron,
            timezone=changes.timezone if "timezone" in sent else read.timezone,
            job=changes.job if changes.job is not None else JobTemplate.model_validate(read.job),
            paused=changes.paused if "paused" in sent else read.paused,
            overlap=changes.overlap if "overlap" in sent else read.overlap,
        )

    return _edit(ctx, space, schedule_id, merged, create_if_missing=False)


def delete(ctx: Context, space: str, schedule_id: str) -> None:
    """Delete the schedule, then its listing entry. A delete killed between the two is
    answered 404 when sent again, and takes the entry left behind with it."""
    for _ in range(WRITE_ATTEMPTS):
        read = ctx.schedules.get(space, schedule_id)
        if read is None:
            ctx.schedules.unlist(space, schedule_id)
            raise NotFound(f"schedule {schedule_id} not found in space {space}")
        try:
            ctx.schedules.delete(space, read)
            return
        except ScheduleConflict:
            continue  # changed or deleted meanwhile: read it again
    raise _busy(schedule_id)


def _edit(
    ctx: Context,
    space: str,
    schedule_id: str,
    body_of: Callable[[Schedule | None], ScheduleBody],
    *,
    create_if_missing: bool,
) -> Schedule:
    now = ctx.clock.now_ms()
    for _ in range(WRITE_ATTEMPTS):
        read = ctx.schedules.get(space, schedule_id)
        if read is None and not create_if_missing:
            raise NotFound(f"schedule {schedule_id} not found in space {space}")
        body: ScheduleBody = body_of(read)
        _check(ctx, body, now)
        next_at = _next_at(read, body, now)
        schedule = Schedule(
            id=schedule_id,
            space=space,
            cron=body.cron,
            timezone=body.timezone,
            job=body.job.model_dump(mode="json", exclude_unset=True),
            paused=body.paused,
            overlap=body.overlap,
            created_at_ms=read.created_at_ms if read else now,
            updated_at_ms=now,
            next_at_ms=next_at,
            last_run=read.last_run if read else None,
            version=read.version if read else 0,
        )
        if read is None:
            ctx.schedules.enlist(space, schedule_id)
        # As a create would: the space and its job's name exist (GET space, diagnostics, a
        # claim without names) from the schedule on, not from its first fire.
        ctx.spaces.register_names(space, {body.job.name}, now)
        if next_at is not None and (read is None or next_at != read.next_at_ms):
            ctx.timers.file(space, [Timer(SCHEDULE, schedule_id, next_at)])
        try:
            return ctx.schedules.write(schedule, read=read)
        except ScheduleConflict:
            continue
    raise _busy(schedule_id)


def _busy(schedule_id: str) -> Exception:
    return RuntimeError(f"schedule {schedule_id}: {WRITE_ATTEMPTS} writes in a row lost to others")


def _check(ctx: Context, body: ScheduleBody, now: int) -> None:
    """A 400 naming the field for what the models cannot see: the cron and the timezone,
    the job's size and its callback's target."""
    try:
        schedules.zone(body.timezone)
    except CronError as error:
        raise InvalidArgument(f"timezone: {error}") from None
    try:
        schedules.check(body.cron, body.timezone, now)
    except CronError as error:
        raise InvalidArgument(f"cron: {error}") from None
    size = len(dump_json(body.job.model_dump(mode="json", exclude_unset=True)))
    if size > limits.MAX_SCHEDULE_JOB_BYTES:
        raise InvalidArgument(f"job: must be at most {limits.MAX_SCHEDULE_JOB_BYTES} bytes of JSON ({size})")
    if body.job.callback is not None:
        ctx.targets.check_url(body.job.callback.url, at="job.callback.url")


def _next_at(read: Schedule | None, body: ScheduleBody, now: int) -> int | None:
    """The first fire time of the schedule as edited: none while paused; the one not made
    yet, kept, when the times are unchanged (an edit of its job never loses a time just
    due); else the first after now (a resumed schedule does not make up what it missed)."""
    if body.paused:
        return None
    if (
        read is not None
        and not read.paused
        and read.next_at_ms is not None
        and (read.cron, read.timezone) == (body.cron, body.timezone)
    ):
        return read.next_at_ms
    return schedules.next_fire(body.cron, body.timezone, now)


# -- making jobs -------------------------------------------------------------


def trigger(ctx: Context, space: str, schedule_id: str, *, key: str | None = None) -> Inserted:
    """One job of the schedule now, whatever its times and `overlap` (a key makes a trigger
    sent again answer its job); it is the schedule's last run from then."""
    read = get(ctx, space, schedule_id)
    now = ctx.clock.now_ms()
    request = NewJob.model_validate({**read.job, **({"key": key} if key is not None else {})})
    [made] = create(ctx, space, [request], batch=False, fired=Fired(schedule_id, now))
    # A trigger sent again (its key's job answered) notes the run too: the one that made the
    # job may have died before it did.
    run = LastRun(now, made.id) if made.new else _own_run(ctx, read, made.id)
    if run is not None and run != read.last_run:
        _ran(ctx, read, run)
    return made


def _own_run(ctx: Context, read: Schedule, job_id: str) -> LastRun | None:
    """The run of a job a key answered, at its own time, if this schedule made it."""
    job = ctx.jobs.job(read.space, job_id, now_ms=ctx.clock.now_ms())
    if job is None or job.schedule is None or job.schedule.schedule_id != read.id:
        return None
    return LastRun(job.schedule.at_ms, job.id)


def _ran(ctx: Context, read: Schedule, run: LastRun) -> None:
    """Note `run` as the schedule's last, unless a later one is noted or it is gone."""
    for _ in range(WRITE_ATTEMPTS):
        if read.last_run is not None and read.last_run.at_ms > run.at_ms:
            return
        try:
            ctx.schedules.write(replace(read, last_run=run), read=read)
            return
        except ScheduleConflict as conflict:
            if conflict.current is None:
                return
            read = conflict.current
    raise _busy(read.id)


def fire_due(ctx: Context, space: str, schedule_id: str, now_ms: int) -> Fires:
    """Make the schedule's jobs for its fire times that have come, each once (the clock,
    at its timer): up to `limits.MAX_SCHEDULE_FIRES_PER_TICK` of them, the rest at the next
    ticks."""
    fires = Fires()
    for _ in range(limits.MAX_SCHEDULE_FIRES_PER_TICK + WRITE_ATTEMPTS):
        read = ctx.schedules.get(space, schedule_id)
        if read is None or read.paused or read.next_at_ms is None or read.next_at_ms > now_ms:
            return fires  # gone, paused or not due: the timer was an edit's, nothing to do
        at = read.next_at_ms
        after = schedules.next_fire(read.cron, read.timezone, at)
        run = _make(ctx, read, at, fires)
        last = fires.made + fires.skipped >= limits.MAX_SCHEDULE_FIRES_PER_TICK
        if after is not None and (after > now_ms or last):
            # Before the write that sets it. Times still due are made in this loop, under the
            # timer being handled (it stays filed until this returns).
            ctx.timers.file(space, [Timer(SCHEDULE, schedule_id, after)])
        try:
            ctx.schedules.write(replace(read, next_at_ms=after, last_run=run or read.last_run), read=read)
        except ScheduleConflict:
            continue  # edited, or fired by another tick, meanwhile: read it again
        if last or after is None or after > now_ms:
            return fires  # what it wrote is what a read would find: nothing more is due
    # Out of tries while times may still be due (a tick racing this one made their jobs
    # first, which counts none here, or took the writes): the next tick goes on from there.
    ctx.timers.file(space, [Timer(SCHEDULE, schedule_id, now_ms)])
    return fires


def _make(ctx: Context, read: Schedule, at: int, fires: Fires) -> LastRun | None:
    """The job of fire time `at` (made once: a repeat finds it), as the schedule's run;
    None: passed over (`overlap: SKIP` with the last job unfinished)."""
    job_id = fire_id(read, at)
    if read.overlap == "SKIP" and read.last_run is not None:
        now = ctx.clock.now_ms()
        if ctx.jobs.job(read.space, job_id, now_ms=now) is not None:
            return LastRun(at, job_id)  # made by a fire killed before it advanced: go on
        last = ctx.jobs.job(read.space, read.last_run.job_id, now_ms=now)
        if last is not None and not last.status.is_final:
            fires.skipped += 1
            return None
    try:
        request = NewJob.model_validate(read.job)
        [made] = create(ctx, read.space, [request], batch=False, once=job_id, fired=Fired(read.id, at))
    except InvalidArgument as refused:
        # Checked when set, so only a rule changed since (a callback target now refused):
        # the time is passed over rather than held up for ever.
        logger.warning("schedule %s/%s: the job for %d was refused: %s", read.space, read.id, at, refused)
        fires.skipped += 1
        return None
    fires.made += made.new
    return LastRun(at, made.id)
