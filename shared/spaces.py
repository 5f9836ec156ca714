"""Space settings: defaults for new jobs, windows, caps and retention."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared import defaults
from shared.clock import Clock, Recent
from shared.errors import NotFound
from shared.policy import Policy, patch_fields
from shared.schema import JobDefaults, SettingsPatch
from shared.settings import UNCLAIMED_OFF, Settings, stored
from shared.store import keys
from shared.store.dynamo import Item
from shared.store.spaces import SpaceStore


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
