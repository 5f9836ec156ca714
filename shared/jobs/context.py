"""What every use case works with: the clock, the store's parts, the space's settings and
policies, the rules for callback targets, and the queue's own configuration.

One frozen value, built once per process by `shared.runtime` and passed to each use case
(`shared.jobs.*`) as its first argument, so a use case names what it reads and writes
and holds nothing of its own between requests. A test that needs another clock or
configuration replaces the runtime's context (`dataclasses.replace`); the use cases read
whatever context they are given.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from shared.clock import Clock
from shared.ids import IdGenerator
from shared.policy import Policies
from shared.spaces import SpaceSettings
from shared.spread import Spreader
from shared.store.port import (
    DeliveryStorePort,
    JobStorePort,
    JournalPort,
    ScheduleStorePort,
    SecretsPort,
    SpaceStorePort,
)
from shared.targets import TargetPolicy
from shared.timers import Timers


@dataclass(frozen=True)
class QueueConfig:
    """The use cases' share of the runtime's settings, built from `shared.config.Config`
    (where each one's default, local value and reason are written, once)."""

    max_wait_ms: int
    """Longest a claim waits for work."""
    poll_ms: int
    """How soon a waiting claim (or follow) first looks again; the pause doubles while nothing comes."""
    poll_max_ms: int
    """The longest pause between looks: how late a waiting claim may see new work."""
    claim_payload_bytes: int
    """Where a claim's answer stops."""


@dataclass(frozen=True)
class Context:
    clock: Clock
    jobs: JobStorePort
    """Jobs: create, read, claim and transition, in domain values (`shared.store.port`)."""
    spaces: SpaceStorePort
    """Spaces' own items: settings, names and their policies, listings, in-flight room."""
    settings: SpaceSettings
    """The spaces' settings, through a short per-process cache."""
    policies: Policies
    """The names' policies (pause, concurrency, rate, spread, jobDefaults), cached."""
    journal: JournalPort
    """Jobs' log lines and events."""
    deliveries: DeliveryStorePort
    """Callbacks' deliveries: one a finished job with a callback."""
    secrets: SecretsPort
    """The service's own secrets (the one that signs follow links)."""
    targets: TargetPolicy
    """Where a job's callback may go."""
    config: QueueConfig
    spreader: Spreader
    """Counts new jobs by name and widens a busy name's shards."""
    timers: Timers
    """Files timed work for the clock (`shared.timers`): the room of a create that dies."""
    schedules: ScheduleStorePort
    """Schedules (`shared.jobs.schedules`): what they make, and when next."""
    ids: IdGenerator = field(default_factory=IdGenerator)
    rand: Callable[[], float] = random.random
    """Jitter for retries' backoff."""
