"""Flow control policies as values: what a job name's claims may hand out, and in what order.

A space has a default policy (the `policy` map of its settings item) and each job name
may set fields of its own (the `policy` map of its name item); the policy in force for
a name is the built-in defaults, then the space's fields, then the name's. Both maps hold
only the fields someone set, in the API's spelling, with `null` kept as sent: it means
"no limit" (or, for `agingIntervalMs`, strict priority), which is a choice of its own
rather than "back to the default".

The values cross the port (`shared.store.port`, re-exported by `shared.policy`); only
`SpacePolicies.of` reads items, those of the space's own partition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared import limits
from shared.job import STRICT_AGING_MS
from shared.store import keys
from shared.store.dynamo import Item
from shared.store.spread import Spread

DEFAULT_AGING_INTERVAL_MS = limits.MINUTE_MS
DEFAULT_PER_KEY_CONCURRENCY = 1

FIELDS = ("concurrency", "rate", "perKeyConcurrency", "perKeyRate", "paused", "agingIntervalMs")
"""The policy's fields, in the API's spelling and the answer's order."""

PAUSE_CHANGED = "pauseChangedAtMs"
"""On a settings or name item: when a policy write last set `paused` or cleared the policy."""


@dataclass(frozen=True)
class Rate:
    """At most `tokens` hand-outs per `interval_ms` on average, in bursts of at most `tokens`."""

    tokens: int
    interval_ms: int

    def render(self) -> dict[str, int]:
        return {"tokens": self.tokens, "intervalMs": self.interval_ms}


@dataclass(frozen=True)
class Policy:
    """The policy in force for one name, every field filled in."""

    concurrency: int | None = None
    rate: Rate | None = None
    per_key_concurrency: int | None = DEFAULT_PER_KEY_CONCURRENCY
    per_key_rate: Rate | None = None
    paused: bool = False
    aging_interval_ms: int | None = DEFAULT_AGING_INTERVAL_MS

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> Policy:
        """The built-in defaults with `fields` (stored or API spelling) laid over them."""
        base = cls()
        get = fields.get
        return cls(
            concurrency=get("concurrency", base.concurrency),
            rate=_rate(get("rate")) if "rate" in fields else base.rate,
            per_key_concurrency=get("perKeyConcurrency", base.per_key_concurrency),
            per_key_rate=_rate(get("perKeyRate")) if "perKeyRate" in fields else base.per_key_rate,
            paused=bool(get("paused", base.paused)),
            aging_interval_ms=get("agingIntervalMs", base.aging_interval_ms),
        )

    @property
    def aging_ms(self) -> int:
        """The interval one priority step is worth in the order of hand-out: strict
        priority is an interval longer than any wait a job can have."""
        return self.aging_interval_ms if self.aging_interval_ms is not None else STRICT_AGING_MS

    def render(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "rate": self.rate.render() if self.rate else None,
            "perKeyConcurrency": self.per_key_concurrency,
            "perKeyRate": self.per_key_rate.render() if self.per_key_rate else None,
            "paused": self.paused,
            "agingIntervalMs": self.aging_interval_ms,
        }


def _rate(value: Mapping[str, Any] | None) -> Rate | None:
    return Rate(int(value["tokens"]), int(value["intervalMs"])) if value else None


def merge(
    space_default: Mapping[str, Any] | None, name_own: Mapping[str, Any] | None
) -> tuple[Policy, list[str]]:
    """The policy in force for a name, and the fields the name sets itself (in `FIELDS` order)."""
    own = dict(name_own or {})
    policy = Policy.of({**(space_default or {}), **own})
    return policy, [f for f in FIELDS if f in own]


@dataclass(frozen=True)
class SpacePolicies:
    """The stored policy fields of one space: its default, and each name's own."""

    default: Mapping[str, Any] = field(default_factory=dict)
    own: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    spreads: Mapping[str, Spread] = field(default_factory=dict)
    """Each name's ready shards (`shared.spread`), read with its policy."""
    pause_changes: Mapping[str, int] = field(default_factory=dict)
    """When a pause was last set or lifted, by name ("" for the space's default)."""
    job_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Each name's `jobDefaults` (`shared.defaults`), read with its policy: the create
    that reads a name's policy finds its defaults in the same read."""

    def get(self, name: str) -> Policy:
        return merge(self.default, self.own.get(name))[0]

    def overridden(self, name: str) -> list[str]:
        """The fields `name` sets itself, in `FIELDS` order."""
        return merge(self.default, self.own.get(name))[1]

    def spread(self, name: str) -> Spread:
        return self.spreads.get(name) or Spread()

    def pause_changed_ms(self, name: str) -> int:
        """When the name's `paused` last changed (its own, or the space's default), 0 if never."""
        return max(self.pause_changes.get(name, 0), self.pause_changes.get("", 0))

    def named(self) -> list[str]:
        """The names that set a field of their own."""
        return sorted(n for n, fields in self.own.items() if fields)

    @classmethod
    def of(cls, items: Mapping[str, Item]) -> SpacePolicies:
        """From the items of the space's own partition (`SpaceStore.whole`), by sort key."""
        settings = items.get("settings") or {}
        named = names_of(items)
        own = {name: item.get("policy") or {} for name, item in named.items()}
        spreads = {name: Spread.of(item) for name, item in named.items()}
        changes = {name: int(item[PAUSE_CHANGED]) for name, item in named.items() if PAUSE_CHANGED in item}
        if PAUSE_CHANGED in settings:
            changes[""] = int(settings[PAUSE_CHANGED])
        job_defaults = {name: item["jobDefaults"] for name, item in named.items() if item.get("jobDefaults")}
        return cls(settings.get("policy") or {}, own, spreads, changes, job_defaults)


def names_of(items: Mapping[str, Item]) -> dict[str, Item]:
    """The name items among a space's partition's items (by sort key), by name."""
    return {
        sk.removeprefix(keys.NAME_PREFIX): item
        for sk, item in items.items()
        if sk.startswith(keys.NAME_PREFIX)
    }
