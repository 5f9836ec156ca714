"""`emit.jobs`: create, read, follow, wait for and cancel jobs in the client's space.

Reads that the API pages (`list`, `lines`, `events`) are iterators that fetch the next
page as they go, so a caller never handles a cursor. `claim` and `report` are the worker
endpoints, used by `emit.worker`; they are public for a worker loop of one's own.

Each call is written once, in `JobFlows` (`emit.calls`); `Jobs` (on `Emit`) and
`AsyncJobs` (on `AsyncEmit`) are made from it.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import quote

from emit import tracing
from emit.calls import (
    NOW,
    AsyncCarrier,
    Call,
    Carrier,
    Op,
    Pause,
    Stream,
    aiterate,
    awaiting,
    awaiting_stream,
    blocking,
    blocking_stream,
    collect,
    iterate,
)
from emit.models import (
    Backoff,
    Callback,
    Claimed,
    Created,
    Event,
    FollowLink,
    Guarantee,
    Job,
    JobPage,
    JobStatus,
    Line,
    NewJob,
    Outcome,
    Retried,
)
from emit.results import JobTimeout, outcome
from emit.units import Duration, duration_ms, seconds

# Long polls: the HTTP timeout is the wait plus this, so a slow answer isn't cut off.
_POLL_MARGIN_S = 15.0
# `wait`: the first pause between reads of an unfinished job (they grow to its `interval`).
_FIRST_PAUSE_S = 0.1
T = TypeVar("T")


class JobFlows:
    """The jobs calls of one space, without I/O (`emit.calls`)."""

    def __init__(self, space: str | None) -> None:
        self.space = space
        self.wake_url: str | None = None
        """Where the service offers hints (`emit.wake`), as the last claim's answer said."""

    def _path(self, suffix: str = "") -> str:
        if not self.space:
            raise ValueError("no space: pass space= to Emit(), or set EMIT_SPACE")
        return f"/v1/spaces/{quote(self.space, safe='')}/jobs{suffix}"

    # -- create -------------------------------------------------------------------

    def create(
        self,
        name: str,
        payload: Any = None,
        *,
        key: str | None = None,
        delay: Duration | None = None,
        run_at: datetime | None = None,
        max_attempts: int | None = None,
        timeout: Duration | None = None,
        backoff: Backoff | Duration | None = None,
        callback: Callback | None = None,
        priority: int | None = None,
        concurrency_key: str | None = None,
        guarantee: Guarantee | None = None,
        expires_at: datetime | None = None,
        expires_in: Duration | None = None,
        traceparent: str | None = None,
    ) -> Op[Created]:
        """Create one job. With a `key`, a repeat answers the earlier job (`duplicate`), so
        the call is also safe to send again after a lost answer, and the SDK does.

        Durations are `timedelta`s or seconds, instants timezone-aware `datetime`s (a naive
        one is refused: its zone is anyone's guess). `delay` or `run_at` (not both): not
        claimable before. `timeout`: an attempt's lease. `backoff`: the first wait after a
        failure, or a `Backoff` (its first wait, kind, longest wait, jitter).
        `priority` (-1,000 to 1,000, higher first) places it in its name's order of hand-out;
        jobs sharing a `concurrency_key` share the name's per-key limits. `guarantee=
        "at_most_once"` never hands the job out again once an attempt may have started: a
        lease that ends without a report moves it to `stalled`. A deadline (`expires_at`, or
        `expires_in` from now; not both): not finished by then, the job is cancelled with
        error `expired`, and never handed out after it.

        With OpenTelemetry installed (the `otel` extra), the current span's context is sent
        (the `traceparent` header), so the job's worker continues this trace; `traceparent`
        gives the job a W3C trace context of its own instead."""
        job = NewJob(
            name,
            payload,
            key=key,
            delay=delay,
            run_at=run_at,
            max_attempts=max_attempts,
            timeout=timeout,
            backoff=backoff,
            callback=callback,
            priority=priority,
            concurrency_key=concurrency_key,
            guarantee=guarantee,
            expires_at=expires_at,
            expires_in=expires_in,
            traceparent=traceparent,
        )
        answer = yield Call(
            "POST", self._path(), body=job.to_api(), repeatable=key is not None, headers=tracing.headers()
        )
        return Created.from_api(answer)

    def create_many(self, jobs: Iterable[NewJob | Mapping[str, Any]]) -> Op[builtins.list[Created]]:
        """Create up to 1,000 jobs in one call, all or none; the answers are in the order sent.

        Each job is a `NewJob`, or a mapping of its fields (`{"name": ..., "key": ...}`). The
        current OpenTelemetry context goes with them as `create`'s does."""
        batch = [j if isinstance(j, NewJob) else NewJob(**j) for j in jobs]
        if not batch:
            return []
        answer = yield Call(
            "POST",
            self._path(),
            body={"jobs": [j.to_api() for j in batch]},
            repeatable=all(j.key is not None for j in batch),
            headers=tracing.headers(),
        )
        return [Created.from_api(c) for c in answer["jobs"]]

    # -- read ---------------------------------------------------------------------

    def get(self, job_id: str) -> Op[Job]:
        return Job.from_api((yield Call("GET", self._path(f"/{_id(job_id)}"), repeatable=True)))

    def list(
        self,
        *,
        status: JobStatus | None = None,
        name: str | None = None,
        limit: int | None = None,
        page_size: int = 100,
    ) -> Stream[Job]:
        """Jobs newest first, without payload and result; `limit` stops after that many."""
        params: dict[str, str | int] = {}
        if status:
            params["status"] = status.upper()
        if name:
            params["name"] = name
        return pages(self._path(), "jobs", params, page_size=page_size, limit=limit, parse=Job.from_api)

    def page(
        self,
        *,
        status: JobStatus | None = None,
        name: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> Op[JobPage]:
        """One page of `list`, and the cursor of the next (None: the last page), for a caller
        that pages itself (a UI, the CLI's `--cursor`)."""
        params: dict[str, str | int] = {"limit": limit}
        if status:
            params["status"] = status.upper()
        if name:
            params["name"] = name
        if cursor:
            params["cursor"] = cursor
        answer = yield Call("GET", self._path(), params=params, repeatable=True)
        return JobPage([Job.from_api(j) for j in answer["jobs"]], answer.get("cursor"))

    def lines(self, job_id: str, *, after: int | None = None, page_size: int = 100) -> Stream[Line]:
        """Log lines in order, from the one after seq `after`, until there are none more yet."""
        path = self._path(f"/{_id(job_id)}/lines")
        return pages(path, "lines", _after(after), page_size=page_size, limit=None, parse=Line.from_api)

    def events(self, job_id: str, *, after: int | None = None, page_size: int = 100) -> Stream[Event]:
        """Events in order, from the one after seq `after`, until there are none more yet."""
        path = self._path(f"/{_id(job_id)}/events")
        return pages(path, "events", _after(after), page_size=page_size, limit=None, parse=Event.from_api)

    def follow(self, job_id: str, *, interval: Duration = 1.0) -> Stream[Job | Line]:
        """The job each time it changes, and each new log line, until it finishes; it looks
        again every `interval` (a timedelta, or seconds).

        The first item is the job as it is; lines come before the job state they led to,
        and the last item is the finished job. Renewals of the lease alone are not news.
        """
        every = seconds(interval, "interval")
        after: int | None = None
        last: str | None = None
        while True:
            job = yield from self.get(job_id)
            for line in (yield from collect(self.lines(job_id, after=after))):
                after = line.seq
                yield line
            seen = _without_lease(job)
            if seen != last:
                last = seen
                yield job
            if job.finished:
                return
            yield Pause(every)

    def wait(self, job_id: str, *, timeout: Duration | None = None, interval: Duration = 1.0) -> Op[Job]:
        """The job once it has finished (completed, failed, cancelled or stalled), read whole
        (with its result or error). It reads the job again after pauses that grow from a
        tenth of a second to `interval`; with a `timeout` (a timedelta, or seconds) still
        unfinished by then, it raises `emit.JobTimeout` (a `TimeoutError`) carrying the job
        as last seen. No timeout: it waits for as long as it takes."""
        limit = None if timeout is None else seconds(timeout, "timeout")
        most = seconds(interval, "interval")
        if most <= 0:
            raise ValueError("interval: must be more than 0 seconds")
        start = yield NOW
        pause = min(_FIRST_PAUSE_S, most)
        while True:
            job = yield from self.get(job_id)
            if job.finished:
                return job
            now = yield NOW
            if limit is not None and now - start >= limit:
                raise JobTimeout(job, limit)
            yield Pause(pause if limit is None else min(pause, start + limit - now))
            pause = min(pause * 1.5, most)

    def result(self, job_id: str, *, timeout: Duration | None = None, interval: Duration = 1.0) -> Op[Any]:
        """The job's result, once it has completed (`wait`, then its result). A job that
        failed for good or stalled raises `emit.JobFailed` (its `error` the worker's, `"Type:
        message"` and the traceback's last frames), a cancelled one `emit.JobCancelled`, and
        one unfinished after `timeout` `emit.JobTimeout` (a `TimeoutError`)."""
        return outcome((yield from self.wait(job_id, timeout=timeout, interval=interval)))

    def follow_link(self, job_id: str, *, ttl: Duration = timedelta(days=1)) -> Op[FollowLink]:
        """A link that lets anyone holding it follow the job (status, progress, log lines,
        result or error; never its payload) with no token, from a browser too, for `ttl`
        (a timedelta, or seconds: one minute to 30 days). Needs the `read` scope."""
        answer = yield Call(
            "POST",
            self._path(f"/{_id(job_id)}/follow-links"),
            body={"ttlMs": duration_ms(ttl, "ttl")},
            repeatable=True,
        )
        return FollowLink.from_api(answer)

    # -- cancel -------------------------------------------------------------------

    def cancel(self, *job_ids: str) -> Op[builtins.list[Outcome]]:
        """Cancel unfinished jobs: one outcome each, in order (`cancelled`, or a rejection
        `already_finished` or `not_found`). A running job's worker is told at its next report."""
        if not job_ids:
            return []
        answer = yield Call("POST", self._path(":cancel"), body=builtins.list(job_ids), repeatable=True)
        return [Outcome.from_api(o) for o in answer["outcomes"]]

    # -- retry --------------------------------------------------------------------

    def retry(self, *job_ids: str) -> Op[builtins.list[Retried]]:
        """Retry failed or stalled jobs: each gets a new job with its name, payload and options (not its
        key), one answer each, in order. A job is retried once: asking again (or sending
        again after a lost answer, as the SDK does) answers the same new job, `duplicate`.
        To try once more after the new job fails, retry the new one."""
        if not job_ids:
            return []
        answer = yield Call("POST", self._path(":retry"), body=builtins.list(job_ids), repeatable=True)
        return [Retried.from_api(o) for o in answer["outcomes"]]

    # -- the worker endpoints ------------------------------------------------------

    def claim(
        self,
        *,
        count: int,
        names: Sequence[str] | None = None,
        wait: Duration = 0,
        lease: Duration | None = None,
    ) -> Op[builtins.list[Claimed]]:
        """Take up to `count` jobs, waiting up to `wait` (a timedelta, or seconds; at most a
        minute) for work to arrive, each held for `lease` (else its own timeout).

        Never sent again by the SDK: if its answer is lost, nobody knows which jobs were
        handed out, and a second claim would hand out more."""
        waiting = seconds(wait, "wait")
        body: dict[str, Any] = {"count": count, "waitMs": round(waiting * 1000)}
        if names:
            body["names"] = builtins.list(names)
        if lease is not None:
            body["leaseMs"] = duration_ms(lease, "lease")
        answer = yield Call(
            "POST", self._path(":claim"), body=body, repeatable=False, timeout=waiting + _POLL_MARGIN_S
        )
        self.wake_url = answer.get("wakeUrl")
        return [Claimed.from_api(c) for c in answer["jobs"]]

    def report(self, reports: Sequence[Mapping[str, Any]]) -> Op[builtins.list[Outcome]]:
        """Send reports (API-shaped: `{"id", "attempt", "touch", ...}`); one outcome each.

        Sent again after a lost answer: a stale or finished attempt is refused, and a
        repeat at worst repeats a log line or an event."""
        answer = yield Call("POST", self._path(":report"), body=builtins.list(reports), repeatable=True)
        return [Outcome.from_api(o) for o in answer["outcomes"]]


class Jobs:
    """Jobs of the client's space (`Emit.jobs`): each call blocks until answered."""

    def __init__(self, carrier: Carrier, space: str | None) -> None:
        self._carrier = carrier
        self._flows = JobFlows(space)

    @property
    def wake_url(self) -> str | None:
        """Where the service offers hints (`emit.wake`), as the last claim's answer said."""
        return self._flows.wake_url

    create = blocking(JobFlows.create)
    create_many = blocking(JobFlows.create_many)
    get = blocking(JobFlows.get)
    list = blocking_stream(JobFlows.list)
    page = blocking(JobFlows.page)
    lines = blocking_stream(JobFlows.lines)
    events = blocking_stream(JobFlows.events)

    def follow(self, job_id: str, *, interval: Duration = 1.0) -> Iterator[Job | Line]:
        # Written out: a type checker cannot read the union of a stream's items off the flow.
        return iterate(self._carrier, self._flows.follow(job_id, interval=interval))

    follow.__doc__ = JobFlows.follow.__doc__
    wait = blocking(JobFlows.wait)
    result = blocking(JobFlows.result)
    follow_link = blocking(JobFlows.follow_link)
    cancel = blocking(JobFlows.cancel)
    retry = blocking(JobFlows.retry)
    claim = blocking(JobFlows.claim)
    report = blocking(JobFlows.report)


class AsyncJobs:
    """Jobs of the client's space (`AsyncEmit.jobs`): the same calls, awaited; the listings
    are async iterators (`async for job in client.jobs.list()`)."""

    def __init__(self, carrier: AsyncCarrier, space: str | None) -> None:
        self._carrier = carrier
        self._flows = JobFlows(space)

    @property
    def wake_url(self) -> str | None:
        """Where the service offers hints (`emit.wake`), as the last claim's answer said."""
        return self._flows.wake_url

    create = awaiting(JobFlows.create)
    create_many = awaiting(JobFlows.create_many)
    get = awaiting(JobFlows.get)
    list = awaiting_stream(JobFlows.list)
    page = awaiting(JobFlows.page)
    lines = awaiting_stream(JobFlows.lines)
    events = awaiting_stream(JobFlows.events)

    def follow(self, job_id: str, *, interval: Duration = 1.0) -> AsyncIterator[Job | Line]:
        return aiterate(self._carrier, self._flows.follow(job_id, interval=interval))

    follow.__doc__ = JobFlows.follow.__doc__
    wait = awaiting(JobFlows.wait)
    result = awaiting(JobFlows.result)
    follow_link = awaiting(JobFlows.follow_link)
    cancel = awaiting(JobFlows.cancel)
    retry = awaiting(JobFlows.retry)
    claim = awaiting(JobFlows.claim)
    report = awaiting(JobFlows.report)


def pages(
    path: str,
    field: str,
    params: Mapping[str, str | int],
    *,
    page_size: int,
    limit: int | None,
    parse: Callable[[dict[str, Any]], T],
) -> Stream[T]:
    """A paged read as a flow: each page's call, then its items parsed; `limit` stops
    after that many. (Spaces and schedules page the same way.)"""
    left = limit
    params = dict(params)
    cursor = params.pop("cursor", None)
    while left is None or left > 0:
        size = page_size if left is None else min(page_size, left)
        query = params | {"limit": size} | ({"cursor": cursor} if cursor is not None else {})
        page = yield Call("GET", path, params=query, repeatable=True)
        items = page[field]
        for item in items:
            yield parse(item)
        if left is not None:
            left -= len(items)
        cursor = page.get("cursor")
        if cursor is None or not items:
            return


def _id(job_id: str) -> str:
    return quote(job_id, safe="")


def _after(seq: int | None) -> dict[str, str | int]:
    return {"cursor": str(seq + 1)} if seq is not None else {}


def _without_lease(job: Job) -> str:
    return json.dumps({k: v for k, v in job.raw.items() if k != "leaseUntilMs"}, sort_keys=True)
