"""Why work is not running, name by name: `GET /v1/spaces/{space}/diagnostics`.

Answers values (`NameDiagnosis`), shown by `shared.render.diagnostics`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.clock import Clock
from shared.errors import NotFound
from shared.machine import WAIT_REASONS, WaitReason
from shared.policy import Policy
from shared.store.port import Census, JobStorePort, SpaceStorePort, TallyStorePort

COUNT_CAP = 10_000
"""Where a name's count stops: diagnostics stay one cheap read however deep the backlog."""


class Diagnostics:
    def __init__(
        self, *, clock: Clock, jobs: JobStorePort, spaces: SpaceStorePort, tallies: TallyStorePort
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.spaces = spaces
        self.tallies = tallies

    def describe(self, space: str) -> list[NameDiagnosis]:
        """Every name with pending jobs or a policy of its own: its counts, its policy in force,
        and the reasons its pending jobs wait now.

        Pending and claimable jobs are counted from the ready index (a second behind at most).
        Running jobs are counted for every name: a name with a `concurrency` by its slots
        (exact), any other from the stream's counts (`shared.counts`, a few seconds behind)."""
        state = self.spaces.space(space)  # read just now, with the names: no cache
        if state is None:
            raise NotFound(f"space {space} does not exist")
        now = self.clock.now_ms()
        policies = state.policies
        own = set(policies.named())
        counted = self.tallies.names(space, state.names)
        names = []
        for name in state.names:
            census = self.jobs.census(space, name, now, COUNT_CAP, reach=policies.spread(name).reach)
            running = counted[name].running if name in counted else 0
            if census.pending or running or name in own:
                limits = self._limits(space, name, policies.get(name), now, running)
                names.append(NameDiagnosis(name, census, limits, reasons(census, limits)))
        return names

    def _limits(self, space: str, name: str, policy: Policy, now: int, counted: int) -> Limits:
        running = self.jobs.running(space, name) if policy.concurrency is not None else counted
        rate = policy.rate
        used_up = rate is not None and (
            self.jobs.rate_until(space, name, tokens=rate.tokens, interval_ms=rate.interval_ms, now_ms=now)
            is not None
        )
        return Limits(policy, running, used_up)


@dataclass(frozen=True)
class Limits:
    """A name's policy in force, and where its counted limits stand now."""

    policy: Policy
    running: int
    """Jobs running: a name with a `concurrency` by its slots, any other from the stream's counts."""
    rate_used_up: bool = False

    @property
    def at_concurrency(self) -> bool:
        cap = self.policy.concurrency
        return cap is not None and self.running is not None and self.running >= cap


@dataclass(frozen=True)
class NameDiagnosis:
    """Where one name's work stands: its pending jobs counted, its limits, why they wait."""

    name: str
    census: Census
    limits: Limits
    waiting_on: list[WaitReason]


def reasons(census: Census, limits: Limits) -> list[WaitReason]:
    """The reasons some pending job of the name waits on now, in the order a job's own
    `waitingOn` looks at them (the first of pause, concurrency, rate that holds, else a worker)."""
    claimable = census.claimable > 0
    held_back = next(
        (
            reason
            for reason, holds in (
                ("PAUSED", limits.policy.paused),
                ("CONCURRENCY", limits.at_concurrency),
                ("RATE", limits.rate_used_up),
            )
            if holds
        ),
        "WORKER",
    )
    holds = {
        "DELAY": census.first_time > 0,
        "BACKOFF": census.retrying > 0,
        "PAUSED": claimable and held_back == "PAUSED",
        "CONCURRENCY": claimable and held_back == "CONCURRENCY",
        "RATE": claimable and held_back == "RATE",
        # Keyed jobs wait in their keys' lanes, which the census does not read (yet).
        "KEY_CONCURRENCY": False,
        "KEY_RATE": False,
        "WORKER": claimable and held_back == "WORKER",
    }
    return [reason for reason in WAIT_REASONS if holds[reason]]
