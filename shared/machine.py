"""The job state machine: one function per transition, each a guarded value the store writes.

Every change of a job's status is decided here and nowhere else. A transition is a
pure value: the status it moves to, the fields it sets, and the guard under which it
may happen. The store turns it into one conditional write on the job's own item, so a
transition that lost a race (another worker, a cancel, a late report) changes nothing.

    pending ──claim──▶ running ──complete──▶ completed
       ▲                  │
       ├── fail, with ────┤──── fail, out of attempts or unrecoverable ──▶ failed
       │   attempts left  │
       └──── release ─────┘
    pending | running ──cancel──▶ cancelled
    running, lease ended ──expire──▶ pending (attempts left) or failed      (the clock)
    running AT_MOST_ONCE, lease ended ──stall──▶ stalled                     (the clock)
    pending, claimable for the whole window ──unclaimed──▶ failed          (the clock)
    pending | running, past its deadline ──deadline──▶ cancelled  (the clock, a claim, a report)

A pending job waits in one of two places (`Place`): *due*, claimable now, kept in its
order of hand-out; or *later*, not claimable before its ready time (a delay, the wait
before a retry). Claims take due jobs in order, and merge in the later jobs whose time
has come, so a delay stays exact while priority decides among what is claimable.

Each attempt keeps a record on the job (`Tried`): the claim writes its start, the
transition that ends it writes its end and outcome in the same write. A cancel, guarded on
the status alone, does not know which attempt it ends: `Job.history` reads that end.

`attempt` counts hand-outs and only ever grows, so a report names the attempt it speaks
for and a worker that lost its hold can never speak for the next one. `failures`
counts the attempts that failed (failed reports, expired leases); `max_attempts`
bounds failures, not hand-outs, so a release gives its attempt back.

The statuses and the job itself, the values these transitions are decided over, are
`shared.job`'s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from shared.job import (
    AT_LEAST_ONCE,
    AT_MOST_ONCE,
    ATTEMPT_ERROR_CHARS,
    UNFINISHED,
    AttemptOutcome,
    Guarantee,
    Job,
    JobStatus,
    Place,
    Retention,
    place,
)


@dataclass(frozen=True)
class Guard:
    """What must still hold of the stored job for a transition to apply."""

    statuses: frozenset[JobStatus]
    attempt: int | None = None
    ready_by_ms: int | None = None
    """The job must be claimable by then (pending jobs wait for their ready time)."""
    lease_at_most_ms: int | None = None
    """A touch never shortens a lease: the stored lease must not be later than the new one."""
    lease_ended_by_ms: int | None = None
    """The lease must have ended by then (it may have been renewed since it was filed)."""
    guarantee: Guarantee | None = None
    """The job's guarantee must be this one: the item, not the read that chose the
    transition, decides between a retry and a stall."""
    unexpired_at_ms: int | None = None
    """The job must have no deadline, or one after then: nothing is handed out, nor reported
    for, past its deadline (the write itself decides, before the clock has cancelled it)."""
    expired_by_ms: int | None = None
    """The job must have a deadline, passed by then."""


HoldKind = Literal["space", "name", "key"]
"""The counted limits a job can hold a place in: its space's `maxInFlight` (from create
until it finishes), its name's `concurrency` and its key's `perKeyConcurrency` (from claim
until it leaves RUNNING). A keyed job always holds a key slot while running, under a cap or
not: the key's count of running jobs is what lists the key for claims again."""
HELD_WHILE_RUNNING: frozenset[HoldKind] = frozenset({"name", "key"})
ALL_HOLDS: frozenset[HoldKind] = frozenset({"space", "name", "key"})


@dataclass(frozen=True)
class Hold:
    """One place a job holds in one counter: the counter's kind, and which of the items it is
    split over (a name's slots are spread over shards so no item is hot). The job item
    names its holds (`tag`), so the write that lets a hold go knows which counter to lower.
    A key slot's counter is the key's own item: its tag is just `key`, the key being the
    job's `concurrencyKey` (the store's `Owner`)."""

    kind: HoldKind
    shard: int = 0

    @property
    def tag(self) -> str:
        return self.kind if self.kind in ("space", "key") else f"{self.kind}.{self.shard}"

    @classmethod
    def of(cls, tag: str) -> Hold:
        kind, _, shard = tag.partition(".")
        assert kind in ALL_HOLDS, f"unknown hold {tag!r}"
        return cls(kind, int(shard or 0))


