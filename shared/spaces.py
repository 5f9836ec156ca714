"""Space settings: defaults for new jobs, windows, caps and retention."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from shared import defaults, limits
from shared.clock import Clock, Recent
from shared.errors import NotFound
from shared.policy import Policy, patch_fields
from shared.schema import JobDefaultsSpec, SettingsPatch
from shared.store.port import (
    HINT,
    UNCLAIMED,
    Settings,
    SpacePolicies,
    SpaceStorePort,
    Timer,
    WatchedStorePort,
)
from shared.timers import Timers

SWEEP_BUCKET = 1_000
"""Names' checks filed in one bucket item when a window changes (an item holds 400 KB)."""
KEPT_APART = ("policy", "jobDefaults")
"""Settings a PATCH keeps field by field elsewhere (jobDefaults on the names' items):
`SpaceSettings.patch`."""


def settings_changes(patch: SettingsPatch) -> dict[str, Any]:
    """The settings fields a PATCH sent, as plain values in the API's spelling (None: back
    to the default, or off), for the store to keep (`SpaceStorePort.patch_settings`)."""
    changes: dict[str, Any] = {}
    for field in patch.model_fields_set:
        value = getattr(patch, field)
        if field in KEPT_APART:
            continue
        if field == "backoff" and value is not None:
            value = value.model_dump(exclude_none=True)  # the keys sent: the store merges them
        elif isinstance(value, BaseModel):
            value = value.model_dump()
        changes[field] = value
    return changes


class SpaceSettings:
    """Reads settings through a short per-process cache: a create or a report reads them
    once per request, and a warm function need not read them for every request."""

    def __init__(
        self,
        store: SpaceStorePort,
        clock: Clock,
        cache_ms: int,
        timers: Timers,
        *,
        on_write: Callable[[str], None] | None = None,
        watched: WatchedStorePort | None = None,
    ) -> None:
        self.store = store
        self.watched = watched
        """Where the clock finds the spaces that list names under `metrics`."""
        self.clock = clock
        self.timers = timers
        """Where a changed never-claimed window files its names' checks (`shared.unclaimed`)."""
        self.cache_ms = cache_ms
        self.on_write = on_write
        """Told of each space whose settings this process wrote (other caches drop it)."""
        self._cache: Recent[str, Settings] = Recent(clock)

    def get(self, space: str) -> Settings:
        return self._cache.get(space, self.cache_ms, lambda: self.store.read_settings(space))

    def describe(self, space: str) -> dict[str, Any]:
        state = self.store.space(space)
        if state is None:
            raise NotFound(f"space {space} does not exist")
        settings = state.settings
        # Exact under a cap; else the stream's count, read only here.
        capped = settings.max_in_flight is not None
        in_flight = state.in_flight if capped else self.store.unfinished(space)
        return {
            "space": space,
            **settings.render(),
            "policy": Policy.of(state.policies.default).render(),
            "jobDefaults": job_defaults(state.policies),
            "inFlight": in_flight,
        }

    def patch(self, space: str, patch: SettingsPatch) -> dict[str, Any]:
        changes = settings_changes(patch)
        if changes.get("unclaimedMs") is not None:
            self._sweep_unclaimed(space, int(changes["unclaimedMs"]))
        listing = "metrics" in changes and self.watched is not None
        if listing and changes["metrics"] and self.watched is not None:
            self.watched.watch(space)  # before: the list may name too many, never too few
        self.store.patch_settings(space, changes, self.clock.now_ms())
        if listing and not changes["metrics"] and self.watched is not None:
            self.watched.unwatch(space)
        if "policy" in patch.model_fields_set:
            fields = patch_fields(patch.policy) if patch.policy is not None else None
            self.store.write_policy(space, None, fields, self.clock.now_ms())
            self._hint_names(space)
        if "jobDefaults" in patch.model_fields_set:
            self._patch_job_defaults(space, patch.jobDefaults)
        self._cache.forget(space)
        if self.on_write is not None:
            self.on_write(space)
        return self.describe(space)

    def _hint_names(self, space: str) -> None:
        """The space's default policy was written (resumed, a limit raised or lifted): every
        name unpaused now may have jobs claimable, so each is hinted by the clock's next tick
        (`shared.timers` HINT, one filing for all), once every process's claims see it."""
        policies = self.store.policies(space)
        names = [n for n in self.store.names(space) if not policies.get(n).paused]
        at = self.clock.now_ms() + limits.SECOND_MS
        for start in range(0, len(names), SWEEP_BUCKET):
            self.timers.file(space, [Timer(HINT, name, at) for name in names[start : start + SWEEP_BUCKET]])

    def _sweep_unclaimed(self, space: str, window_ms: int) -> None:
        """A new window: the jobs waiting now fall due by it from times nothing filed (they
        were filed by the old window, or by none), so each name is checked from now, and
        again every period until the window has passed (before the change is written)."""
        now = self.clock.now_ms()
        names = self.store.names(space)
        for at in range(0, len(names), SWEEP_BUCKET):
            chunk = names[at : at + SWEEP_BUCKET]
            self.timers.file(space, [Timer(UNCLAIMED, name, now, now + window_ms) for name in chunk])

    def _patch_job_defaults(self, space: str, patch: dict[str, JobDefaultsSpec | None] | None) -> None:
        """Each name's defaults on its own item (listed first if new, as a policy's name)."""
        policies = self.store.policies(space)
        if patch is None:
            patch = dict.fromkeys(job_defaults(policies))
        for name, fields in patch.items():  # all checked before anything is written
            if fields is not None:
                current = policies.job_defaults.get(name) or {}
                merged = {**current, **defaults.patch_fields(fields)}
                defaults.check(name, {k: v for k, v in merged.items() if v is not None})
        self.store.register_names(space, set(patch), self.clock.now_ms())
        for name, fields in patch.items():
            stored = defaults.patch_fields(fields) if fields is not None else None
            self.store.write_job_defaults(space, name, stored)


def job_defaults(policies: SpacePolicies) -> dict[str, dict[str, Any]]:
    """The names' defaults as the API shows them, in name order, names without any left out."""
    found = {}
    for name, stored in sorted(policies.job_defaults.items()):
        if fields := defaults.shown(stored):
            found[name] = fields
    return found
