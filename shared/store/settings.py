"""A space's settings as values, and how its settings item keeps them.

`Settings` and `Destination` cross the port (`shared.store.port`, re-exported by
`shared.settings`): a create, a report, the stream and the callbacks' sender read them,
and only this module knows the item they come from (its attribute names, what an absent
one means, `UNCLAIMED_OFF`) or how a PATCH's fields become its attributes
(`stored_changes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from shared import limits
from shared.job import KEPT_AS_FAILED, Backoff, BackoffKind, Retention
from shared.store.dynamo import Item

Kind = Literal["onFailure", "onSettled"]

FAILURE: frozenset[str] = frozenset(s.value for s in KEPT_AS_FAILED)
"""The endings `onFailure` covers: FAILED and STALLED, the jobs that ended without doing
their work."""


@dataclass(frozen=True)
class Destination:
    """One of a space's notification settings, as stored."""

    kind: Kind
    name: str
    statuses: frozenset[str]
    """The endings (upper-case statuses) it covers."""
    since_ms: int
    """Jobs that ended before this are not covered (the setting was made then)."""

    @classmethod
    def of(cls, kind: Kind, stored: Mapping[str, Any] | None) -> Destination | None:
        if not stored:
            return None
        statuses = FAILURE if kind == "onFailure" else frozenset(stored["statuses"])
        return cls(kind, str(stored["name"]), statuses, int(stored["sinceMs"]))

    def render(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"name": self.name}
        if self.kind == "onSettled":
            shown["statuses"] = [s for s in SETTLED_ORDER if s in self.statuses]
        shown["sinceMs"] = self.since_ms
        return shown


SETTLED_ORDER = ("COMPLETED", "FAILED", "CANCELLED", "STALLED")


UNCLAIMED_OFF = 0
"""Stored for `unclaimedMs: null` (off); a stored value of absent means the default window."""


@dataclass(frozen=True)
class Settings:
    max_attempts: int = limits.DEFAULT_MAX_ATTEMPTS
    timeout_ms: int = limits.DEFAULT_TIMEOUT_MS
    backoff_ms: int = limits.DEFAULT_BACKOFF_MS
    backoff_kind: BackoffKind = "exponential"
    backoff_max_ms: int = limits.DEFAULT_BACKOFF_MAX_MS
    backoff_jitter: bool = False
    unclaimed_ms: int | None = limits.DEFAULT_UNCLAIMED_MS
    key_window_ms: int = limits.DEFAULT_KEY_WINDOW_MS
    max_events: int = limits.DEFAULT_MAX_EVENTS
    max_in_flight: int | None = None
    webhook_secret: str | None = None
    completed_retention_ms: int = limits.DEFAULT_COMPLETED_RETENTION_MS
    failed_retention_ms: int = limits.DEFAULT_FAILED_RETENTION_MS
    on_failure: Destination | None = None
    on_settled: Destination | None = None
    metrics: Mapping[str, int] = field(default_factory=dict)
    """The names whose metrics the clock publishes, each with the time it was listed (its
    waiting counts begin then: `shared.backlog`)."""

    @classmethod
    def from_item(cls, item: Item | None) -> Settings:
        if not item:
            return cls()
        base = cls()
        backoff = item.get("backoff", {})
        unclaimed = item.get("unclaimedMs", base.unclaimed_ms)
        return cls(
            max_attempts=item.get("maxAttempts", base.max_attempts),
            timeout_ms=item.get("timeoutMs", base.timeout_ms),
            backoff_ms=item.get("backoffMs", base.backoff_ms),
            backoff_kind=backoff.get("kind", base.backoff_kind),
            backoff_max_ms=backoff.get("maxMs", base.backoff_max_ms),
            backoff_jitter=backoff.get("jitter", base.backoff_jitter),
            unclaimed_ms=None if unclaimed == UNCLAIMED_OFF else unclaimed,
            key_window_ms=item.get("keyWindowMs", base.key_window_ms),
            max_events=item.get("maxEvents", base.max_events),
            max_in_flight=item.get("maxInFlight"),
            webhook_secret=item.get("webhookSecret"),
            completed_retention_ms=item.get("completedRetentionMs", base.completed_retention_ms),
            failed_retention_ms=item.get("failedRetentionMs", base.failed_retention_ms),
            on_failure=Destination.of("onFailure", item.get("onFailure")),
            on_settled=Destination.of("onSettled", item.get("onSettled")),
            metrics={str(k): int(v) for k, v in (item.get("metrics") or {}).items()},
        )

    @property
    def retention(self) -> Retention:
        return Retention(self.completed_retention_ms, self.failed_retention_ms)

    def backoff(self) -> Backoff:
        return Backoff(self.backoff_kind, self.backoff_ms, self.backoff_max_ms, self.backoff_jitter)

    def render(self) -> dict[str, Any]:
        return {
            "maxAttempts": self.max_attempts,
            "timeoutMs": self.timeout_ms,
            "backoffMs": self.backoff_ms,
            "backoff": {
                "kind": self.backoff_kind,
                "maxMs": self.backoff_max_ms,
                "jitter": self.backoff_jitter,
            },
            "unclaimedMs": self.unclaimed_ms,
            "keyWindowMs": self.key_window_ms,
            "maxEvents": self.max_events,
            "maxInFlight": self.max_in_flight,
            "webhookSecret": {"set": self.webhook_secret is not None},
            "completedRetentionMs": self.completed_retention_ms,
            "failedRetentionMs": self.failed_retention_ms,
            "onFailure": self.on_failure.render() if self.on_failure else None,
            "onSettled": self.on_settled.render() if self.on_settled else None,
            "metrics": sorted(self.metrics),
        }


def stored_changes(changes: Mapping[str, Any], current: Item | None, now_ms: int) -> dict[str, Any]:
    """The settings item's attributes to set (None: remove) for the fields a PATCH sent
    (`changes`, in the API's spelling, None: back to the default, or off). `backoff` is
    merged into the stored one key by key, so a PATCH of its `kind` keeps its `maxMs`."""
    stored: dict[str, Any] = {}
    for key, value in changes.items():
        if key == "metrics":
            listed = ((current or {}).get("metrics") or {}) if value else {}
            stored[key] = {name: int(listed.get(name, now_ms)) for name in value} if value else None
        elif key == "backoff":
            stored[key] = None if value is None else {**(current or {}).get("backoff", {}), **value}
        elif key in ("onFailure", "onSettled"):
            stored[key] = _destination(value, (current or {}).get(key), now_ms)
        elif key == "unclaimedMs" and value is None:
            stored[key] = UNCLAIMED_OFF
        else:
            stored[key] = value
    return stored


def _destination(spec: Mapping[str, Any] | None, current: Mapping[str, Any] | None, now_ms: int) -> Any:
    """The stored value of a destination a PATCH sent (None: remove it). A change of an
    existing destination keeps its `sinceMs`: jobs that ended since it was first set, and
    whose records the stream has yet to read, are still covered."""
    if spec is None:
        return None
    since = int(current["sinceMs"]) if current and "sinceMs" in current else now_ms
    return {**spec, "sinceMs": since}
