"""Jobs as the API shows them: upper-case statuses, times in ms, secrets never.

Every answer is built through its model in `shared.answers` (model -> dict), the same
models the OpenAPI document is generated from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from shared import answers
from shared.job import AT_MOST_ONCE, Attempt, Job, JobStatus
from shared.jobs.outcomes import Applied, Refused, Retried
from shared.schedules import next_runs

if TYPE_CHECKING:
    from shared.diagnostics import NameDiagnosis
    from shared.jobs.follow import Followed, MintedLink
    from shared.jobs.read import EventPage, Found, LinePage
    from shared.metrics import NameSeries
    from shared.space_list import SpacePage
    from shared.store.port import DeliveryState, Event, JobPage, Line, Schedule

A = TypeVar("A", bound=answers.Answer)


def answer(model: type[A], data: dict[str, Any]) -> dict[str, Any]:
    """`data` as `model` shows it: checked against the model (an answer the document does
    not describe fails here, in the tests, rather than at a client), keys kept as given."""
    return model.model_validate(data).shown()


def job(
    j: Job,
    *,
    bodies: bool = True,
    delivery: answers.Delivery | None = None,
    waiting_on: answers.WaitingOn | None = None,
) -> dict[str, Any]:
    """The job resource; `bodies=False` leaves out payload and result (list pages)."""
    fields: dict[str, Any] = {
        "id": j.id,
        "space": j.space,
        "name": j.name,
        "status": j.status.value,
        "attempt": j.attempt,
        "failures": j.failures,
        "maxAttempts": j.max_attempts,
        "timeoutMs": j.timeout_ms,
        "backoffMs": j.backoff.base_ms,
        "backoff": answers.Backoff(kind=j.backoff.kind, maxMs=j.backoff.max_ms, jitter=j.backoff.jitter),
        "key": j.key,
        "priority": j.priority,
        "concurrencyKey": j.concurrency_key,
        "guarantee": j.guarantee,
        "expiresAtMs": j.expires_at_ms,
        "createdAtMs": j.created_at_ms,
        "runAtMs": j.run_at_ms,
        "finishedAtMs": j.finished_at_ms,
        "progress": (
            answers.Progress(percent=j.progress.percent, message=j.progress.message) if j.progress else None
        ),
        "callback": callback(j, delivery),
        "lineCount": j.line_count,
        "eventCount": j.event_count,
    }
    if j.status == JobStatus.PENDING:
        fields["readyAtMs"] = j.ready_at_ms
    if j.status == JobStatus.RUNNING and j.lease_until_ms is not None:
        fields["leaseUntilMs"] = str(j.lease_until_ms)
    if j.error is not None and j.status != JobStatus.COMPLETED:
        fields["error"] = j.error
    if j.retry_of is not None:
        fields["retryOf"] = j.retry_of
    if j.schedule is not None:
        fields["schedule"] = answers.Fired(id=j.schedule.schedule_id, atMs=j.schedule.at_ms)
    if j.traceparent is not None:
        fields["traceparent"] = j.traceparent
    if not bodies:
        return answers.JobSummary(**fields).shown()
    fields["payload"] = j.payload
    fields["attempts"] = [attempt(a) for a in j.history()]
    if j.status == JobStatus.COMPLETED:
        fields["result"] = j.result
    if waiting_on is not None:
        fields["waitingOn"] = waiting_on
    return answers.Job(**fields).shown()


def attempt(a: Attempt) -> answers.Attempt:
    error = {"error": a.error} if a.error is not None else {}
    return answers.Attempt(
        attempt=a.attempt, startedAtMs=a.started_at_ms, endedAtMs=a.ended_at_ms, outcome=a.outcome, **error
    )


def found(read: Found) -> dict[str, Any]:
    """A job as `GET /jobs/{id}` shows it (`shared.jobs.read.get`)."""
    j = read.job
    shown_delivery = delivery(read.delivery) if read.delivery is not None else None
    waiting = waiting_on(*read.waiting_on, key=j.concurrency_key) if read.waiting_on else None
    return job(j, delivery=shown_delivery, waiting_on=waiting)


def page(read: JobPage) -> dict[str, Any]:
    """A page of jobs as `GET /jobs` shows it (`shared.jobs.read.page`)."""
    return answer(answers.JobPage, {"jobs": [job(j, bodies=False) for j in read.jobs], "cursor": read.cursor})


def line(shown: Line) -> dict[str, Any]:
    """One log line: `source` and `metadata` only when it has them."""
    fields: dict[str, Any] = {"seq": shown.seq, "level": shown.level, "message": shown.message}
    if shown.source is not None:
        fields["source"] = shown.source
    if shown.metadata is not None:
        fields["metadata"] = shown.metadata
    return fields | {"atMs": shown.at_ms}


def event(shown: Event) -> dict[str, Any]:
    return {"seq": shown.seq, "atMs": shown.at_ms, "event": shown.event}


def lines(read: LinePage) -> dict[str, Any]:
    """A page of a job's log lines (`shared.jobs.read.lines`)."""
    return answer(answers.LinePage, {"lines": [line(x) for x in read.lines], "cursor": read.cursor})


