"""Why work is not running, name by name: `GET /v1/spaces/{space}/diagnostics`."""

from __future__ import annotations

from typing import Any

from shared.clock import Clock
from shared.errors import NotFound
from shared.machine import WAIT_REASONS, WaitReason
from shared.policy import Policy, SpacePolicies
from shared.store.jobs import Census, JobStore
from shared.store.spaces import SpaceStore

COUNT_CAP = 10_000
"""Where a name's count stops: diagnostics stay one cheap read however deep the backlog."""


class Diagnostics:
    def __init__(self, *, clock: Clock, jobs: JobStore, spaces: SpaceStore) -> None:
        self.clock = clock
        self.jobs = jobs
        self.spaces = spaces

    def describe(self, space: str) -> dict[str, Any]:
        """Every name with pending jobs or a policy of its own: its counts, its policy in force,
        and the reasons its pending jobs wait now.

        Pending and claimable jobs are counted from the ready index (a second behind at most).
        Running jobs are not counted per name yet: `running` is null, and a name whose jobs
        are all running is listed only if it has a policy of its own."""
        items = self.spaces.whole(space)
        if not items:
            raise NotFound(f"space {space} does not exist")
        now = self.clock.now_ms()
        policies = SpacePolicies.of(items)  # read just now, with the names: no cache
        own = set(policies.named())
        names = []
        for name in sorted(sk.removeprefix("name#") for sk in items if sk.startswith("name#")):
            census = self.jobs.census(space, name, now, COUNT_CAP, reach=policies.spread(name).reach)
            if census.pending or name in own:
                names.append(_name(name, census, policies.get(name)))
        return {"names": names}


def _name(name: str, census: Census, policy: Policy) -> dict[str, Any]:
    return {
        "name": name,
        "pending": census.pending,
        "claimable": census.claimable,
        "running": None,
        "capped": census.capped,
        "policy": policy.render(),
        "waitingOn": reasons(census, policy),
        "oldestClaimableAtMs": census.oldest_claimable_at_ms,
    }


def reasons(census: Census, policy: Policy) -> list[WaitReason]:
    """The reasons some pending job of the name waits on now, in the order a job's own
    `waitingOn` looks at them."""
    holds = {
        "DELAY": census.first_time > 0,
        "BACKOFF": census.retrying > 0,
        "PAUSED": census.claimable > 0 and policy.paused,
        "WORKER": census.claimable > 0 and not policy.paused,
    }
    return [reason for reason in WAIT_REASONS if holds[reason]]
