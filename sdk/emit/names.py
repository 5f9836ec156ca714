"""`emit.names`: flow control per job name in the client's space: a name's policy read,
changed, paused, resumed and reset, and the space's diagnostics.

Policy fields are keyword arguments in Python spelling (`per_key_concurrency=3`); None
means no limit (for `aging_interval`: strict priority), as `null` does in the API. Times
are timedeltas (or seconds): `Rate(10, timedelta(seconds=1))`, `aging_interval=30`.
A name has a policy before its first job, so a name can be paused before work arrives.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, cast
from urllib.parse import quote

from emit.calls import AsyncCarrier, Call, Carrier, Op, awaiting, blocking
from emit.models import WaitReason
from emit.units import Duration, as_timedelta, duration_ms, optional_from_ms, optional_utc


@dataclass(frozen=True)
class Rate:
    """At most `tokens` hand-outs per `interval` on average, in bursts of at most `tokens`;
    `interval` is a timedelta (or seconds): `Rate(10, timedelta(minutes=1))`."""

    tokens: int
    interval: timedelta

    def __post_init__(self) -> None:
        object.__setattr__(self, "interval", as_timedelta(self.interval, "rate.interval"))

    def to_api(self) -> dict[str, int]:
        return {"tokens": self.tokens, "intervalMs": duration_ms(self.interval, "rate.interval")}

    @classmethod
    def from_api(cls, data: Mapping[str, Any] | None) -> Rate | None:
        return cls(data["tokens"], timedelta(milliseconds=data["intervalMs"])) if data else None


PolicyField = Literal[
    "concurrency", "rate", "per_key_concurrency", "per_key_rate", "paused", "aging_interval"
]
POLICY_API_NAMES: dict[str, str] = {
    "concurrency": "concurrency",
    "rate": "rate",
    "per_key_concurrency": "perKeyConcurrency",
    "per_key_rate": "perKeyRate",
    "paused": "paused",
    "aging_interval": "agingIntervalMs",
}
_PYTHON_NAMES = {api: python for python, api in POLICY_API_NAMES.items()}


@dataclass(frozen=True)
class Policy:
    """A name's policy in force; `overridden` names the fields the name sets itself (the
    others are the space's default)."""

    name: str
    concurrency: int | None
    rate: Rate | None
    per_key_concurrency: int | None
    per_key_rate: Rate | None
    paused: bool
    aging_interval: timedelta | None
    """How often a waiting job gains a step of priority; None: strict priority."""
    overridden: tuple[PolicyField, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_api(cls, data: Mapping[str, Any], name: str | None = None) -> Policy:
        return cls(
            name=data.get("name", name or ""),
            concurrency=data["concurrency"],
            rate=Rate.from_api(data.get("rate")),
            per_key_concurrency=data["perKeyConcurrency"],
            per_key_rate=Rate.from_api(data.get("perKeyRate")),
            paused=data["paused"],
            aging_interval=optional_from_ms(data["agingIntervalMs"]),
            overridden=tuple(cast(PolicyField, _PYTHON_NAMES[f]) for f in data.get("overridden", ())),
            raw=dict(data),
        )


@dataclass(frozen=True)
class NameDiagnostics:
    """Where one name's work stands: counts from the ready index (a second behind at most,
    stopped at 10,000 when `capped`), its policy, and why its pending jobs wait."""

    name: str
    pending: int
    claimable: int
    running: int
    """Running jobs: exact while the name has a `concurrency`, else the service's count (a
    few seconds behind)."""
    capped: bool
    policy: Policy
    waiting_on: tuple[WaitReason, ...]
    oldest_claimable_at_ms: int | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def oldest_claimable_at(self) -> datetime | None:
        return optional_utc(self.oldest_claimable_at_ms)

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> NameDiagnostics:
        return cls(
            name=data["name"],
            pending=data["pending"],
            claimable=data["claimable"],
            running=int(data.get("running") or 0),
            capped=data.get("capped", False),
            policy=Policy.from_api(data["policy"], data["name"]),
            waiting_on=tuple(cast(WaitReason, str(r).lower()) for r in data.get("waitingOn", ())),
            oldest_claimable_at_ms=data.get("oldestClaimableAtMs"),
            raw=dict(data),
        )


class NameFlows:
    """The flow-control calls of one space, without I/O (`emit.calls`)."""

    def __init__(self, space: str | None) -> None:
        self.space = space

    def _space_path(self) -> str:
        if not self.space:
            raise ValueError("no space: pass space= to Emit(), or set EMIT_SPACE")
        return f"/v1/spaces/{quote(self.space, safe='')}"

    def _path(self, name: str, suffix: str = "") -> str:
        return f"{self._space_path()}/names/{quote(name, safe='')}/policy{suffix}"

    def policy(self, name: str) -> Op[Policy]:
        """The policy in force for `name` (read scope)."""
        return Policy.from_api((yield Call("GET", self._path(name), repeatable=True)))

    def update(self, name: str, **fields: Any) -> Op[Policy]:
        """Set fields of the name's own policy, e.g. `update("mail", concurrency=5,
        rate=Rate(10, timedelta(seconds=1)), aging_interval=timedelta(seconds=30))`; None
        means no limit (admin scope). Fields left out keep their values."""
        unknown = sorted(set(fields) - set(POLICY_API_NAMES))
        if unknown:
            raise TypeError(f"not a policy field: {', '.join(unknown)}")
        body = {POLICY_API_NAMES[k]: policy_value(k, v) for k, v in fields.items()}
        return Policy.from_api((yield Call("PATCH", self._path(name), body=body, repeatable=True)))

    def pause(self, name: str) -> Op[Policy]:
        """Hand out nothing of `name` until resumed; creates are still accepted."""
        return (yield from self.update(name, paused=True))

    def resume(self, name: str) -> Op[Policy]:
        return (yield from self.update(name, paused=False))

    def reset(self, name: str) -> Op[Policy]:
        """Every field back to the space's default."""
        return Policy.from_api((yield Call("POST", self._path(name, ":reset"), repeatable=True)))

    def diagnostics(self) -> Op[builtins.list[NameDiagnostics]]:
        """Each name with pending jobs or a policy of its own, by name (read scope)."""
        answer = yield Call("GET", f"{self._space_path()}/diagnostics", repeatable=True)
        return [NameDiagnostics.from_api(n) for n in answer["names"]]


class Names:
    """Flow control per job name in the client's space (`Emit.names`)."""

    def __init__(self, carrier: Carrier, space: str | None) -> None:
        self._carrier = carrier
        self._flows = NameFlows(space)

    policy = blocking(NameFlows.policy)
    update = blocking(NameFlows.update)
    pause = blocking(NameFlows.pause)
    resume = blocking(NameFlows.resume)
    reset = blocking(NameFlows.reset)
    diagnostics = blocking(NameFlows.diagnostics)


class AsyncNames:
    """Flow control per job name in the client's space (`AsyncEmit.names`), awaited."""

    def __init__(self, carrier: AsyncCarrier, space: str | None) -> None:
        self._carrier = carrier
        self._flows = NameFlows(space)

    policy = awaiting(NameFlows.policy)
    update = awaiting(NameFlows.update)
    pause = awaiting(NameFlows.pause)
    resume = awaiting(NameFlows.resume)
    reset = awaiting(NameFlows.reset)
    diagnostics = awaiting(NameFlows.diagnostics)


def policy_value(name: str, value: Any) -> Any:
    """A policy field's value as the API takes it."""
    if isinstance(value, Rate):
        return value.to_api()
    if name == "aging_interval" and value is not None:
        return duration_ms(cast(Duration, value), "aging_interval")
    return value
