"""`emit.jobs`: create, read, follow and cancel jobs in the client's space.

Reads that the API pages (`list`, `lines`, `events`) are iterators that fetch the next
page as they go, so a caller never handles a cursor. `claim` and `report` are the worker
endpoints, used by `emit.worker`; they are public for a worker loop of one's own.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from emit import tracing
from emit.models import (
    Backoff,
    Callback,
    Claimed,
    Created,
    Event,
    FollowLink,
    Guarantee,
    Job,
    JobStatus,
    Line,
    NewJob,
    Outcome,
    Retried,
)
from emit.transport import Transport

# Long polls: the HTTP timeout is the wait plus this, so a slow answer isn't cut off.
_POLL_MARGIN_S = 15.0


class Jobs:
    def __init__(self, transport: Transport, space: str | None) -> None:
        self._transport = transport
        self._space = space
        self.wake_url: str | None = None
        """Where the service offers hints (`emit.wake`), as the last claim's answer said."""

    def _path(self, suffix: str = "") -> str:
        if not self._space:
            raise ValueError("no space: pass space= to Emit(), or set EMIT_SPACE")
        return f"/v1/spaces/{quote(self._space, safe='')}/jobs{suffix}"

    # -- create -------------------------------------------------------------------

    def create(
        self,
        name: str,
        payload: Any = None,
        *,
        key: str | None = None,
        delay_ms: int | None = None,
        run_at_ms: int | None = None,
        max_attempts: int | None = None,
        timeout_ms: int | None = None,
        backoff_ms: int | None = None,
        backoff: Backoff | None = None,
        callback: Callback | None = None,
        priority: int | None = None,
        concurrency_key: str | None = None,
        guarantee: Guarantee | None = None,
        expires_at_ms: int | None = None,
        expires_in_ms: int | None = None,
        expires_at: datetime | None = None,
        expires_in: timedelta | None = None,
        traceparent: str | None = None,
    ) -> Created:
        """Create one job. With a `key`, a repeat answers the earlier job (`duplicate`), so
        the call is also safe to send again after a lost answer, and the SDK does.

        `priority` (-1,000 to 1,000, higher first) places it in its name's order of hand-out;
        jobs sharing a `concurrency_key` share the name's per-key limits. `guarantee=
        "at_most_once"` never hands the job out again once an attempt may have started: a
        lease that ends without a report moves it to `stalled`. A deadline (`expires_at`, a
        datetime, or `expires_in`, a timedelta from now; or the same in Unix ms: one of the
        four): not finished by then, the job is cancelled with error `expired`, and never
        handed out after it.

        With OpenTelemetry installed (the `otel` extra), the current span's context is sent
        (the `traceparent` header), so the job's worker continues this trace; `traceparent`
        gives the job a W3C trace context of its own instead."""
        if expires_at is not None:
            if expires_at.tzinfo is None:
                raise ValueError("expires_at: give a timezone-aware datetime")
            expires_at_ms = _one(expires_at_ms, round(expires_at.timestamp() * 1000), "expires_at")
        if expires_in is not None:
            expires_in_ms = _one(expires_in_ms, round(expires_in.total_seconds() * 1000), "expires_in")
        job = NewJob(
            name,
            payload,
            key=key,
            delay_ms=delay_ms,
            run_at_ms=run_at_ms,
            max_attempts=max_attempts,
            timeout_ms=timeout_ms,
            backoff_ms=backoff_ms,
            backoff=backoff,
            callback=callback,
            priority=priority,
            concurrency_key=concurrency_key,
            guarantee=guarantee,
            expires_at_ms=expires_at_ms,
            expires_in_ms=expires_in_ms,
            traceparent=traceparent,
        )
        answer = self._transport.call(
            "POST", self._path(), body=job.to_api(), repeatable=key is not None, headers=tracing.headers()
        )
        return Created.from_api(answer)

    def create_many(self, jobs: Iterable[NewJob | Mapping[str, Any]]) -> builtins.list[Created]:
        """Create up to 1,000 jobs in one call, all or none; the answers are in the order sent.

        Each job is a `NewJob`, or a mapping of its fields (`{"name": ..., "key": ...}`). The
        current OpenTelemetry context goes with them as `create`'s does."""
        batch = [j if isinstance(j, NewJob) else NewJob(**j) for j in jobs]
        if not batch:
            return []
        answer = self._transport.call(
            "POST",
            self._path(),
            body={"jobs": [j.to_api() for j in batch]},
            repeatable=all(j.key is not None for j in batch),
            headers=tracing.headers(),
        )
        return [Created.from_api(c) for c in answer["jobs"]]

    # -- read ---------------------------------------------------------------------

    def get(self, job_id: str) -> Job:
        return Job.from_api(self._transport.call("GET", self._path(f"/{_id(job_id)}"), repeatable=True))

    def list(
        self,
        *,
        status: JobStatus | None = None,
        name: str | None = None,
        limit: int | None = None,
        page_size: int = 100,
    ) -> Iterator[Job]:
        """Jobs newest first, without payload and result; `limit` stops after that many."""
        params: dict[str, str | int] = {}
        if status:
            params["status"] = status.upper()
        if name:
            params["name"] = name
        for raw in self._pages(self._path(), "jobs", params, page_size, limit):
            yield Job.from_api(raw)

    def lines(self, job_id: str, *, after: int | None = None, page_size: int = 100) -> Iterator[Line]:
        """Log lines in order, from the one after seq `after`, until there are none more yet."""
        path = self._path(f"/{_id(job_id)}/lines")
        for raw in self._pages(path, "lines", _after(after), page_size, None):
            yield Line.from_api(raw)

    def events(self, job_id: str, *, after: int | None = None, page_size: int = 100) -> Iterator[Event]:
        """Events in order, from the one after seq `after`, until there are none more yet."""
        path = self._path(f"/{_id(job_id)}/events")
        for raw in self._pages(path, "events", _after(after), page_size, None):
            yield Event.from_api(raw)

    def follow(self, job_id: str, *, interval: float = 1.0) -> Iterator[Job | Line]:
        """The job each time it changes, and each new log line, until it finishes.

        The first item is the job as it is; lines come before the job state they led to,
        and the last item is the finished job. Renewals of the lease alone are not news.
        """
        after: int | None = None
        last: str | None = None
        while True:
            job = self.get(job_id)
            for line in self.lines(job_id, after=after):
                after = line.seq
                yield line
            seen = _without_lease(job)
            if seen != last:
                last = seen
                yield job
            if job.finished:
                return
            self._transport.clock.sleep(interval)

    def follow_link(self, job_id: str, *, ttl: float | timedelta = timedelta(days=1)) -> FollowLink:
        """A link that lets anyone holding it follow the job (status, progress, log lines,
        result or error; never its payload) with no token, from a browser too, for `ttl`
        (seconds, or a timedelta: one minute to 30 days). Needs the `read` scope."""
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
        answer = self._transport.call(
            "POST",
            self._path(f"/{_id(job_id)}/follow-links"),
            body={"ttlMs": round(seconds * 1000)},
            repeatable=True,
        )
        return FollowLink.from_api(answer)

    def _pages(
        self, path: str, field: str, params: dict[str, str | int], page_size: int, limit: int | None
    ) -> Iterator[dict[str, Any]]:
        left = limit
        cursor = params.pop("cursor", None)
        while left is None or left > 0:
            size = page_size if left is None else min(page_size, left)
            query = params | {"limit": size} | ({"cursor": cursor} if cursor is not None else {})
            page = self._transport.call("GET", path, params=query, repeatable=True)
            items = page[field]
            yield from items
            if left is not None:
                left -= len(items)
            cursor = page.get("cursor")
            if cursor is None or not items:
                return

    # -- cancel -------------------------------------------------------------------

    def cancel(self, *job_ids: str) -> builtins.list[Outcome]:
        """Cancel unfinished jobs: one outcome each, in order (`cancelled`, or a rejection
        `already_finished` or `not_found`). A running job's worker is told at its next report."""
        if not job_ids:
            return []
        answer = self._transport.call("POST", self._path(":cancel"), body=list(job_ids), repeatable=True)
        return [Outcome.from_api(o) for o in answer["outcomes"]]

    # -- retry --------------------------------------------------------------------

    def retry(self, *job_ids: str) -> builtins.list[Retried]:
        """Retry failed or stalled jobs: each gets a new job with its name, payload and options (not its
        key), one answer each, in order. A job is retried once: asking again (or sending
        again after a lost answer, as the SDK does) answers the same new job, `duplicate`.
        To try once more after the new job fails, retry the new one."""
        if not job_ids:
            return []
        answer = self._transport.call("POST", self._path(":retry"), body=list(job_ids), repeatable=True)
        return [Retried.from_api(o) for o in answer["outcomes"]]

    # -- the worker endpoints ------------------------------------------------------

    def claim(
        self, *, count: int, names: Sequence[str] | None = None, wait: float = 0, lease_ms: int | None = None
    ) -> builtins.list[Claimed]:
        """Take up to `count` jobs, waiting up to `wait` seconds for work to arrive.

        Never sent again by the SDK: if its answer is lost, nobody knows which jobs were
        handed out, and a second claim would hand out more."""
        body: dict[str, Any] = {"count": count, "waitMs": round(wait * 1000)}
        if names:
            body["names"] = builtins.list(names)
        if lease_ms is not None:
            body["leaseMs"] = lease_ms
        answer = self._transport.call(
            "POST", self._path(":claim"), body=body, repeatable=False, timeout=wait + _POLL_MARGIN_S
        )
        self.wake_url = answer.get("wakeUrl")
        return [Claimed.from_api(c) for c in answer["jobs"]]

    def report(self, reports: Sequence[Mapping[str, Any]]) -> builtins.list[Outcome]:
        """Send reports (API-shaped: `{"id", "attempt", "touch", ...}`); one outcome each.

        Sent again after a lost answer: a stale or finished attempt is refused, and a
        repeat at worst repeats a log line or an event."""
        body = builtins.list(reports)
        answer = self._transport.call("POST", self._path(":report"), body=body, repeatable=True)
        return [Outcome.from_api(o) for o in answer["outcomes"]]


def _id(job_id: str) -> str:
    return quote(job_id, safe="")


def _after(seq: int | None) -> dict[str, str | int]:
    return {"cursor": str(seq + 1)} if seq is not None else {}


def _without_lease(job: Job) -> str:
    return json.dumps({k: v for k, v in job.raw.items() if k != "leaseUntilMs"}, sort_keys=True)


def _one(ms: int | None, value: int, name: str) -> int:
    if ms is not None:
        raise ValueError(f"give {name} or {name}_ms, not both")
    return value
