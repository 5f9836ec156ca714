"""What the SDK hands back and takes: jobs, their lines and events, outcomes, tokens.

Python names and lower-case enumerations, as the contract asks of SDKs (`"completed"`,
`"duplicate"`, `"already_finished"`). Times are Python's: each instant a timezone-aware
UTC `datetime` (`job.created_at`), each duration a `timedelta` (`job.timeout`), and what
the SDK takes is the same (`emit.units`: a duration may also be a number of seconds).
An answer also keeps the API's Unix milliseconds under the API's names (`created_at_ms`),
so the API reference reads across; nothing the SDK is given is in ms. Every answer keeps `raw`,
the JSON exactly as the API sent it: `emit ... --json` prints it, and it holds fields
this version of the SDK does not know yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, cast

from emit.units import (
    Duration,
    as_timedelta,
    from_ms,
    optional_from_ms,
    optional_instant_ms,
    optional_ms,
    optional_timedelta,
    optional_utc,
    utc,
)

JobStatus = Literal["pending", "running", "completed", "failed", "cancelled", "stalled"]
FINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled", "stalled"})
Guarantee = Literal["at_least_once", "at_most_once"]
"""`at_most_once`: never handed out again once an attempt may have started; a lease that
ends without a report moves it to `stalled` instead of retrying it."""
LogLevel = Literal["trace", "debug", "info", "warn", "error", "fatal"]
LOG_LEVELS: tuple[str, ...] = ("trace", "debug", "info", "warn", "error", "fatal")
Scope = Literal["create", "read", "work", "admin"]
BackoffKind = Literal["exponential", "linear", "constant"]


@dataclass(frozen=True)
class Backoff:
    """How the waits between a job's attempts grow; a part left None is the space's (or its
    name's defaults). The n-th failure waits `first` × 2^(n−1) (`exponential`), `first` × n
    (`linear`) or `first` (`constant`), never more than `max`; `jitter` draws each wait
    from its upper half. `first` and `max` are timedeltas (or seconds).

    Wherever the SDK takes a `backoff=`, a plain duration means `Backoff(first=...)`."""

    kind: BackoffKind | None = None
    first: timedelta | None = None
    """The first wait after a failure (the API's `backoffMs`)."""
    max: timedelta | None = None
    """The longest wait (the API's `backoff.maxMs`)."""
    jitter: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "first", optional_timedelta(self.first, "backoff.first"))
        object.__setattr__(self, "max", optional_timedelta(self.max, "backoff.max"))

    def to_api(self) -> dict[str, Any]:
        """The API's `backoff` object (`first` goes beside it, as `backoffMs`)."""
        out = {"kind": self.kind, "maxMs": optional_ms(self.max, "backoff.max"), "jitter": self.jitter}
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def from_api(cls, backoff_ms: int | None, data: Mapping[str, Any] | None) -> Backoff | None:
        """From the API's `backoffMs` and `backoff` side by side; None when neither is set."""
        if backoff_ms is None and not data:
            return None
        data = data or {}
        return cls(
            data.get("kind"),
            optional_from_ms(backoff_ms),
            optional_from_ms(data.get("maxMs")),
            data.get("jitter"),
        )


def backoff_fields(backoff: Backoff | Duration | None, *, nulls: bool = False) -> dict[str, Any]:
    """`backoffMs` and `backoff` as the API takes them, from a `Backoff` or a first wait.
    `nulls`: a part not set is sent as null (a setting put back to its default)."""
    if backoff is not None and not isinstance(backoff, Backoff):
        backoff = Backoff(first=as_timedelta(backoff, "backoff"))
    first = optional_ms(backoff.first, "backoff.first") if backoff else None
    shape = backoff.to_api() if backoff else {}
    out: dict[str, Any] = {"backoffMs": first, "backoff": shape or None}
    return out if nulls else {k: v for k, v in out.items() if v is not None}


def callback_api(callback: Callback | None) -> dict[str, Any] | None:
    return {"url": callback.url, "headers": dict(callback.headers)} if callback else None


DeliveryState = Literal["pending", "delivered", "gave_up"]


@dataclass(frozen=True)
class Delivery:
    """A finished job's callback, as one job's `get` reads it: `pending` until delivered or
    given up, with its tries so far and the receiver's last answer."""

    state: DeliveryState
    attempts: int
    last_status: int | None = None
    """The receiver's HTTP status, when it answered."""
    last_error: str | None = None
    last_attempt_at_ms: int | None = None
    delivered_at_ms: int | None = None
    next_at_ms: int | None = None
    """Pending: the next try."""

    @property
    def last_attempt_at(self) -> datetime | None:
        return optional_utc(self.last_attempt_at_ms)

    @property
    def delivered_at(self) -> datetime | None:
        return optional_utc(self.delivered_at_ms)

    @property
    def next_at(self) -> datetime | None:
        return optional_utc(self.next_at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Delivery:
        return cls(
            cast(DeliveryState, str(data["state"]).lower()),
            data["attempts"],
            data.get("lastStatus"),
            data.get("lastError"),
            data.get("lastAttemptAtMs"),
            data.get("deliveredAtMs"),
            data.get("nextAtMs"),
        )


@dataclass(frozen=True)
class Callback:
    """Where emit POSTs when the job finishes; header values are never shown again (a job
    read back names its headers only). `delivery`: how sending it went, once the job has
    finished (one job's `get` only; None before, and in lists)."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    delivery: Delivery | None = None

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Callback:
        delivery = data.get("delivery")
        return cls(data["url"], data.get("headers") or {}, Delivery.from_api(delivery) if delivery else None)


@dataclass(frozen=True)
class NewJob:
    """One job to create; everything but the name is optional (`jobs.create` describes each).
    Durations are timedeltas or seconds; instants, timezone-aware datetimes."""

    name: str
    payload: Any = None
    key: str | None = None
    delay: Duration | None = None
    run_at: datetime | None = None
    max_attempts: int | None = None
    timeout: Duration | None = None
    backoff: Backoff | Duration | None = None
    callback: Callback | None = None
    priority: int | None = None
    """-1,000 to 1,000, higher first (0 when left out)."""
    concurrency_key: str | None = None
    """Jobs sharing a key share their name's per-key limits."""
    guarantee: Guarantee | None = None
    """`at_least_once` when left out (or the defaults the space sets for the name)."""
    expires_at: datetime | None = None
    """The deadline: not finished by then, the job is cancelled (`expired`)."""
    expires_in: Duration | None = None
    """The deadline as a time from the create; not with `expires_at`."""
    traceparent: str | None = None
    """A W3C trace context for this job; left None, `create` sends the current OpenTelemetry
    context (when OpenTelemetry is installed and a span is active) for every job of the call."""

    def to_api(self) -> dict[str, Any]:
        if self.delay is not None and self.run_at is not None:
            raise ValueError("give delay or run_at, not both")
        if self.expires_at is not None and self.expires_in is not None:
            raise ValueError("give expires_at or expires_in, not both")
        out: dict[str, Any] = {"name": self.name, "payload": self.payload}
        options = {
            "key": self.key,
            "delayMs": optional_ms(self.delay, "delay"),
            "runAtMs": optional_instant_ms(self.run_at, "run_at"),
            "maxAttempts": self.max_attempts,
            "timeoutMs": optional_ms(self.timeout, "timeout"),
            **backoff_fields(self.backoff),
            "callback": callback_api(self.callback),
            "priority": self.priority,
            "concurrencyKey": self.concurrency_key,
            "guarantee": self.guarantee.upper() if self.guarantee else None,
            "expiresAtMs": optional_instant_ms(self.expires_at, "expires_at"),
            "expiresInMs": optional_ms(self.expires_in, "expires_in"),
            "traceparent": self.traceparent,
        }
        out.update((k, v) for k, v in options.items() if v is not None)
        return out


@dataclass(frozen=True)
class Created:
    """A create's answer: the job's id, and whether it is new or a key's earlier job."""

    id: str
    outcome: Literal["new", "duplicate"]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def new(self) -> bool:
        return self.outcome == "new"

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Created:
        return cls(data["id"], cast(Any, str(data["outcome"]).lower()), dict(data))


@dataclass(frozen=True)
class Progress:
    percent: float
    message: str | None = None


WaitReason = Literal[
    "delay", "backoff", "paused", "concurrency", "rate", "key_concurrency", "key_rate", "worker"
]


@dataclass(frozen=True)
class WaitingOn:
    """Why a pending job is not running: its first time has not come (`delay`), it waits
    before a retry (`backoff`; both with `until_ms`), its name is paused (`paused`), has
    `concurrency` jobs running (`concurrency`) or has used up its rate (`rate`, with
    `until_ms`: when the next hand-out is allowed), its `concurrency_key` (`key`) has
    `per_key_concurrency` jobs running (`key_concurrency`) or has used up its key's rate
    (`key_rate`, with `until_ms`), or it is claimable and no worker has asked for its name
    (`worker`)."""

    reason: WaitReason
    until_ms: int | None = None
    key: str | None = None

    @property
    def until(self) -> datetime | None:
        return optional_utc(self.until_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> WaitingOn:
        return cls(cast(WaitReason, str(data["reason"]).lower()), data.get("untilMs"), data.get("key"))


@dataclass(frozen=True)
class Fired:
    """The schedule that made a job, and the fire time it was made for (a trigger's: when
    it was triggered)."""

    id: str
    at_ms: int

    @property
    def at(self) -> datetime:
        return utc(self.at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Fired:
        return cls(data["id"], data["atMs"])


AttemptOutcome = Literal["completed", "failed", "released", "expired", "cancelled"]


@dataclass(frozen=True)
class Attempt:
    """One hand-out of a job: when it started, and when and how it ended (`ended_at_ms` and
    `outcome` are None while it runs). `error` is a failed attempt's error, its first 100
    characters (the job's `error` is the last one in full)."""

    attempt: int
    started_at_ms: int
    ended_at_ms: int | None = None
    outcome: AttemptOutcome | None = None
    error: str | None = None

    @property
    def started_at(self) -> datetime:
        return utc(self.started_at_ms)

    @property
    def ended_at(self) -> datetime | None:
        return optional_utc(self.ended_at_ms)

    @property
    def ran_for(self) -> timedelta | None:
        """How long it ran, once it has ended."""
        return None if self.ended_at_ms is None else from_ms(self.ended_at_ms - self.started_at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Attempt:
        outcome = data.get("outcome")
        return cls(
            data["attempt"],
            data["startedAtMs"],
            data.get("endedAtMs"),
            cast(AttemptOutcome, outcome.lower()) if outcome else None,
            data.get("error"),
        )


@dataclass(frozen=True)
class Job:
    """A job as `get` and `list` read it (`list` leaves out payload and result)."""

    id: str
    space: str
    name: str
    status: JobStatus
    attempt: int
    """Hand-outs so far."""
    failures: int
    max_attempts: int
    timeout_ms: int
    created_at_ms: int
    run_at_ms: int
    key: str | None = None
    payload: Any = None
    result: Any = None
    error: str | None = None
    progress: Progress | None = None
    backoff: Backoff | None = None
    """Its first wait after a failure (`first`) and how the waits grow, as set on it."""
    callback: Callback | None = None
    ready_at_ms: int | None = None
    """Pending: when it can next be claimed."""
    lease_until_ms: int | None = None
    """Running: when the current hold ends unless renewed."""
    finished_at_ms: int | None = None
    line_count: int = 0
    event_count: int = 0
    priority: int = 0
    concurrency_key: str | None = None
    guarantee: Guarantee = "at_least_once"
    expires_at_ms: int | None = None
    """The deadline: not finished by then, the job is cancelled with error `expired`."""
    waiting_on: WaitingOn | None = None
    """Pending (`get` only): why it is not running yet."""
    retry_of: str | None = None
    """The failed job this one retries (`jobs.retry`)."""
    schedule: Fired | None = None
    """The schedule that made it (`emit.schedules`), and for which fire time."""
    traceparent: str | None = None
    """The W3C trace context it was created with, if any: its worker's spans continue it."""
    attempts: tuple[Attempt, ...] = ()
    """(`get` only) its last 10 attempts, oldest first."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def timeout(self) -> timedelta:
        """An attempt's lease, unless its worker's claim asked for another."""
        return from_ms(self.timeout_ms)

    @property
    def created_at(self) -> datetime:
        return utc(self.created_at_ms)

    @property
    def run_at(self) -> datetime:
        """Its first run time: not claimable before."""
        return utc(self.run_at_ms)

    @property
    def ready_at(self) -> datetime | None:
        """Pending: when it can next be claimed."""
        return optional_utc(self.ready_at_ms)

    @property
    def lease_until(self) -> datetime | None:
        """Running: when the current hold ends unless renewed."""
        return optional_utc(self.lease_until_ms)

    @property
    def finished_at(self) -> datetime | None:
        return optional_utc(self.finished_at_ms)

    @property
    def expires_at(self) -> datetime | None:
        """The deadline: not finished by then, the job is cancelled with error `expired`."""
        return optional_utc(self.expires_at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Job:
        progress = data.get("progress")
        backoff = data.get("backoff")
        callback = data.get("callback")
        lease = data.get("leaseUntilMs")
        return cls(
            id=data["id"],
            space=data["space"],
            name=data["name"],
            status=cast(JobStatus, str(data["status"]).lower()),
            attempt=data["attempt"],
            failures=data.get("failures", 0),
            max_attempts=data["maxAttempts"],
            timeout_ms=data["timeoutMs"],
            created_at_ms=data["createdAtMs"],
            run_at_ms=data["runAtMs"],
            key=data.get("key"),
            payload=data.get("payload"),
            result=data.get("result"),
            error=data.get("error"),
            progress=Progress(progress["percent"], progress.get("message")) if progress else None,
            backoff=Backoff.from_api(data.get("backoffMs"), backoff),
            callback=Callback.from_api(callback) if callback else None,
            ready_at_ms=data.get("readyAtMs"),
            lease_until_ms=int(lease) if lease is not None else None,
            finished_at_ms=data.get("finishedAtMs"),
            line_count=data.get("lineCount", 0),
            event_count=data.get("eventCount", 0),
            priority=data.get("priority", 0),
            concurrency_key=data.get("concurrencyKey"),
            guarantee=cast(Guarantee, str(data.get("guarantee", "AT_LEAST_ONCE")).lower()),
            expires_at_ms=data.get("expiresAtMs"),
            waiting_on=WaitingOn.from_api(data["waitingOn"]) if data.get("waitingOn") else None,
            retry_of=data.get("retryOf"),
            schedule=Fired.from_api(data["schedule"]) if data.get("schedule") else None,
            traceparent=data.get("traceparent"),
            attempts=tuple(Attempt.from_api(a) for a in data.get("attempts", ())),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Line:
    """One log line a worker reported, in order by `seq`."""

    seq: int
    level: LogLevel
    message: str
    at_ms: int
    source: str | None = None
    metadata: Any = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def at(self) -> datetime:
        return utc(self.at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Line:
        return cls(
            seq=data["seq"],
            level=cast(LogLevel, str(data["level"]).lower()),
            message=data["message"],
            at_ms=data["atMs"],
            source=data.get("source"),
            metadata=data.get("metadata"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Event:
    """One event a worker reported: `data` is its JSON, in order by `seq`."""

    seq: int
    at_ms: int
    data: Any
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def at(self) -> datetime:
        return utc(self.at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Event:
        return cls(seq=data["seq"], at_ms=data["atMs"], data=data.get("event"), raw=dict(data))


@dataclass(frozen=True)
class Rejection:
    reason: str
    """`stale`, `not_running`, `already_finished`, `not_found`, `too_many_events`, `invalid`,
    `race`, or (a retry) `not_retryable`."""
    message: str


@dataclass(frozen=True)
class Outcome:
    """One cancel's or report's answer: the job's status after it, or why it was refused."""

    status: JobStatus | None = None
    rejection: Rejection | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Outcome:
        rejected = data.get("rejection")
        if rejected:
            reason = str(rejected.get("reason", "")).lower()
            return cls(rejection=Rejection(reason, str(rejected.get("message", ""))), raw=dict(data))
        return cls(status=cast(JobStatus, str(data["status"]).lower()), raw=dict(data))


@dataclass(frozen=True)
class Retried:
    """One retry's answer: the new job (`id`, `new` or `duplicate` when the job was retried
    before) made from the failed job `retry_of`, or why there is none (`rejection`:
    `not_found`, `not_retryable`)."""

    id: str | None = None
    retry_of: str | None = None
    outcome: Literal["new", "duplicate"] | None = None
    rejection: Rejection | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def new(self) -> bool:
        return self.outcome == "new"

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Retried:
        rejected = data.get("rejection")
        if rejected:
            reason = str(rejected.get("reason", "")).lower()
            return cls(rejection=Rejection(reason, str(rejected.get("message", ""))), raw=dict(data))
        outcome = cast(Any, str(data["outcome"]).lower())
        return cls(id=data["id"], retry_of=data["retryOf"], outcome=outcome, raw=dict(data))


@dataclass(frozen=True)
class Claimed:
    """A job handed to a worker: keep `id` and `attempt`, every report names both."""

    id: str
    attempt: int
    name: str
    payload: Any
    lease_until_ms: int
    guarantee: Guarantee = "at_least_once"
    """`at_most_once`: once its handler has started, never give it back (release)."""
    traceparent: str | None = None
    """The producer's W3C trace context: the worker runs the handler in a span under it."""
    max_attempts: int | None = None
    """Failed attempts before the job fails (None: the service did not say)."""
    failures: int | None = None
    """Attempts that failed before this one (None: the service did not say)."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def lease_until(self) -> datetime:
        return utc(self.lease_until_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Claimed:
        return cls(
            id=data["id"],
            attempt=data["attempt"],
            name=data["name"],
            payload=data.get("payload"),
            lease_until_ms=int(data["leaseUntilMs"]),
            guarantee=cast(Guarantee, str(data.get("guarantee", "AT_LEAST_ONCE")).lower()),
            traceparent=data.get("traceparent"),
            max_attempts=data.get("maxAttempts"),
            failures=data.get("failures"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class Token:
    """An API token, without its secret."""

    id: str
    scopes: tuple[Scope, ...]
    spaces: tuple[str, ...] | None
    """None: every space."""
    name: str | None
    created_at_ms: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def created_at(self) -> datetime:
        return utc(self.created_at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Token:
        spaces = data.get("spaces")
        return cls(
            id=data["id"],
            scopes=tuple(data["scopes"]),
            spaces=tuple(spaces) if spaces is not None else None,
            name=data.get("name"),
            created_at_ms=data["createdAtMs"],
            raw=dict(data),
        )


@dataclass(frozen=True)
class MintedToken:
    """A token just made: `secret` is the bearer token, shown this once and never again."""

    token: Token
    secret: str = field(repr=False)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> MintedToken:
        return cls(Token.from_api(data), data["token"])


@dataclass(frozen=True)
class FollowLink:
    """A link to follow one job with no token (`GET url`), read-only, until `expires_at`.

    Anyone holding the url or token can read the job's status, progress, lines and result
    until then: hand it out as you would the job's result itself."""

    url: str = field(repr=False)
    token: str = field(repr=False)
    expires_at_ms: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def expires_at(self) -> datetime:
        return utc(self.expires_at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> FollowLink:
        return cls(url=data["url"], token=data["token"], expires_at_ms=data["expiresAtMs"], raw=dict(data))


@dataclass(frozen=True)
class JobPage:
    """One page of a space's jobs, newest first, and the cursor of the next (None: none)."""

    jobs: list[Job]
    cursor: str | None = None