def events(read: EventPage) -> dict[str, Any]:
    """A page of a job's events (`shared.jobs.read.events`)."""
    return answer(answers.EventPage, {"events": [event(x) for x in read.events], "cursor": read.cursor})


def follow_link(link: MintedLink) -> dict[str, Any]:
    """A follow link just made (`shared.jobs.follow.mint`)."""
    return answer(
        answers.FollowLink, {"url": link.url, "token": link.token, "expiresAtMs": link.expires_at_ms}
    )


def followed(read: Followed) -> dict[str, Any]:
    """A job as its follower sees it (`shared.jobs.follow.follow`): never its payload, key,
    callback or events; its result once completed, its error once failed or stalled."""
    j = read.job
    fields: dict[str, Any] = {
        "id": j.id,
        "name": j.name,
        "status": j.status.value,
        "attempt": j.attempt,
        "progress": (
            answers.Progress(percent=j.progress.percent, message=j.progress.message) if j.progress else None
        ),
        "createdAtMs": j.created_at_ms,
        "finishedAtMs": j.finished_at_ms,
    }
    if j.status == JobStatus.COMPLETED:
        fields["result"] = j.result
    elif j.status in (JobStatus.FAILED, JobStatus.STALLED) and j.error is not None:
        fields["error"] = j.error
    fields |= {"lines": [line(x) for x in read.lines], "nextSeq": read.next_seq, "version": read.version}
    return answer(answers.FollowedJob, fields)


def callback(j: Job, delivery: answers.Delivery | None = None) -> answers.Callback | None:
    if j.callback is None:
        return None
    # Header values can carry credentials: only their names are ever shown again.
    headers = dict.fromkeys(j.callback.headers, "")
    if delivery is None:
        return answers.Callback(url=j.callback.url, headers=headers)
    return answers.Callback(url=j.callback.url, headers=headers, delivery=delivery)


def delivery(state: DeliveryState) -> answers.Delivery:
    """A finished job's callback delivery: PENDING (until delivered or given up), DELIVERED, GAVE_UP."""
    shown: dict[str, Any] = {"state": state.state, "attempts": state.attempts}
    for field, value in (
        ("lastStatus", state.last_status),
        ("lastError", state.last_error),
        ("lastAttemptAtMs", state.last_attempt_at_ms),
        ("deliveredAtMs", state.delivered_at_ms),
    ):
        if value is not None:
            shown[field] = value
    if state.state == "PENDING" and state.next_at_ms is not None:
        shown["nextAtMs"] = state.next_at_ms
    return answers.Delivery.model_validate(shown)


