"""What a report asks of its job: the transition, the value stored with it, or why the
report cannot count (stale, not running, finished, past its deadline, gone).

Apart from the report's writes (`shared.jobs.report`): deciding reads the job only when
the transition needs its fields (a failure's backoff, a release's place), and a refusal
is a value (`Rejected`) the report turns into its outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared import limits
from shared.job import Job
from shared.jobs.context import Context
from shared.machine import Transition, refusal
from shared.machine import complete as complete_transition
from shared.machine import fail as fail_transition
from shared.machine import keep as keep_transition
from shared.machine import release as release_transition
from shared.machine import touch as touch_transition
from shared.schema import Report, dump_json
from shared.settings import Settings
from shared.store.port import Packed

REASONS = {
    "STALE": "job {id}: attempt {attempt} is not the current attempt; stop working on it",
    "NOT_RUNNING": "job {id} is not held by anyone",
    "ALREADY_FINISHED": "job {id} has finished; stop working on it",
    "EXPIRED": "job {id} has passed its deadline and is cancelled; stop working on it",
    "NOT_FOUND": "job {id} does not exist",
    "TOO_MANY_EVENTS": "the job has all the events its space allows ({max}); the rest of the report applied",
    "RACE": "job {id} changed while the report was applied; send it again",
}


@dataclass(frozen=True)
class Decision:
    """What a report asks for: its transition, the value (a result, an error) stored with
    it, and the job where the decision read it."""

    transition: Transition
    value: Packed | None = None
    read: Job | None = None
    """The job as the decision read it: its write then knows the holds it lets go."""

    @property
    def outside(self) -> Packed | None:
        """The value, where it lives outside the job item (written before the transition)."""
        return self.value if self.value is not None and self.value.ref else None


def decide(ctx: Context, space: str, report: Report, settings: Settings, now: int) -> Decision:
    """The transition a report asks for, with the value it stores (packed by the store)
    and the job where deciding had to read it."""
    attempt = report.attempt
    if report.complete is not None:
        raw = dump_json(report.complete.result)
        if len(raw) <= limits.MAX_RESULT_BYTES:
            result = ctx.jobs.pack(space, report.id, "result", raw, attempt=attempt)
            return Decision(
                complete_transition(attempt=attempt, now_ms=now, retention=settings.retention), value=result
            )
        error = f"result is larger than {limits.MAX_RESULT_BYTES} bytes of JSON"
        return _fail(ctx, space, report, settings, now, error=error, unrecoverable=False, retry_after_ms=None)
    if report.fail is not None:
        return _fail(
            ctx,
            space,
            report,
            settings,
            now,
            error=report.fail.error,
            unrecoverable=report.fail.unrecoverable,
            retry_after_ms=report.fail.retryAfterMs,
        )
    if report.release is not None:
        # Read for its priority and name: the job takes its place in the order again.
        job = running_job(ctx, space, report, now)
        aging_ms = ctx.policies.get(space, job.name).aging_ms
        release = release_transition(attempt=attempt, now_ms=now, priority=job.priority, aging_ms=aging_ms)
        return Decision(release, read=job)
    if report.touch is not None:
        lease_ms = report.touch.leaseMs
        if lease_ms is None:
            lease_ms = running_job(ctx, space, report, now).timeout_ms
        return Decision(touch_transition(attempt=attempt, now_ms=now, lease_ms=lease_ms))
    return Decision(keep_transition(attempt=attempt))


def _fail(
    ctx: Context,
    space: str,
    report: Report,
    settings: Settings,
    now: int,
    *,
    error: str,
    unrecoverable: bool,
    retry_after_ms: int | None,
) -> Decision:
    job = running_job(ctx, space, report, now)
    error = _cut(error, limits.MAX_ERROR_BYTES)
    packed = ctx.jobs.pack(space, report.id, "error", error.encode(), attempt=report.attempt)
    transition = fail_transition(
        job,
        now_ms=now,
        error=error,
        unrecoverable=unrecoverable,
        retry_after_ms=retry_after_ms,
        rand=ctx.rand(),
        retention=settings.retention,
        aging_ms=ctx.policies.get(space, job.name).aging_ms,
    )
    return Decision(transition, value=packed, read=job)


def running_job(ctx: Context, space: str, report: Report, now: int) -> Job:
    """The job a report speaks for, read when the decision needs its fields (one past its
    retention is read as none: NOT_FOUND, as for a job never made)."""
    job = ctx.jobs.job(space, report.id, now_ms=now)
    reason = refusal_of(job, report, now)
    if reason is not None:
        raise rejected(reason, report, job)
    assert job is not None
    return job


def refusal_of(job: Job | None, report: Report, now: int) -> str | None:
    """Why `report` cannot speak for the job as it stood (None: it can)."""
    if job is None or job.purged(now):
        return "NOT_FOUND"
    if job.past_deadline(now):
        return "EXPIRED"
    return refusal(
        job.status,
        attempt=job.attempt,
        reported_attempt=report.attempt,
        lapsed_attempt=job.lapsed_attempt,
    )


def rejected(reason: str, report: Report, job: Job | None = None) -> Rejected:
    """The report's refusal; `job`, the job as it stood when it refused it (for an expired
    job, which the refusal then cancels)."""
    message = REASONS[reason].format(id=report.id, attempt=report.attempt)
    if reason == "EXPIRED":
        return Rejected("ALREADY_FINISHED", message, expired=job)
    return Rejected(reason, message)


class Rejected(Exception):
    def __init__(self, reason: str, message: str, *, expired: Job | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.expired = expired
        """A job the report found past its deadline, unfinished: to cancel."""


def _cut(text: str, max_bytes: int) -> str:
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode(errors="ignore")
