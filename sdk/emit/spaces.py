"""`emit.spaces`: read and change a space's settings (an admin token).

Settings are keyword arguments in Python spelling (`max_in_flight=10`, `timeout=
timedelta(minutes=5)`: durations as timedeltas or seconds, never ms) and answered as a
typed `SpaceSettings`, in the same spelling; its `raw` keeps the API's JSON. Defaults per
job name have helpers of their own (`job_defaults`, `set_job_defaults`,
`clear_job_defaults`): their map is keyed by job name, which stays as written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
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
from emit.models import Backoff, backoff_fields
from emit.names import POLICY_API_NAMES, Policy, policy_value
from emit.units import Duration, from_ms, optional_from_ms, optional_ms, optional_timedelta

Guarantee = Literal["at_least_once", "at_most_once"]
SettledStatus = Literal["completed", "failed", "cancelled", "stalled"]


@dataclass(frozen=True)
class JobDefaults:
    """Options a job name's jobs take when their creator leaves them out (a space's
    `jobDefaults`); None: not set here (the space's setting, or the built-in default).
    Durations are timedeltas (or seconds)."""

    priority: int | None = None
    max_attempts: int | None = None
    timeout: timedelta | None = None
    backoff: Backoff | None = None
    """The first wait after a failure and how the waits grow (a plain duration: the first)."""
    guarantee: Guarantee | None = None
    concurrency_key: str | None = None
    delay: timedelta | None = None
    """Not applied to a job created with `run_at`."""
    expires_in: timedelta | None = None
    """Not applied to a job created with an `expires_at`."""

    def __post_init__(self) -> None:
        for name in ("timeout", "delay", "expires_in"):
            object.__setattr__(self, name, optional_timedelta(getattr(self, name), name))
        if self.backoff is not None and not isinstance(self.backoff, Backoff):
            object.__setattr__(self, "backoff", Backoff(first=cast(Duration, self.backoff)))

    def to_api(self) -> dict[str, Any]:
        """Every field, a None one as null: sent, it makes the name's defaults exactly these."""
        return {
            "priority": self.priority,
            "maxAttempts": self.max_attempts,
            "timeoutMs": optional_ms(self.timeout, "timeout"),
            **backoff_fields(self.backoff, nulls=True),
            "guarantee": self.guarantee.upper() if self.guarantee else None,
            "concurrencyKey": self.concurrency_key,
            "delayMs": optional_ms(self.delay, "delay"),
            "expiresInMs": optional_ms(self.expires_in, "expires_in"),
        }

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> JobDefaults:
        guarantee = data.get("guarantee")
        return cls(
            priority=data.get("priority"),
            max_attempts=data.get("maxAttempts"),
            timeout=optional_from_ms(data.get("timeoutMs")),
            backoff=Backoff.from_api(data.get("backoffMs"), data.get("backoff")),
            guarantee=cast(Guarantee, str(guarantee).lower()) if guarantee else None,
            concurrency_key=data.get("concurrencyKey"),
            delay=optional_from_ms(data.get("delayMs")),
            expires_in=optional_from_ms(data.get("expiresInMs")),
        )


@dataclass(frozen=True)
class SettledNotices:
    """Where settled notices go: a job of `name` for each job that ends in one of `statuses`."""

    name: str
    statuses: tuple[SettledStatus, ...]


@dataclass(frozen=True)
class SpaceSettings:
    """A space's settings in force, defaults filled in (`spaces.get`, `spaces.update`)."""

    space: str
    max_attempts: int
    timeout: timedelta
    backoff: Backoff
    unclaimed: timedelta | None
    """How long a job may wait claimable and unclaimed before it stalls; None: off."""
    key_window: timedelta
    """How long a key is held after its job finishes."""
    max_events: int
    max_in_flight: int | None
    """A cap on unfinished jobs; None: no cap."""
    webhook_secret_set: bool
    completed_retention: timedelta
    failed_retention: timedelta
    policy: Policy
    """The default policy of the space's job names (`name` is empty)."""
    job_defaults: dict[str, JobDefaults]
    on_failure: str | None
    """The job name failure notices are made with; None: none are made."""
    on_settled: SettledNotices | None
    metrics: tuple[str, ...]
    """The names whose own CloudWatch metrics are published."""
    in_flight: int
    """Its unfinished jobs: exact under a `max_in_flight`, else the service's count (a few
    seconds behind)."""
    wake_url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> SpaceSettings:
        failure = data.get("onFailure")
        settled = data.get("onSettled")
        return cls(
            space=data.get("space", ""),
            max_attempts=data["maxAttempts"],
            timeout=from_ms(data["timeoutMs"]),
            backoff=Backoff.from_api(data["backoffMs"], data.get("backoff")) or Backoff(),
            unclaimed=optional_from_ms(data.get("unclaimedMs")),
            key_window=from_ms(data["keyWindowMs"]),
            max_events=data["maxEvents"],
            max_in_flight=data.get("maxInFlight"),
            webhook_secret_set=bool((data.get("webhookSecret") or {}).get("set")),
            completed_retention=from_ms(data["completedRetentionMs"]),
            failed_retention=from_ms(data["failedRetentionMs"]),
            policy=Policy.from_api(data["policy"], ""),
            job_defaults={n: JobDefaults.from_api(d) for n, d in (data.get("jobDefaults") or {}).items()},
            on_failure=failure["name"] if failure else None,
            on_settled=(
                SettledNotices(
                    settled["name"], tuple(cast(SettledStatus, s.lower()) for s in settled["statuses"])
                )
                if settled
                else None
            ),
            metrics=tuple(data.get("metrics") or ()),
            in_flight=int(data.get("inFlight") or 0),
            wake_url=data.get("wakeUrl"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class SpaceEntry:
    """A space the token may use (`Spaces.list`)."""

    name: str
    in_flight: int
    """Its unfinished jobs: exact under a `maxInFlight`, else the service's count (a few
    seconds behind)."""

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> SpaceEntry:
        return cls(name=data["name"], in_flight=data["inFlight"])


class _Keep:
    """`update`'s default: the setting is left as it is (None would put it back to default)."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()

_DURATIONS = {
    "timeout": "timeoutMs",
    "unclaimed": "unclaimedMs",
    "key_window": "keyWindowMs",
    "completed_retention": "completedRetentionMs",
    "failed_retention": "failedRetentionMs",
}
_PLAIN = {
    "max_attempts": "maxAttempts",
    "max_events": "maxEvents",
    "max_in_flight": "maxInFlight",
    "webhook_secret": "webhookSecret",
    "metrics": "metrics",
}
_SHAPED = frozenset({"backoff", "policy", "job_defaults", "on_failure", "on_settled"})
SETTINGS = frozenset(_DURATIONS) | frozenset(_PLAIN) | _SHAPED
"""What `update` takes."""


def settings_body(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`update`'s keyword arguments as the API's PATCH body."""
    unknown = sorted(set(settings) - SETTINGS)
    if unknown:
        raise TypeError(f"not a space setting: {', '.join(unknown)} (one of {', '.join(sorted(SETTINGS))})")
    body: dict[str, Any] = {}
    for name, value in settings.items():
        if name in _DURATIONS:
            body[_DURATIONS[name]] = optional_ms(value, name)
        elif name in _PLAIN:
            body[_PLAIN[name]] = list(value) if name == "metrics" and value is not None else value
        elif name == "backoff":
            body.update(backoff_fields(value, nulls=value is None))
        elif name == "policy":
            body["policy"] = _policy(value)
        elif name == "job_defaults":
            body["jobDefaults"] = (
                None
                if value is None
                else {n: d.to_api() if d is not None else None for n, d in value.items()}
            )
        elif name == "on_failure":
            body["onFailure"] = {"name": value} if isinstance(value, str) else value
        else:
            body["onSettled"] = _settled(value)
    return body


def _policy(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    unknown = sorted(set(value) - set(POLICY_API_NAMES))
    if unknown:
        raise TypeError(f"not a policy field: {', '.join(unknown)}")
    return {POLICY_API_NAMES[k]: policy_value(k, v) for k, v in value.items()}


def _settled(value: SettledNotices | Mapping[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, SettledNotices):
        return {"name": value.name, "statuses": [s.upper() for s in value.statuses]}
    return {"name": value["name"], "statuses": [str(s).upper() for s in value["statuses"]]}


class SpaceFlows:
    """The space calls, without I/O (`emit.calls`)."""

    def __init__(self, space: str | None) -> None:
        self.space = space

    def _path(self, space: str | None) -> str:
        name = space or self.space
        if not name:
            raise ValueError("no space: pass space= to Emit(), or set EMIT_SPACE")
        return f"/v1/spaces/{quote(name, safe='')}"

    def list(self, *, limit: int | None = None, page_size: int = 100) -> Stream[SpaceEntry]:
        """The spaces the token may use (a `read` token's own spaces, or every space), in name
        order, a page at a time as it is iterated; `limit` stops after that many."""
        return pages("/v1/spaces", "spaces", {}, page_size=page_size, limit=limit, parse=SpaceEntry.from_api)

    def get(self, space: str | None = None) -> Op[SpaceSettings]:
        """The settings in force, with `in_flight` (the space's unfinished jobs, counted
        against its `max_in_flight`)."""
        return SpaceSettings.from_api((yield Call("GET", self._path(space), repeatable=True)))

    def update(
        self,
        space: str | None = None,
        *,
        max_attempts: int | None = KEEP,
        timeout: Duration | None = KEEP,
        backoff: Backoff | Duration | None = KEEP,
        unclaimed: Duration | None = KEEP,
        key_window: Duration | None = KEEP,
        max_events: int | None = KEEP,
        max_in_flight: int | None = KEEP,
        webhook_secret: str | None = KEEP,
        completed_retention: Duration | None = KEEP,
        failed_retention: Duration | None = KEEP,
        policy: Mapping[str, Any] | None = KEEP,
        job_defaults: Mapping[str, JobDefaults | None] | None = KEEP,
        on_failure: str | None = KEEP,
        on_settled: SettledNotices | Mapping[str, Any] | None = KEEP,
        metrics: Sequence[str] | None = KEEP,
    ) -> Op[SpaceSettings]:
        """Change the settings given, e.g. `update(max_in_flight=100, timeout=timedelta(
        minutes=5), webhook_secret="...")`; a setting left out keeps its value, and None puts
        it back to its default (for `max_in_flight` and `unclaimed`: off). Durations are
        timedeltas or seconds. `policy` is the space's default policy for its names, in
        `names.update`'s spelling (`{"concurrency": 5}`); `job_defaults` sets names' defaults
        (`{"mail": JobDefaults(...)}`, None for a name clears its own); `on_failure` and
        `on_settled` are where notices go (`notify_on_failure`, `notify_on_settled`)."""
        given = {k: v for k, v in locals().items() if k in SETTINGS and v is not KEEP}
        body = settings_body(given)
        return SpaceSettings.from_api((yield Call("PATCH", self._path(space), body=body, repeatable=True)))

    def notify_on_failure(self, name: str | None, *, space: str | None = None) -> Op[SpaceSettings]:
        """Make a job of `name` for each job of the space that ends failed or stalled (its
        notice as the payload); None: no more failure notices."""
        return (yield from self.update(space, on_failure=name))

    def notify_on_settled(
        self,
        name: str | None,
        statuses: Sequence[SettledStatus] = ("completed", "failed", "cancelled", "stalled"),
        *,
        space: str | None = None,
    ) -> Op[SpaceSettings]:
        """Make a job of `name` for each job of the space that ends in one of `statuses`;
        None: no more settled notices."""
        value = SettledNotices(name, tuple(statuses)) if name is not None else None
        return (yield from self.update(space, on_settled=value))

    def job_defaults(self, space: str | None = None) -> Op[dict[str, JobDefaults]]:
        """Each job name's defaults, by name (names without any are left out)."""
        return (yield from self.get(space)).job_defaults

    def set_job_defaults(
        self, name: str, defaults: JobDefaults, *, space: str | None = None
    ) -> Op[JobDefaults]:
        """Make `name`'s defaults exactly `defaults` (a field left None is unset), e.g.
        `set_job_defaults("mail", JobDefaults(max_attempts=10, priority=5))`. Jobs created
        after this take them for the options their creator leaves out."""
        settings = yield from self.update(space, job_defaults={name: defaults})
        return settings.job_defaults.get(name, JobDefaults())

    def clear_job_defaults(self, name: str | None = None, *, space: str | None = None) -> Op[None]:
        """Remove `name`'s defaults, or every name's (None)."""
        yield from self.update(space, job_defaults={name: None} if name is not None else None)


class Spaces:
    """A space's settings (`Emit.spaces`; the client's space unless one is named)."""

    def __init__(self, carrier: Carrier, space: str | None) -> None:
        self._carrier = carrier
        self._flows = SpaceFlows(space)

    list = blocking_stream(SpaceFlows.list)
    get = blocking(SpaceFlows.get)
    update = blocking(SpaceFlows.update)
    notify_on_failure = blocking(SpaceFlows.notify_on_failure)
    notify_on_settled = blocking(SpaceFlows.notify_on_settled)
    job_defaults = blocking(SpaceFlows.job_defaults)
    set_job_defaults = blocking(SpaceFlows.set_job_defaults)
    clear_job_defaults = blocking(SpaceFlows.clear_job_defaults)


class AsyncSpaces:
    """A space's settings (`AsyncEmit.spaces`), awaited."""

    def __init__(self, carrier: AsyncCarrier, space: str | None) -> None:
        self._carrier = carrier
        self._flows = SpaceFlows(space)

    list = awaiting_stream(SpaceFlows.list)
    get = awaiting(SpaceFlows.get)
    update = awaiting(SpaceFlows.update)
    notify_on_failure = awaiting(SpaceFlows.notify_on_failure)
    notify_on_settled = awaiting(SpaceFlows.notify_on_settled)
    job_defaults = awaiting(SpaceFlows.job_defaults)
    set_job_defaults = awaiting(SpaceFlows.set_job_defaults)
    clear_job_defaults = awaiting(SpaceFlows.clear_job_defaults)