def claimed(j: Job) -> dict[str, Any]:
    """A job a claim hands out, as `answers.Claimed` shows it (`shared.jobs.claim` measures it)."""
    fields: dict[str, Any] = {"guarantee": j.guarantee} if j.guarantee == AT_MOST_ONCE else {}
    if j.traceparent is not None:
        fields["traceparent"] = j.traceparent
    return answers.Claimed(
        id=j.id,
        attempt=j.attempt,
        name=j.name,
        payload=j.payload,
        leaseUntilMs=str(j.lease_until_ms),
        maxAttempts=j.max_attempts,
        failures=j.failures,
        **fields,
    ).shown()


def rejection(reason: str, message: str) -> dict[str, Any]:
    return answers.Rejected.model_validate({"rejection": {"reason": reason, "message": message}}).shown()


def waiting_on(reason: str, until_ms: int | None, key: str | None = None) -> answers.WaitingOn:
    fields: dict[str, Any] = {"reason": reason}
    if until_ms is not None:
        fields["untilMs"] = until_ms
    if key is not None and reason.startswith("KEY_"):
        fields["key"] = key
    return answers.WaitingOn.model_validate(fields)


def outcome(o: Applied | Refused | Retried) -> dict[str, Any]:
    """One job's outcome in a report, cancel or retry (`shared.jobs.outcomes`)."""
    if isinstance(o, Refused):
        return rejection(o.reason, o.message)
    if isinstance(o, Retried):
        return {"id": o.id, "retryOf": o.retry_of, "outcome": "NEW" if o.new else "DUPLICATE"}
    return {"status": o.status.value}


def outcomes(model: type[A], each: Sequence[Applied | Refused | Retried]) -> dict[str, Any]:
    """A request's outcomes, one per job in the order sent, as `model` shows them."""
    return answer(model, {"outcomes": [outcome(o) for o in each]})


def spaces(read: SpacePage) -> dict[str, Any]:
    """The spaces a token may use (`shared.space_list.page`)."""
    shown = [{"name": s.name, "inFlight": s.in_flight} for s in read.spaces]
    return answer(answers.SpaceList, {"spaces": shown, "cursor": read.cursor})


def diagnostics(names: list[NameDiagnosis]) -> dict[str, Any]:
    """Each name's pending work, its policy, and why it waits (`shared.diagnostics`)."""
    shown = [
        {
            "name": n.name,
            "pending": n.census.pending,
            "claimable": n.census.claimable,
            "running": n.limits.running,
            "capped": n.census.capped,
            "policy": n.limits.policy.render(),
            "waitingOn": n.waiting_on,
            "oldestClaimableAtMs": n.census.oldest_claimable_at_ms,
        }
        for n in names
    ]
    return answer(answers.Diagnostics, {"names": shown})


def schedule(s: Schedule) -> dict[str, Any]:
    """A schedule as its endpoints answer it, with its next fire times."""
    last = answers.LastRun(atMs=s.last_run.at_ms, jobId=s.last_run.job_id) if s.last_run else None
    return answer(
        answers.Schedule,
        {
            "id": s.id,
            "space": s.space,
            "cron": s.cron,
            "timezone": s.timezone,
            "job": s.job,
            "paused": s.paused,
            "overlap": s.overlap,
            "createdAtMs": s.created_at_ms,
            "updatedAtMs": s.updated_at_ms,
            "nextRunsAtMs": next_runs(s),
            "lastRun": last,
        },
    )


def schedules(found: list[Schedule], cursor: str | None) -> dict[str, Any]:
    return answer(answers.SchedulePage, {"schedules": [schedule(s) for s in found], "cursor": cursor})


def metrics(first_ms: int, names: list[NameSeries]) -> dict[str, Any]:
    shown = [{"name": n.name, "points": [{"atMs": p.at_ms, **p.counts} for p in n.points]} for n in names]
    return answer(answers.Metrics, {"fromMs": first_ms, "stepMs": 60_000, "names": shown})