@dataclass(frozen=True)
class Take:
    """A hold a transition takes, in the same write: refused when its counter is at `cap`."""

    hold: Hold
    cap: int | None


@dataclass(frozen=True)
class Tried:
    """What a transition writes of one attempt's record on the job item: its start (a
    claim), its end (`outcome`, and the error shortened to `ATTEMPT_ERROR_CHARS`), or its
    removal (`undone`: a claim given back never handed the attempt out)."""

    attempt: int
    started_at_ms: int | None = None
    ended_at_ms: int | None = None
    outcome: AttemptOutcome | None = None
    error: str | None = None
    undone: bool = False

    @classmethod
    def end(cls, attempt: int, now_ms: int, outcome: AttemptOutcome, error: str | None = None) -> Tried:
        short = error[:ATTEMPT_ERROR_CHARS] if error is not None else None
        return cls(attempt, ended_at_ms=now_ms, outcome=outcome, error=short)


@dataclass(frozen=True)
class Transition:
    """A decided change: the store applies it as one conditional write, or not at all.

    A transition that takes or lets go of a hold (`takes`, `lets_go`) changes counters too:
    the store then writes the job and each counter in one transaction, so no crash can
    leave a count that disagrees with the jobs that hold it.
    """

    name: str
    guard: Guard
    to: JobStatus
    changes: dict[str, Any]
    """Job fields to set; a value of None removes the field."""
    ready_index: Literal["enter", "leave", "keep"] = "keep"
    """Whether the job joins or leaves the set that claims look in."""
    place: Place | None = None
    """Where a job that enters that set waits."""
    callback_due_ms: int | None = None
    """Set when the transition finishes the job: a job with a callback is then filed in the
    timer book (before this write), due by this time. The stream records the delivery long
    before; if it never does (its write failed through every retry), the clock records the
    delivery itself."""
    has_callback: bool | None = None
    """Whether the job has a callback, where the decision had the job at hand; None: the
    write finds out on the job's own item."""
    takes: tuple[Take, ...] = ()
    """Holds the job takes (a claim of a name with a `concurrency` takes one of its slots)."""
    tried: Tried | None = None
    """The attempt's record it writes: a claim starts one, a report or the clock ends one."""

    @property
    def lets_go(self) -> frozenset[HoldKind]:
        """The kinds of hold the job gives up: everything when it finishes, its slots when it
        leaves RUNNING (a job never holds a slot outside RUNNING, so a pending job's move
        to PENDING or CANCELLED finds none to give up)."""
        if self.to.is_final:
            return ALL_HOLDS
        if self.to != JobStatus.RUNNING:
            return HELD_WHILE_RUNNING
        return frozenset()


RUNNING_ONLY = frozenset({JobStatus.RUNNING})


def refusal(
    status: JobStatus, *, attempt: int, reported_attempt: int, lapsed_attempt: int | None = None
) -> str | None:
    """Why a worker's report for `reported_attempt` cannot speak for a job in `status` at
    `attempt`, as the workers page names it; None when it can. Finished beats stale: a
    cancelled job tells any worker to stop. An attempt whose lease ran out (`lapsed_attempt`)
    is STALE, as the page says of "a later report from the first worker", even while the
    job waits its backoff and no other attempt holds it yet; NOT_RUNNING is for an attempt
    its own worker gave up (a release, a reported failure)."""
    if status.is_final:
        return "ALREADY_FINISHED"
    if attempt != reported_attempt or reported_attempt == lapsed_attempt:
        return "STALE"
    if status != JobStatus.RUNNING:
        return "NOT_RUNNING"
    return None


CALLBACK_GRACE_MS = 60_000
"""How long after a job finishes the clock looks for its callback, in case the stream
never recorded the delivery; the stream normally does within a second."""


