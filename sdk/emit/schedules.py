"""`emit.schedules`: cron schedules in the client's space, each making one job per fire time.

A schedule's job is a `JobTemplate`: a create's fields without those that fix one job's
own identity or time (key, delay, run-at, expires-at), since a schedule makes many. Its
durations are timedeltas (or seconds); a schedule's times are timezone-aware UTC
`datetime`s (`next_runs`, `created_at`, `last_run.at`), also kept in Unix ms under their
API names as elsewhere in the SDK.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, cast
from urllib.parse import quote

from emit.calls import (
    AsyncCarrier,
    Call,
    Carrier,
    Op,
    Stream,
    awaiting,
    awaiting_stream,
    blocking,
    blocking_stream,
)
from emit.jobs import pages
from emit.models import Backoff, Callback, Created, Guarantee, backoff_fields, callback_api
from emit.units import Duration, optional_from_ms, optional_ms, optional_timedelta, utc

Overlap = Literal["allow", "skip"]
"""`skip`: a fire time makes no job while the last job the schedule made is unfinished."""
_FIELDS = frozenset({"cron", "timezone", "job", "paused", "overlap"})
"""What `update` may change."""


@dataclass(frozen=True)
class JobTemplate:
    """The job a schedule makes at each fire time; everything but the name is optional."""

    name: str
    payload: Any = None
    max_attempts: int | None = None
    timeout: timedelta | None = None
    backoff: Backoff | None = None
    """The first wait after a failure and how the waits grow (a plain duration: the first)."""
    callback: Callback | None = None
    priority: int | None = None
    concurrency_key: str | None = None
    guarantee: Guarantee | None = None
    expires_in: timedelta | None = None
    """Each job's deadline, as a time from its fire."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "timeout", optional_timedelta(self.timeout, "timeout"))
        object.__setattr__(self, "expires_in", optional_timedelta(self.expires_in, "expires_in"))
        if self.backoff is not None and not isinstance(self.backoff, Backoff):
            object.__setattr__(self, "backoff", Backoff(first=cast(Duration, self.backoff)))

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "payload": self.payload}
        options = {
            "maxAttempts": self.max_attempts,
            "timeoutMs": optional_ms(self.timeout, "timeout"),
            **backoff_fields(self.backoff),
            "callback": callback_api(self.callback),
            "priority": self.priority,
            "concurrencyKey": self.concurrency_key,
            "guarantee": self.guarantee.upper() if self.guarantee else None,
            "expiresInMs": optional_ms(self.expires_in, "expires_in"),
        }
        out.update((k, v) for k, v in options.items() if v is not None)
        return out

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> JobTemplate:
        """The template as the API spells it (a schedule's `job`, or `emit schedules put --job`)."""
        callback = data.get("callback")
        guarantee = data.get("guarantee")
        return cls(
            name=data["name"],
            payload=data.get("payload"),
            max_attempts=data.get("maxAttempts"),
            timeout=optional_from_ms(data.get("timeoutMs")),
            backoff=Backoff.from_api(data.get("backoffMs"), data.get("backoff")),
            callback=Callback(callback["url"], callback.get("headers") or {}) if callback else None,
            priority=data.get("priority"),
            concurrency_key=data.get("concurrencyKey"),
            guarantee=cast(Guarantee, str(guarantee).lower()) if guarantee else None,
            expires_in=optional_from_ms(data.get("expiresInMs")),
        )


@dataclass(frozen=True)
class LastRun:
    """The job a schedule made last, and the fire time it was made for (a trigger's: when
    it was triggered)."""

    at_ms: int
    job_id: str

    @property
    def at(self) -> datetime:
        return utc(self.at_ms)


