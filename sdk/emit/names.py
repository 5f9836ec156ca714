"""`emit.names`: flow control per job name in the client's space: a name's policy read,
changed, paused, resumed and reset, and the space's diagnostics.

Policy fields are keyword arguments in Python spelling (`per_key_concurrency=3`); None
means no limit (for `aging_interval_ms`: strict priority), as `null` does in the API.
A name has a policy before its first job, so a name can be paused before work arrives.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import quote

from emit.models import WaitReason
from emit.transport import Transport


@dataclass(frozen=True)
class Rate:
    """At most `tokens` hand-outs per `interval_ms` on average, in bursts of at most `tokens`."""

    tokens: int
    interval_ms: int

    def to_api(self) -> dict[str, int]:
        return {"tokens": self.tokens, "intervalMs": self.interval_ms}

    @classmethod
    def from_api(cls, data: Mapping[str, Any] | None) -> Rate | None:
        return cls(data["tokens"], data["intervalMs"]) if data else None


PolicyField = Literal[
    "concurrency", "rate", "per_key_concurrency", "per_key_rate", "paused", "aging_interval_ms"
]
_API_NAMES: dict[str, str] = {
    "concurrency": "concurrency",
    "rate": "rate",
    "per_key_concurrency": "perKeyConcurrency",
    "per_key_rate": "perKeyRate",
    "paused": "paused",
    "aging_interval_ms": "agingIntervalMs",
}
_PYTHON_NAMES = {api: python for python, api in _API_NAMES.items()}


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
    aging_interval_ms: int | None
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
            aging_interval_ms=data["agingIntervalMs"],
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


class Names:
    def __init__(self, transport: Transport, space: str | None) -> None:
        self._transport = transport
        self._space = space

    def _space_path(self) -> str:
        if not self._space:
            raise ValueError("no space: pass space= to Emit(), or set EMIT_SPACE")
        return f"/v1/spaces/{quote(self._space, safe='')}"

    def _path(self, name: str, suffix: str = "") -> str:
        return f"{self._space_path()}/names/{quote(name, safe='')}/policy{suffix}"

    def policy(self, name: str) -> Policy:
        """The policy in force for `name` (read scope)."""
        return Policy.from_api(self._transport.call("GET", self._path(name), repeatable=True))

    def update(self, name: str, **fields: Any) -> Policy:
        """Set fields of the name's own policy, e.g. `update("mail", concurrency=5,
        rate=Rate(10, 1_000))`; None means no limit (admin scope). Fields left out keep
        their values."""
        unknown = sorted(set(fields) - set(_API_NAMES))
        if unknown:
            raise TypeError(f"not a policy field: {', '.join(unknown)}")
        body = {_API_NAMES[k]: v.to_api() if isinstance(v, Rate) else v for k, v in fields.items()}
        return Policy.from_api(self._transport.call("PATCH", self._path(name), body=body, repeatable=True))

    def pause(self, name: str) -> Policy:
        """Hand out nothing of `name` until resumed; creates are still accepted."""
        return self.update(name, paused=True)

    def resume(self, name: str) -> Policy:
        return self.update(name, paused=False)

    def reset(self, name: str) -> Policy:
        """Every field back to the space's default."""
        answer = self._transport.call("POST", self._path(name, ":reset"), repeatable=True)
        return Policy.from_api(answer)

    def diagnostics(self) -> builtins.list[NameDiagnostics]:
        """Each name with pending jobs or a policy of its own, by name (read scope)."""
        answer = self._transport.call("GET", f"{self._space_path()}/diagnostics", repeatable=True)
        return [NameDiagnostics.from_api(n) for n in answer["names"]]
