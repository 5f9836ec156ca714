"""Manual retry (`jobs:retry`): a new job made from each failed one, at most once per job.

A finished job never changes, so the retry is a new job, with the old one's name, payload
and options (not its idempotency key: that belongs to the old job's producer) and
`retryOf` naming it. It is made through the create path (`shared.jobs.create`), so a space's
`maxInFlight` and everything else a create holds apply as they do to any new job.

Once per old job: the new job is written in one transaction with the old job's retry mark
(`keys.retry_marker`), on condition that no mark exists. Of any number of racing retries
one writes; the others find the mark and answer the job it names as `DUPLICATE`, as does
every later retry while the old job is kept (the mark has the old job's TTL).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.errors import InvalidArgument
from shared.ids import is_ulid
from shared.job import RETRYABLE, Job
from shared.jobs.context import Context
from shared.jobs.create import create
from shared.jobs.outcomes import Refused, Retried, RetryOutcome
from shared.schema import NewJob, parse
from shared.store.port import RetryOf, Snapshot


@dataclass
class _Wanted:
    """An old job to make a retry of: where its outcome goes, and the create request."""

    at: int
    old_id: str
    request: NewJob
    origin: RetryOf


def retry(ctx: Context, space: str, ids: list[str]) -> list[RetryOutcome]:
    """One outcome per id, in order: the new job (`NEW`, or `DUPLICATE` when the old job was
    retried before, or earlier in `ids`), or a rejection (`NOT_FOUND`, `NOT_RETRYABLE`)."""
    outcomes: list[RetryOutcome | None] = [None] * len(ids)
    first: dict[str, int] = {}
    fresh = _fresh(ctx, space, ids, outcomes, first)
    wanted = _wanted(ctx, space, fresh, outcomes, first)
    if wanted:
        made = create(
            ctx,
            space,
            [w.request for w in wanted],
            batch=True,
            apply_defaults=False,
            retry_of=[w.origin for w in wanted],
            field="ids",
        )
        for w, inserted in zip(wanted, made, strict=True):
            outcomes[w.at] = _outcome(inserted.id, w.old_id, new=inserted.new)
    for at, old_id in enumerate(ids):
        if outcomes[at] is None:  # a repeat of an id earlier in the request: answered alike
            earlier = outcomes[first[old_id]]
            outcomes[at] = (
                _outcome(earlier.id, old_id, new=False) if isinstance(earlier, Retried) else earlier
            )
    return [o for o in outcomes if o is not None]


def _fresh(
    ctx: Context, space: str, ids: list[str], outcomes: list[RetryOutcome | None], first: dict[str, int]
) -> list[Snapshot]:
    """The old jobs to retry now, each id once (its first place in `first`); the others
    are answered in `outcomes` (a repeat of an id is left for its first)."""
    now = ctx.clock.now_ms()
    known = [i for i in ids if is_ulid(i)]
    seen = ctx.jobs.snapshots(space, known, consistent=True) if known else {}
    retried = ctx.jobs.retries(space, known) if known else {}
    fresh = []
    for at, old_id in enumerate(ids):
        found = seen.get(old_id)
        if found is None or found.job.purged(now):
            outcomes[at] = Refused("NOT_FOUND", f"job {old_id} does not exist")
        elif found.job.status not in RETRYABLE:
            statuses = " or ".join(sorted(s.value.lower() for s in RETRYABLE))
            outcomes[at] = Refused(
                "NOT_RETRYABLE",
                f"job {old_id} is {found.job.status.value}: only {statuses} jobs are retried",
            )
        elif old_id in retried:
            outcomes[at] = _outcome(retried[old_id], old_id, new=False)
        elif old_id not in first:
            first[old_id] = at
            fresh.append(found)
    return fresh


def _wanted(
    ctx: Context,
    space: str,
    fresh: list[Snapshot],
    outcomes: list[RetryOutcome | None],
    first: dict[str, int],
) -> list[_Wanted]:
    """The create requests of the old jobs in `fresh`; one that cannot be made again is
    answered in `outcomes`."""
    wanted = []
    payloads = ctx.jobs.payloads(space, fresh)
    for old, raw in zip((s.job for s in fresh), payloads, strict=True):
        at = first[old.id]
        try:
            request = _checked(ctx, old, raw)
        except InvalidArgument as refused:
            # This job alone cannot be made again (it was made under rules since tightened):
            # answered for its id, as every other refusal is, and the rest are retried.
            outcomes[at] = Refused("NOT_RETRYABLE", f"job {old.id} cannot be retried: {refused.message}")
            continue
        wanted.append(_Wanted(at, old.id, request, RetryOf.of(old)))
    return wanted


def _checked(ctx: Context, old: Job, raw: bytes | None) -> NewJob:
    """The retry's create request, checked by the rules of a create that are the job's own
    (its fields, its callback's address), so one job that breaks them is refused alone."""
    request = parse(NewJob, _request(old, raw))
    if request.callback is not None:
        ctx.targets.check_url(request.callback.url)
    return request


def _request(old: Job, raw: bytes | None) -> dict[str, Any]:
    """The create request of a retry: the old job's name, payload and options as they were
    resolved for it (so a change of the space's defaults since does not change the retry).
    It runs now: a delay was the old job's, and has passed; a deadline keeps its span (the
    time the old job had from when it could first run), not its instant, which has passed."""
    request: dict[str, Any] = {
        "name": old.name,
        "payload": None if raw is None else json.loads(raw),
        "maxAttempts": old.max_attempts,
        "timeoutMs": old.timeout_ms,
        "backoffMs": old.backoff.base_ms,
        "backoff": {"kind": old.backoff.kind, "maxMs": old.backoff.max_ms, "jitter": old.backoff.jitter},
        "priority": old.priority,
        "guarantee": old.guarantee,
    }
    if old.expires_at_ms is not None:
        # The deadline as the time the old job was given from when it could first run.
        request["expiresInMs"] = max(1, old.expires_at_ms - max(old.created_at_ms, old.run_at_ms))
    if old.concurrency_key is not None:
        request["concurrencyKey"] = old.concurrency_key
    if old.callback is not None:
        request["callback"] = {"url": old.callback.url, "headers": old.callback.headers}
    if old.traceparent is not None:
        # The retry goes on in the old job's trace: its worker's spans join the producer's.
        request["traceparent"] = old.traceparent
    return request


def _outcome(new_id: str, old_id: str, *, new: bool) -> Retried:
    return Retried(new_id, old_id, new)
