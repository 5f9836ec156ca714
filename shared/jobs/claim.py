"""Claiming jobs: a worker's request for work, answered with the jobs it now runs.

A claim looks (the store chooses by order of hand-out, under each name's pause,
concurrency, rate and spread), and with `waitMs` looks again with pauses that grow
while nothing comes. The answer is measured as it is sent: the store chose by stored
sizes, the answer's own bytes decide what goes.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from shared import render, wire
from shared.jobs.context import Context
from shared.jobs.deadlines import afterthought, cancel_found
from shared.machine import Job
from shared.machine import fail as fail_transition
from shared.machine import give_back as give_back_transition
from shared.observability import logger
from shared.policy import Policy
from shared.store.blobs import pack, replacing
from shared.store.counters import Owner
from shared.store.jobs import Claimed, NameLimits


def claim(
    ctx: Context, space: str, *, count: int, names: list[str] | None, wait_ms: int, lease_ms: int | None
) -> list[dict[str, Any]]:
    """Hand out up to `count` jobs in order of hand-out; with `wait_ms`, wait for work to
    arrive. Paused names are not looked at. Each job is answered as `answers.Claimed`
    shows it (rendered here, where the answer is measured)."""
    deadline = ctx.clock.now_ms() + min(wait_ms, ctx.config.max_wait_ms)
    pause = ctx.config.poll_ms
    while True:
        now = ctx.clock.now_ms()
        claimed = _look(ctx, space, names, count=count, lease_ms=lease_ms, now=now)
        if claimed or now >= deadline:
            return _answer(ctx, space, claimed, now)
        ctx.clock.sleep(min(pause, deadline - now) / 1000)
        # Every look costs reads: an idle worker looks less and less often, up to a limit.
        pause = min(pause * 2, ctx.config.poll_max_ms)


def _look(
    ctx: Context, space: str, names: list[str] | None, *, count: int, lease_ms: int | None, now: int
) -> list[Claimed]:
    """One look for work: the jobs the store hands out now under the names' policies."""
    wanted = sorted(set(names)) if names else ctx.spaces.names(space)
    policies = ctx.policies.space(space)
    running = {n: policy.aging_ms for n in wanted if not (policy := policies.get(n)).paused}
    return ctx.jobs.claim(
        space,
        running,
        count=count,
        now_ms=now,
        lease_ms=lease_ms,
        payload_budget=ctx.config.claim_payload_bytes,
        reach={n: policies.spread(n).reach for n in running},
        limits={n: limits for n in running if (limits := name_limits(policies.get(n)))},
        per_key={n: policies.get(n).per_key_concurrency for n in running},
        per_key_rate={n: (r.tokens, r.interval_ms) for n in running if (r := policies.get(n).per_key_rate)},
        on_expired=functools.partial(cancel_found, ctx, space, now=now),
    )


def _answer(ctx: Context, space: str, claimed: list[Claimed], now: int) -> list[dict[str, Any]]:
    """The claimed jobs as the answer shows them, measured as it is sent (`shared.wire`).

    The store chose jobs by their stored payload sizes; the answer's own bytes decide.
    A job that would take the answer past `claim_payload_bytes` is given back untouched
    (the first job always goes: it could never go otherwise). A job that cannot be shown
    at all fails for good rather than fail every claim that picks it. Either way the
    other jobs this claim won are answered: none is left running unseen."""
    answer: list[dict[str, Any]] = []
    size = wire.cost(wire.text({"jobs": []}))
    for c in claimed:
        job = ctx.jobs.load(space, c.item, bodies=False)
        try:
            shown = render.claimed(job, None if c.raw is None else json.loads(c.raw))
            cost = wire.cost(wire.text(shown)) + (1 if answer else 0)  # the comma before it
        except (ValueError, RecursionError):
            logger.exception("a claimed job cannot be shown", extra={"action": "claim", "job": job.id})
            _unshowable(ctx, space, job, now)
            continue
        if answer and size + cost > ctx.config.claim_payload_bytes:
            with afterthought(job):
                aging_ms = ctx.policies.get(space, job.name).aging_ms
                ctx.jobs.apply(space, job.id, give_back_transition(job, now_ms=now, aging_ms=aging_ms))
            continue
        answer.append(shown)
        size += cost
    return answer


def _unshowable(ctx: Context, space: str, job: Job, now: int) -> None:
    """Fail for good a job whose payload cannot be shown (say, one stored before nesting
    was bounded): no later claim could show it either."""
    with afterthought(job):
        error = "emit could not read this job's payload to hand it out"
        transition = fail_transition(
            job,
            now_ms=now,
            error=error,
            unrecoverable=True,
            retry_after_ms=None,
            rand=0.0,
            retention=ctx.settings.get(space).retention,
            aging_ms=ctx.policies.get(space, job.name).aging_ms,
        )
        packed = pack(space, job.id, "error", error.encode(), attempt=job.attempt)
        ctx.jobs.blobs.store([packed])
        owner = Owner(job.name, job.concurrency_key)
        ctx.jobs.apply(space, job.id, transition, stored=replacing("error", packed), owner=owner)


def name_limits(policy: Policy) -> NameLimits | None:
    """The counted limits a claim enforces for a name (None: it has none). Per-key limits
    are not enforced yet."""
    if policy.concurrency is None and policy.rate is None:
        return None
    rate = policy.rate
    return NameLimits(
        concurrency=policy.concurrency,
        rate_tokens=rate.tokens if rate else None,
        rate_interval_ms=rate.interval_ms if rate else None,
    )