def _finish(status: JobStatus, now_ms: int, retention: Retention) -> dict[str, Any]:
    return {
        "finished_at_ms": now_ms,
        "purge_at_ms": retention.purge_at(status, now_ms),
        "lease_until_ms": None,
        "ready_at_ms": None,
    }


def claim(*, attempt_before: int, now_ms: int, lease_ms: int, takes: tuple[Take, ...] = ()) -> Transition:
    """Hand a pending, ready job to a worker for the next attempt (taking a slot of its
    name's `concurrency`, if it has one)."""
    return Transition(
        takes=takes,
        name="claim",
        guard=Guard(
            statuses=frozenset({JobStatus.PENDING}),
            attempt=attempt_before,
            ready_by_ms=now_ms,
            unexpired_at_ms=now_ms,
        ),
        to=JobStatus.RUNNING,
        changes={"attempt": attempt_before + 1, "lease_until_ms": now_ms + lease_ms, "ready_at_ms": None},
        ready_index="leave",
        tried=Tried(attempt_before + 1, started_at_ms=now_ms),
    )


def touch(*, attempt: int, now_ms: int, lease_ms: int) -> Transition:
    """Renew the lease; never shortens it."""
    until = now_ms + lease_ms
    return Transition(
        name="touch",
        guard=Guard(statuses=RUNNING_ONLY, attempt=attempt, lease_at_most_ms=until),
        to=JobStatus.RUNNING,
        changes={"lease_until_ms": until},
    )


def keep(*, attempt: int) -> Transition:
    """A report that only carries progress, an event or lines: still fenced by attempt."""
    return Transition(
        name="report", guard=Guard(statuses=RUNNING_ONLY, attempt=attempt), to=JobStatus.RUNNING, changes={}
    )


def complete(*, attempt: int, now_ms: int, retention: Retention) -> Transition:
    """The worker returned a result; the store keeps it beside this change."""
    return Transition(
        name="complete",
        guard=Guard(statuses=RUNNING_ONLY, attempt=attempt),
        to=JobStatus.COMPLETED,
        changes=_finish(JobStatus.COMPLETED, now_ms, retention),
        callback_due_ms=now_ms + CALLBACK_GRACE_MS,
        tried=Tried.end(attempt, now_ms, "COMPLETED"),
    )


def fail(
    job: Job,
    *,
    now_ms: int,
    error: str,
    unrecoverable: bool,
    retry_after_ms: int | None,
    rand: float,
    retention: Retention,
    aging_ms: int,
    guard: Guard | None = None,
) -> Transition:
    """An attempt failed: retry after a wait while attempts are left, else fail for good.
    `aging_ms` is the job name's aging interval in force (for the retry's place).

    A retry whose wait would end at or past the job's deadline could never be handed out
    (claims hand out nothing past it): the job fails for good now, with this attempt's
    error, rather than wait for nothing until the deadline cancels it."""
    failures = job.failures + 1
    guard = guard or Guard(statuses=RUNNING_ONLY, attempt=job.attempt)
    wait = retry_after_ms if retry_after_ms is not None else job.backoff.wait_ms(failures, rand)
    ready = now_ms + wait
    too_late = job.expires_at_ms is not None and ready >= job.expires_at_ms
    tried = Tried.end(job.attempt, now_ms, "FAILED", error)
    if unrecoverable or failures >= job.max_attempts or too_late:
        changes = _finish(JobStatus.FAILED, now_ms, retention) | {"failures": failures, "error": error}
        return Transition(
            name="fail",
            guard=guard,
            to=JobStatus.FAILED,
            changes=changes,
            callback_due_ms=now_ms + CALLBACK_GRACE_MS,
            has_callback=job.callback is not None,
            tried=tried,
        )
    return Transition(
        name="retry",
        guard=guard,
        to=JobStatus.PENDING,
        changes={"failures": failures, "error": error, "lease_until_ms": None, "ready_at_ms": ready},
        ready_index="enter",
        place=place(ready_at_ms=ready, now_ms=now_ms, priority=job.priority, aging_ms=aging_ms),
        tried=tried,
    )


