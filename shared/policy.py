"""Flow control policies: what a job name's claims may hand out, and in what order.

The values (`Policy`, `Rate`, `SpacePolicies`: a space's default and each name's own
fields, merged) are the store's (`shared.store.policies`, where how they merge is written);
here are the cache the claim path reads them through and the PATCH that writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared import limits
from shared.clock import Clock, Recent
from shared.schema import PolicyPatch, RateSpec
from shared.store.port import Policy, Rate, SpacePolicies, SpaceStorePort

__all__ = ["Policies", "Policy", "Rate", "SpacePolicies", "patch_fields"]


def patch_fields(patch: PolicyPatch) -> dict[str, Any]:
    """The fields a PATCH sent, as they are stored (nulls kept), in the answer's order."""
    out: dict[str, Any] = {}
    for name in PolicyPatch.model_fields:
        if name in patch.model_fields_set:
            value = getattr(patch, name)
            out[name] = value.model_dump() if isinstance(value, RateSpec) else value
    return out


class Policies:
    """Policies read through a short per-process cache (at most a second, as the contract
    allows): the claim path asks for a space's policies on every look, and one query of
    the space's own partition answers for the settings and every name at once. A write
    made through this process drops its space from the cache at once; every other process
    sees it within `cache_ms`."""

    def __init__(self, store: SpaceStorePort, clock: Clock, cache_ms: int = limits.SECOND_MS) -> None:
        self.store = store
        self.clock = clock
        self.cache_ms = min(cache_ms, limits.SECOND_MS)
        self._cache: Recent[str, SpacePolicies] = Recent(clock)
        self.on_write: Callable[[str, str, Policy, int], None] | None = None
        """Told of each name's policy written here: (space, name, the policy now, when every
        process's claims see it). The runtime's wake hints the name then (`Wake.policy_written`)."""

    def space(self, space: str) -> SpacePolicies:
        return self._cache.get(space, self.cache_ms, lambda: self.store.policies(space))

    def get(self, space: str, name: str) -> Policy:
        return self.space(space).get(name)

    def describe(self, space: str, name: str) -> dict[str, Any]:
        """A name's policy as the API answers it, read afresh (a write just made shows)."""
        return _described(name, self.store.name_policies(space, name))

    def patch(self, space: str, name: str, patch: PolicyPatch) -> dict[str, Any]:
        """Set the fields sent on the name's own policy; the name is listed first if new."""
        return self._write(space, name, patch_fields(patch))

    def reset(self, space: str, name: str) -> dict[str, Any]:
        """Every field back to the space's default."""
        return self._write(space, name, None)

    def _write(self, space: str, name: str, fields: dict[str, Any] | None) -> dict[str, Any]:
        """Write the name's own fields (None: none, the space's default), then answer the
        policy as read back, telling `on_write` of it (a name resumed, or given room by a
        limit raised, may have jobs claimable now)."""
        now = self.clock.now_ms()
        self.store.register_names(space, {name}, now)
        self.store.write_policy(space, name, fields, now)
        self._cache.forget(space)
        policies = self.store.name_policies(space, name)
        if self.on_write is not None:
            self.on_write(space, name, policies.get(name), self.clock.now_ms() + self.cache_ms)
        return _described(name, policies)

    def forget(self, space: str) -> None:
        """Drop a space's cached policies (its settings were just written here)."""
        self._cache.forget(space)


def _described(name: str, policies: SpacePolicies) -> dict[str, Any]:
    """A name's policy as the API answers it."""
    return {"name": name, **policies.get(name).render(), "overridden": policies.overridden(name)}
