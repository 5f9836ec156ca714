"""Space settings: defaults for new jobs, windows, caps and retention."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared import defaults, limits
from shared.clock import Clock, Recent
from shared.errors import NotFound
from shared.machine import Backoff, BackoffKind, Retention
from shared.notify import Destination, stored
from shared.policy import Policy, patch_fields
from shared.schema import JobDefaults, SettingsPatch
from shared.store import keys
from shared.store.dynamo import Item
from shared.store.spaces import SpaceStore

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
        }


def stored_changes(patch: SettingsPatch, current: Item | None, now_ms: int) -> dict[str, Any]:
    """The settings item's attributes to set (None: remove) for a PATCH body."""
    changes: dict[str, Any] = {}
    for field in patch.model_fields_set:
        value = getattr(patch, field)
        if field in ("policy", "jobDefaults"):
            continue  # kept field by field (jobDefaults on the names' items): SpaceSettings.patch
        if field == "backoff":
            merged = dict((current or {}).get("backoff", {}))
            if value is not None:
                merged.update(value.model_dump(exclude_none=True))
            changes["backoff"] = merged if value is not None else None
        elif field in ("onFailure", "onSettled"):
            spec = value.model_dump() if value is not None else None
            changes[field] = stored(spec, (current or {}).get(field), now_ms)
        elif field == "unclaimedMs" and value is None:
            changes[field] = UNCLAIMED_OFF
        else:
            changes[field] = value
    return changes


class SpaceSettings:
    """Reads settings through a short per-process cache: a create or a report reads them
    once per request, and a warm function need not read them for every request."""

    def __init__(
        self, store: SpaceStore, clock: Clock, cache_ms: int, on_write: Callable[[str], None] | None = None
    ) -> None:
        self.store = store
        self.clock = clock
        self.cache_ms = cache_ms
        self.on_write = on_write
        """Told of each space whose settings this process wrote (other caches drop it)."""
        self._cache: Recent[str, Settings] = Recent(clock)

    def get(self, space: str) -> Settings:
        return self._cache.get(space, self.cache_ms, lambda: Settings.from_item(self.store.settings(space)))

    def describe(self, space: str) -> dict[str, Any]:
        items = self.store.whole(space)
        if not items:
            raise NotFound(f"space {space} does not exist")
        settings = Settings.from_item(items.get("settings"))
        # Kept only while the space has a cap: a count nobody needs would be a hot key.
        in_flight = (
            self.store.in_flight(items.get("inflight")) if settings.max_in_flight is not None else None
        )
        policy = Policy.of((items.get("settings") or {}).get("policy") or {})
        return {
            "space": space,
            **settings.render(),
            "policy": policy.render(),
            "jobDefaults": job_defaults(items),
            "inFlight": in_flight,
        }

    def patch(self, space: str, patch: SettingsPatch) -> dict[str, Any]:
        self.store.write_settings(
            space, stored_changes(patch, self.store.settings(space), self.clock.now_ms())
        )
        if "policy" in patch.model_fields_set:
            fields = patch_fields(patch.policy) if patch.policy is not None else None
            self.store.write_policy(keys.settings(space), fields, self.clock.now_ms())
        if "jobDefaults" in patch.model_fields_set:
            self._patch_job_defaults(space, patch.jobDefaults)
        self._cache.forget(space)
        if self.on_write is not None:
            self.on_write(space)
        return self.describe(space)

    def _patch_job_defaults(self, space: str, patch: dict[str, JobDefaults | None] | None) -> None:
        """Each name's defaults on its own item (listed first if new, as a policy's name)."""
        items = self.store.whole(space)
        if patch is None:
            patch = dict.fromkeys(job_defaults(items))
        for name, fields in patch.items():  # all checked before anything is written
            if fields is not None:
                current = (items.get(f"name#{name}") or {}).get("jobDefaults") or {}
                merged = {**current, **defaults.patch_fields(fields)}
                defaults.check(name, {k: v for k, v in merged.items() if v is not None})
        self.store.register_names(space, set(patch), self.clock.now_ms())
        for name, fields in patch.items():
            stored = defaults.patch_fields(fields) if fields is not None else None
            self.store.write_job_defaults(keys.job_name(space, name), stored)


def job_defaults(items: dict[str, Item]) -> dict[str, dict[str, Any]]:
    """The names' defaults as the API shows them, from the space's partition (by sort
    key), names without any left out."""
    found = {}
    for sk, item in sorted(items.items()):
        if sk.startswith("name#") and (fields := defaults.shown(item.get("jobDefaults") or {})):
            found[sk.removeprefix("name#")] = fields
    return found
