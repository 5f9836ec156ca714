"""Never-claimed jobs: a pending job nobody claimed for its space's whole window (from its
ready time: creation, or its release or retry) fails with `not claimed within <window>`.

The clock looks one name at a time, when the name's check in the timer book falls due
(`shared.timers`): the stream files one when a job becomes pending, at its ready time plus
the window, one a period (`every_ms`) per process, with a second at the period's end
(`until_ms`) for the jobs of the period that fall due after the first; a name whose jobs
wait on something else (a pause, a used-up `concurrency` or `rate`) is looked at again
every period while it has ready jobs; a name resumed within the window, from its resumption
plus the window. So a name without pending work costs nothing, and a busy one a look or
two a period, whatever the number of jobs.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.clock import Clock
from shared.machine import unclaimed
from shared.policy import Policies, SpacePolicies
from shared.spaces import SpaceSettings
from shared.store.port import UNCLAIMED, JobConflict, JobStorePort, Owner, Timer
from shared.timers import Timers


@dataclass(frozen=True)
class Checked:
    """What one check did: how many jobs it failed, and the checks it files again."""

    failed: int
    again: list[Timer]


class NeverClaimed:
    def __init__(
        self,
        *,
        clock: Clock,
        jobs: JobStorePort,
        settings: SpaceSettings,
        policies: Policies,
        timers: Timers,
        every_ms: int,
        per_look: int = 1_000,
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.settings = settings
        self.policies = policies
        self.timers = timers
        self.every_ms = every_ms
        """The period of a name's checks: a job fails at most this late past its window."""
        self.per_look = per_look
        """Jobs a look fails at most: the next tick goes on where it stopped."""

    def check(self, space: str, timer: Timer, now: int) -> Checked:
        """Look at the name's ready jobs past the window, and fail them (each on its own
        item's condition: one claimed or cancelled since the index saw it is left alone)."""
        settings = self.settings.get(space)
        window = settings.unclaimed_ms
        if window is None:
            return Checked(0, [])
        name, since = timer.subject, now - window
        policies = self.policies.space(space)
        again: list[Timer] = []
        failed = 0
        blocked = self._blocked(space, name, policies, since, now)
        if blocked == "resumed":
            # Its jobs count from the resumption: due then (one filing a period, however many checks).
            self.timers.once(
                space, UNCLAIMED, name, policies.pause_changed_ms(name) + window, per_ms=self.every_ms
            )
        elif blocked is not None:
            if self._pending(space, name, policies, now):
                self.timers.once(space, UNCLAIMED, name, now + self.every_ms, per_ms=self.every_ms)
        else:
            transition = unclaimed(now_ms=now, window_ms=window, retention=settings.retention)
            waiting = self.jobs.unclaimed(
                space,
                name,
                since,
                policies.get(name).aging_ms,
                self.per_look,
                reach=policies.spread(name).reach,
            )
            for job in waiting:
                error = self.jobs.pack(space, job.job_id, "error", transition.changes["error"].encode())
                try:
                    self.jobs.transition(
                        space, job.job_id, transition, value=error, owner=Owner(name, job.concurrency_key)
                    )
                except JobConflict:
                    continue  # claimed or cancelled since the index saw it
                failed += 1
            if len(waiting) >= self.per_look:
                again.append(Timer(UNCLAIMED, name, now, timer.until_ms))
        if timer.until_ms > now and not again:
            again.append(Timer(UNCLAIMED, name, min(timer.until_ms, now + self.every_ms), timer.until_ms))
        return Checked(failed, again)

    def _blocked(self, space: str, name: str, policies: SpacePolicies, since_ms: int, now: int) -> str | None:
        """Why the name's ready jobs may not have been claimable since `since_ms` (None: they
        may): it is paused, or was resumed since (its jobs count from then), or its
        `concurrency` or `rate` is used up (its workers are busy with it: its jobs wait on
        them, not for a worker to ask). A key at its `perKeyConcurrency` is not listed in
        the name's lanes, so the look never finds its jobs."""
        policy = policies.get(name)
        if policy.paused:
            return "paused"
        if policies.pause_changed_ms(name) > since_ms:
            return "resumed"
        if policy.concurrency is not None and self.jobs.running(space, name) >= policy.concurrency:
            return "busy"
        rate = policy.rate
        if rate is not None and (
            self.jobs.rate_until(space, name, tokens=rate.tokens, interval_ms=rate.interval_ms, now_ms=now)
            is not None
        ):
            return "busy"
        return None

    def _pending(self, space: str, name: str, policies: SpacePolicies, now: int) -> bool:
        """Whether the name has a job ready now (one that may still fall due)."""
        found = self.jobs.unclaimed(
            space, name, now, policies.get(name).aging_ms, 1, reach=policies.spread(name).reach
        )
        return bool(found)