@dataclass(frozen=True)
class Schedule:
    """A schedule: the job `job` made at each time `cron` names in `timezone`."""

    id: str
    space: str
    cron: str
    timezone: str
    """An IANA timezone: the cron's times are its local times."""
    job: JobTemplate
    paused: bool
    overlap: Overlap
    created_at_ms: int
    updated_at_ms: int
    next_runs_at_ms: tuple[int, ...]
    """The next five fire times; none while paused."""
    last_run: LastRun | None
    """None: it has made no job yet."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def next_runs(self) -> builtins.list[datetime]:
        return [utc(ms) for ms in self.next_runs_at_ms]

    @property
    def created_at(self) -> datetime:
        return utc(self.created_at_ms)

    @property
    def updated_at(self) -> datetime:
        return utc(self.updated_at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Schedule:
        last = data.get("lastRun")
        return cls(
            id=data["id"],
            space=data["space"],
            cron=data["cron"],
            timezone=data["timezone"],
            job=JobTemplate.from_api(data["job"]),
            paused=data["paused"],
            overlap=cast(Overlap, str(data["overlap"]).lower()),
            created_at_ms=data["createdAtMs"],
            updated_at_ms=data["updatedAtMs"],
            next_runs_at_ms=tuple(data["nextRunsAtMs"]),
            last_run=LastRun(last["atMs"], last["jobId"]) if last else None,
            raw=dict(data),
        )


class ScheduleFlows:
    """The schedule calls of one space, without I/O (`emit.calls`)."""

    def __init__(self, space: str | None) -> None:
        self.space = space

    def _path(self, suffix: str = "") -> str:
        if not self.space:
            raise ValueError("no space: pass space= to Emit(), or set EMIT_SPACE")
        return f"/v1/spaces/{quote(self.space, safe='')}/schedules{suffix}"

    def _one(self, schedule_id: str, suffix: str = "") -> str:
        return self._path(f"/{quote(schedule_id, safe='')}{suffix}")

    def put(
        self,
        schedule_id: str,
        *,
        cron: str,
        job: JobTemplate | Mapping[str, Any],
        timezone: str = "UTC",
        paused: bool = False,
        overlap: Overlap = "allow",
    ) -> Op[Schedule]:
        """Create the schedule, or replace it whole (admin scope); a replaced one keeps its
        creation time, its last run, and a fire time not made yet if `cron` and `timezone`
        are unchanged. `job` is a `JobTemplate`, or a mapping of its fields. Sent again
        after a lost answer: the second put sets what the first did."""
        body = {
            "cron": cron,
            "timezone": timezone,
            "job": _template(job).to_api(),
            "paused": paused,
            "overlap": overlap.upper(),
        }
        answer = yield Call("PUT", self._one(schedule_id), body=body, repeatable=True)
        return Schedule.from_api(answer)

    def get(self, schedule_id: str) -> Op[Schedule]:
        """`NotFound` when the space has no such schedule (read scope)."""
        return Schedule.from_api((yield Call("GET", self._one(schedule_id), repeatable=True)))

    def list(self, *, limit: int | None = None, page_size: int = 100) -> Stream[Schedule]:
        """The space's schedules by id, a page at a time as it is iterated; `limit` stops
        after that many (read scope)."""
        return pages(self._path(), "schedules", {}, page_size=page_size, limit=limit, parse=Schedule.from_api)

    def update(self, schedule_id: str, **fields: Any) -> Op[Schedule]:
        """Change only the fields given, e.g. `update("nightly", cron="0 3 * * *")` (admin
        scope); `job` is replaced whole. Changing `cron` or `timezone`, or resuming, moves
        the next fire time to the first after now: missed times are not made up."""
        unknown = sorted(set(fields) - _FIELDS)
        if unknown:
            raise TypeError(f"not a schedule field: {', '.join(unknown)}")
        body = dict(fields)
        if "job" in body:
            body["job"] = _template(body["job"]).to_api()
        if "overlap" in body:
            body["overlap"] = str(body["overlap"]).upper()
        answer = yield Call("PATCH", self._one(schedule_id), body=body, repeatable=True)
        return Schedule.from_api(answer)

    def pause(self, schedule_id: str) -> Op[Schedule]:
        """Make no jobs until resumed; the times passed meanwhile are not made up."""
        return (yield from self.update(schedule_id, paused=True))

    def resume(self, schedule_id: str) -> Op[Schedule]:
        return (yield from self.update(schedule_id, paused=False))

    def delete(self, schedule_id: str) -> Op[None]:
        """Delete it (admin scope); jobs it made stay. `NotFound` for an unknown id, also
        when a first delete's answer was lost and the SDK sent it again."""
        yield Call("DELETE", self._one(schedule_id), repeatable=True)

    def trigger(self, schedule_id: str, *, key: str | None = None) -> Op[Created]:
        """Make one job of the schedule now, whatever its times, pause and overlap (admin
        scope); it becomes the schedule's last run. With a `key` (the job's idempotency
        key) a repeat answers the same job (`duplicate`), so the SDK sends it again after a
        lost answer; without one it does not, as that could make two."""
        body = {"key": key} if key is not None else None
        answer = yield Call("POST", self._one(schedule_id, ":trigger"), body=body, repeatable=key is not None)
        return Created.from_api(answer)


class Schedules:
    """The space's cron schedules (`Emit.schedules`)."""

    def __init__(self, carrier: Carrier, space: str | None) -> None:
        self._carrier = carrier
        self._flows = ScheduleFlows(space)

    put = blocking(ScheduleFlows.put)
    get = blocking(ScheduleFlows.get)
    list = blocking_stream(ScheduleFlows.list)
    update = blocking(ScheduleFlows.update)
    pause = blocking(ScheduleFlows.pause)
    resume = blocking(ScheduleFlows.resume)
    delete = blocking(ScheduleFlows.delete)
    trigger = blocking(ScheduleFlows.trigger)


class AsyncSchedules:
    """The space's cron schedules (`AsyncEmit.schedules`), awaited."""

    def __init__(self, carrier: AsyncCarrier, space: str | None) -> None:
        self._carrier = carrier
        self._flows = ScheduleFlows(space)

    put = awaiting(ScheduleFlows.put)
    get = awaiting(ScheduleFlows.get)
    list = awaiting_stream(ScheduleFlows.list)
    update = awaiting(ScheduleFlows.update)
    pause = awaiting(ScheduleFlows.pause)
    resume = awaiting(ScheduleFlows.resume)
    delete = awaiting(ScheduleFlows.delete)
    trigger = awaiting(ScheduleFlows.trigger)


def _template(job: JobTemplate | Mapping[str, Any]) -> JobTemplate:
    return job if isinstance(job, JobTemplate) else JobTemplate(**job)