def release(*, attempt: int, now_ms: int, priority: int, aging_ms: int) -> Transition:
    """Give the job back unfinished: claimable at once, and the attempt is not counted."""
    return Transition(
        name="release",
        guard=Guard(statuses=RUNNING_ONLY, attempt=attempt),
        to=JobStatus.PENDING,
        changes={"lease_until_ms": None, "ready_at_ms": now_ms},
        ready_index="enter",
        place=place(ready_at_ms=now_ms, now_ms=now_ms, priority=priority, aging_ms=aging_ms),
        tried=Tried.end(attempt, now_ms, "RELEASED"),
    )


def give_back(job: Job, *, now_ms: int, aging_ms: int) -> Transition:
    """Undo a claim whose job never reached a worker (its claim's answer was full): pending
    again at the attempt before, ready since it could first run (so still ahead of the jobs
    it was chosen before), as if it had not been claimed.

    Safe for an AT_MOST_ONCE job too: it is given back before the answer is sent, so no
    attempt of it can have started. A claim whose answer is lost after it was sent is
    not given back: its lease ends and the job stalls (`stall`)."""
    # Never before its creation: the never-claimed window counts from the ready time.
    ready = max(job.run_at_ms, job.created_at_ms)
    return Transition(
        name="give_back",
        guard=Guard(statuses=RUNNING_ONLY, attempt=job.attempt),
        to=JobStatus.PENDING,
        changes={
            "attempt": job.attempt - 1,
            "lease_until_ms": None,
            "ready_at_ms": ready,
        },
        ready_index="enter",
        place=place(ready_at_ms=ready, now_ms=now_ms, priority=job.priority, aging_ms=aging_ms),
        tried=Tried(job.attempt, undone=True),
    )


def cancel(*, now_ms: int, retention: Retention) -> Transition:
    """Cancel anything unfinished; a running worker learns it from its next report."""
    return Transition(
        name="cancel",
        guard=Guard(statuses=UNFINISHED),
        to=JobStatus.CANCELLED,
        changes=_finish(JobStatus.CANCELLED, now_ms, retention),
        ready_index="leave",
        callback_due_ms=now_ms + CALLBACK_GRACE_MS,
    )


EXPIRED = "expired"
"""The error of a job cancelled at its deadline."""


def deadline(*, now_ms: int, retention: Retention, has_callback: bool | None = None) -> Transition:
    """The job's deadline has passed unfinished: cancelled, with error `expired`. Made by
    the clock (from the deadline book), by a claim that finds the job among its candidates,
    or by a report that arrives past it; the guard lets only the first of them apply. Each
    has just read the job, so it knows whether the job has a callback."""
    return Transition(
        name="deadline",
        guard=Guard(statuses=UNFINISHED, expired_by_ms=now_ms),
        to=JobStatus.CANCELLED,
        changes=_finish(JobStatus.CANCELLED, now_ms, retention) | {"error": EXPIRED},
        ready_index="leave",
        callback_due_ms=now_ms + CALLBACK_GRACE_MS,
        has_callback=has_callback,
    )


def before_deadline(transition: Transition, *, now_ms: int) -> Transition:
    """`transition` (a worker's report) applied only while the job's deadline has not passed."""
    guard = dataclasses.replace(transition.guard, unexpired_at_ms=now_ms)
    return dataclasses.replace(transition, guard=guard)


LEASE_EXPIRED = "lease expired"


def expire(job: Job, *, now_ms: int, rand: float, retention: Retention, aging_ms: int) -> Transition:
    """The lease ran out without a report: the attempt counts as failed. For an AT_MOST_ONCE
    job the attempt may have run, so it is never retried: it stalls (`stall`)."""
    if job.guarantee == AT_MOST_ONCE:
        return stall(job, now_ms=now_ms, retention=retention)
    guard = Guard(
        statuses=RUNNING_ONLY, attempt=job.attempt, lease_ended_by_ms=now_ms, guarantee=AT_LEAST_ONCE
    )
    transition = fail(
        job,
        now_ms=now_ms,
        error=LEASE_EXPIRED,
        unrecoverable=False,
        retry_after_ms=None,
        rand=rand,
        retention=retention,
        aging_ms=aging_ms,
        guard=guard,
    )
    changes = transition.changes | {"lapsed_attempt": job.attempt}
    tried = Tried.end(job.attempt, now_ms, "EXPIRED")
    return dataclasses.replace(transition, name="expire", guard=guard, changes=changes, tried=tried)


