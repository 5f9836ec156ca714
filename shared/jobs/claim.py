"""Claiming jobs: a worker's request for work, answered with the jobs it now runs.

A claim looks (the store chooses by order of hand-out, under each name's pause,
concurrency, rate and spread), and with `waitMs` looks again with pauses that grow
while nothing comes. The answer is measured as it is sent: the store chose by stored
sizes, the answer's own bytes decide what goes. So the claim is handed how its caller
shows a job (`show`, the handler's rendering) and measures that; it renders nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from shared import wire
from shared.job import Job
from shared.jobs.context import Context
from shared.jobs.deadlines import afterthought, cancel_found
from shared.machine import fail as fail_transition
from shared.machine import give_back as give_back_transition
from shared.observability import logger
from shared.policy import Policy
from shared.store.port import ClaimPlan, ClaimResult, NameClaim, Owner

Shown = TypeVar("Shown")
"""A claimed job as the answer shows it (JSON: the claim measures it as `shared.wire` sends it)."""

UNREADABLE = "emit could not read this job's payload to hand it out"
"""The error of a job failed for good because no claim could show its payload."""


def claim(
    ctx: Context,
    space: str,
    *,
    count: int,
    names: list[str] | None,
    wait_ms: int,
    lease_ms: int | None,
    show: Callable[[Job], Shown],
) -> list[Shown]:
    """Hand out up to `count` jobs in order of hand-out; with `wait_ms`, wait for work to
    arrive. Paused names are not looked at. Each job is answered as `show` shows it (the
    caller's rendering, `shared.render.claimed` for the API), measured here."""
    deadline_ms = ctx.clock.now_ms() + min(wait_ms, ctx.config.max_wait_ms)
    pause = ctx.config.poll_ms
    while True:
        now = ctx.clock.now_ms()
        found = _look(ctx, space, names, count=count, lease_ms=lease_ms, now=now)
        _settle(ctx, space, found, now)
        # A look that won jobs answers, even when none of them can be shown.
        if found.claimed or found.unreadable or now >= deadline_ms:
            return _answer(ctx, space, found.claimed, now, show)
        ctx.clock.sleep(min(pause, deadline_ms - now) / 1000)
        # Every look costs reads: an idle worker looks less and less often, up to a limit.
        pause = min(pause * 2, ctx.config.poll_max_ms)


def _look(
    ctx: Context, space: str, names: list[str] | None, *, count: int, lease_ms: int | None, now: int
) -> ClaimResult:
    """One look for work: the jobs the store hands out now under the names' policies."""
    wanted = sorted(set(names)) if names else ctx.spaces.names(space)
    policies = ctx.policies.space(space)
    terms = {
        n: name_claim(policy, reach=policies.spread(n).reach)
        for n in wanted
        if not (policy := policies.get(n)).paused
    }
    plan = ClaimPlan(terms, count=count, lease_ms=lease_ms, payload_budget=ctx.config.claim_payload_bytes)
    return ctx.jobs.claim(space, plan, now_ms=now)


def _settle(ctx: Context, space: str, found: ClaimResult, now: int) -> None:
    """What a look found besides the jobs it answers: those past their deadline are
    cancelled, as the clock would have; those it won but can never show fail for good."""
    for job in found.expired:
        cancel_found(ctx, space, job, now=now)
    for job in found.unreadable:
        logger.error("a claimed job cannot be shown", extra={"action": "claim", "job": job.id})
        _unshowable(ctx, space, job, now)


def _answer(
    ctx: Context, space: str, claimed: list[Job], now: int, show: Callable[[Job], Shown]
) -> list[Shown]:
    """The claimed jobs as the answer shows them, measured as it is sent (`shared.wire`).

    The store chose jobs by their stored payload sizes; the answer's own bytes decide.
    A job that would take the answer past `claim_payload_bytes` is given back untouched
    (the first job always goes: it could never go otherwise). A job that cannot be shown
    at all fails for good rather than fail every claim that picks it. Either way the
    other jobs this claim won are answered: none is left running unseen."""
    answer: list[Shown] = []
    size = wire.cost(wire.text({"jobs": []}))
    for job in claimed:
        try:
            shown = show(job)
            cost = wire.cost(wire.text(shown)) + (1 if answer else 0)  # the comma before it
        except (ValueError, RecursionError):
            logger.exception("a claimed job cannot be shown", extra={"action": "claim", "job": job.id})
            _unshowable(ctx, space, job, now)
            continue
        if answer and size + cost > ctx.config.claim_payload_bytes:
            with afterthought(job):
                aging_ms = ctx.policies.get(space, job.name).aging_ms
                ctx.jobs.transition(space, job.id, give_back_transition(job, now_ms=now, aging_ms=aging_ms))
            continue
        answer.append(shown)
        size += cost
    return answer


def _unshowable(ctx: Context, space: str, job: Job, now: int) -> None:
    """Fail for good a job whose payload cannot be shown (say, one stored before nesting
    was bounded): no later claim could show it either. The error is short: it lives in
    the job's own item, with nothing to store beside it first."""
    with afterthought(job):
        transition = fail_transition(
            job,
            now_ms=now,
            error=UNREADABLE,
            unrecoverable=True,
            retry_after_ms=None,
            rand=0.0,
            retention=ctx.settings.get(space).retention,
            aging_ms=ctx.policies.get(space, job.name).aging_ms,
        )
        error = ctx.jobs.pack(space, job.id, "error", UNREADABLE.encode(), attempt=job.attempt)
        owner = Owner(job.name, job.concurrency_key)
        ctx.jobs.transition(space, job.id, transition, value=error, owner=owner)


def name_claim(policy: Policy, *, reach: int) -> NameClaim:
    """A name's terms in a claim: its aging interval, the ready shards its spread reaches
    (`reach`), and the limits its policy counts hand-outs under."""
    rate, per_key_rate = policy.rate, policy.per_key_rate
    return NameClaim(
        aging_ms=policy.aging_ms,
        reach=reach,
        concurrency=policy.concurrency,
        rate=(rate.tokens, rate.interval_ms) if rate else None,
        per_key_concurrency=policy.per_key_concurrency,
        per_key_rate=(per_key_rate.tokens, per_key_rate.interval_ms) if per_key_rate else None,
    )