def stall(job: Job, *, now_ms: int, retention: Retention) -> Transition:
    """An AT_MOST_ONCE job's lease ran out without a report: final, whatever attempts are
    left. Its guard is expire's (the same attempt, still running, its lease over) and the
    stored guarantee, so a tick delivered twice, or one that raced a report, changes
    nothing; the failure is counted as expire counts it."""
    return Transition(
        name="stall",
        guard=Guard(
            statuses=RUNNING_ONLY, attempt=job.attempt, lease_ended_by_ms=now_ms, guarantee=AT_MOST_ONCE
        ),
        to=JobStatus.STALLED,
        changes=_finish(JobStatus.STALLED, now_ms, retention)
        | {"failures": job.failures + 1, "error": LEASE_EXPIRED},
        callback_due_ms=now_ms + CALLBACK_GRACE_MS,
        has_callback=job.callback is not None,
        tried=Tried.end(job.attempt, now_ms, "EXPIRED"),
    )


def unclaimed(*, now_ms: int, window_ms: int, retention: Retention) -> Transition:
    """The job has waited claimable for the whole window without being handed out: it
    fails for good, which catches a typo in a job name or a retired service. A job counts
    from when it could be claimed (its ready time, never before its creation), and a job
    given back (released, or retried after a failure) from when it could be claimed again."""
    return Transition(
        name="unclaimed",
        guard=Guard(statuses=frozenset({JobStatus.PENDING}), ready_by_ms=now_ms - window_ms),
        to=JobStatus.FAILED,
        changes=_finish(JobStatus.FAILED, now_ms, retention)
        | {"error": f"not claimed within {duration(window_ms)}"},
        ready_index="leave",
        callback_due_ms=now_ms + CALLBACK_GRACE_MS,
    )


WaitReason = Literal[
    "DELAY", "BACKOFF", "PAUSED", "CONCURRENCY", "RATE", "KEY_CONCURRENCY", "KEY_RATE", "WORKER"
]
WAIT_REASONS: tuple[WaitReason, ...] = (
    "DELAY",
    "BACKOFF",
    "PAUSED",
    "CONCURRENCY",
    "RATE",
    "KEY_CONCURRENCY",
    "KEY_RATE",
    "WORKER",
)
"""In the order they are looked at: a job waits on the first that holds."""


@dataclass(frozen=True)
class NameState:
    """What holds a name's claimable jobs back now: its pause, its `concurrency` used up,
    its `rate` used up (until when the next hand-out is allowed, None: not used up)."""

    paused: bool = False
    at_concurrency: bool = False
    rate_until_ms: int | None = None
    key_at_concurrency: bool = False
    """The job's own `concurrencyKey` has `perKeyConcurrency` jobs running."""
    key_rate_until_ms: int | None = None
    """When the `perKeyRate` of the job's own key next allows a hand-out, if used up."""


def waiting_on(job: Job, *, now_ms: int, name: NameState) -> tuple[WaitReason, int | None] | None:
    """Why a pending job is not running (and until when, for a wait on time); None for a
    job that is not pending. Its first time (DELAY: never handed out yet) or a retry's wait
    (BACKOFF) comes first, then its name's pause, concurrency and rate; else it is
    claimable, and waits for a worker to ask for its name."""
    if job.status != JobStatus.PENDING:
        return None
    ready = job.ready_at_ms if job.ready_at_ms is not None else job.run_at_ms
    if ready > now_ms:
        return ("DELAY" if job.attempt == 0 else "BACKOFF"), ready
    if name.paused:
        return "PAUSED", None
    if name.at_concurrency:
        return "CONCURRENCY", None
    if name.rate_until_ms is not None:
        return "RATE", name.rate_until_ms
    if name.key_at_concurrency:
        return "KEY_CONCURRENCY", None
    if name.key_rate_until_ms is not None:
        return "KEY_RATE", name.key_rate_until_ms
    return "WORKER", None


def duration(ms: int) -> str:
    """7d, 12h, 90m, 45s: the largest unit that divides the window exactly."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"
