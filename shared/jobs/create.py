"""Creating jobs: each request checked and resolved into what is written, room taken
under the space's `maxInFlight`, then one write of them all.

The create path is the only way a job comes to be: a producer's create, a retry
(`shared.jobs.retry`) and a notice (`shared.jobs.notify`) all come through `create`, so
every rule a new job is held to (limits, a callback's target, keys, the space's cap)
holds for each of them alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from shared import defaults, limits
from shared.errors import InvalidArgument, ResourceExhausted
from shared.job import Fired
from shared.jobs.context import Context
from shared.jobs.records import new_record
from shared.policy import SpacePolicies
from shared.schema import NewJob
from shared.settings import Settings
from shared.store.port import HEAL, Inserted, NewRecord, Reservation, RetryOf

ROOM_RETRY_MS = 1_000
"""How long a producer turned away by a full space is told to wait."""

Placed = list[tuple[int, NewRecord]]
"""Records to write, each with its request's place in the create."""


def create(
    ctx: Context,
    space: str,
    requests: list[NewJob],
    *,
    batch: bool,
    apply_defaults: bool = True,
    retry_of: Sequence[RetryOf] | None = None,
    field: str = "jobs",
    once: str | None = None,
    fired: Fired | None = None,
) -> list[Inserted]:
    """Create jobs, all or none: every job is checked before anything is written.

    `apply_defaults=False` leaves the names' `jobDefaults` out (notification jobs and
    retries: the contract does not apply them there, and a retry copies its old job's
    options). `retry_of` (one per request) makes retries (`shared.jobs.retry`): each job is
    written with its old job's retry mark, so an old job is retried once (a repeat
    answers the job its mark names, not NEW). `field`: what messages name the requests by.

    With `once` (one request: a notification, `shared.jobs.notify`), the job gets that id and
    is written unless a job has it (then: DUPLICATE, that id), and it is counted under
    the space's `maxInFlight` but never refused by it: a notice turned away would be
    lost, or would hold up every record behind it. A schedule's job (`fired`: the
    schedule and fire time that make it, `shared.jobs.schedules`) is made the same way."""
    now = ctx.clock.now_ms()
    settings = ctx.settings.get(space)
    cap = settings.max_in_flight
    if once is not None and len(requests) != 1:
        raise ValueError("a fixed id goes with exactly one job")
    if cap is not None and len(requests) > cap and once is None:
        raise InvalidArgument(
            f"{field}: a batch of {len(requests)} is larger than the space's maxInFlight of {cap}"
        )
    outcomes: list[Inserted | None] = [None] * len(requests)
    policies = ctx.policies.space(space)
    defaulted: list[frozenset[str]] = [frozenset()] * len(requests)
    if apply_defaults:
        # Before any check: a default is checked and resolved as if the creator sent it.
        sent = requests
        requests = [defaults.fill(r, policies.job_defaults.get(r.name)) for r in requests]
        defaulted = [defaults.filled(b, a) for b, a in zip(sent, requests, strict=True)]
    records = _new_records(
        ctx,
        space,
        requests,
        settings,
        now,
        policies=policies,
        outcomes=outcomes,
        at=f"{field}[{{}}]." if batch else "",
        retry_of=retry_of,
        once=once,
        defaulted=defaulted,
        fired=fired,
    )
    records, reservation = _reserve(
        ctx, space, records, outcomes, settings=settings, now=now, refuse=once is None
    )
    inserted = _write(
        ctx, space, records, reservation=reservation, settings=settings, policies=policies, now=now
    )
    made: dict[str, int] = {}
    for (i, record), outcome in zip(records, inserted, strict=True):
        outcomes[i] = outcome
        made[record.job.name] = made.get(record.job.name, 0) + outcome.new
    for name, jobs in made.items():
        ctx.spreader.created(space, name, jobs, policies.spread(name), now)
    return [o for o in outcomes if o is not None]


def _write(
    ctx: Context,
    space: str,
    records: Placed,
    *,
    reservation: Reservation | None,
    settings: Settings,
    policies: SpacePolicies,
    now: int,
) -> list[Inserted]:
    """Write the records (their names listed first), and settle the room they reserved:
    what a repeat took is given back."""
    try:
        # Names first: a job whose name is not listed is never found by a claim without
        # names, nor by the clock's check for jobs nobody claims.
        ctx.spaces.register_names(space, {r.job.name for _, r in records}, now)
        inserted = ctx.jobs.insert(
            space,
            [r for _, r in records],
            key_released=lambda holder: holder.released(settings.key_window_ms, now),
            reservation=reservation,
            per_key={n: policies.get(n).per_key_concurrency for n in {r.job.name for _, r in records}},
        )
    except Exception:
        # Every job is checked before anything is written, so this is a fault of the
        # store: give back the room its jobs did not take rather than lose it (until the
        # clock heals it).
        if reservation is not None:
            ctx.spaces.settle(reservation)
        raise
    if reservation is not None:
        ctx.spaces.settle(reservation, sum(1 for o in inserted if not o.new))
    return inserted


def create_once(ctx: Context, space: str, request: NewJob, job_id: str) -> Inserted:
    """Create a notification job with the id its ending gives it, once (`shared.jobs.notify`):
    through the create path, with no jobDefaults of its name."""
    [made] = create(ctx, space, [request], batch=False, apply_defaults=False, once=job_id)
    return made


def _new_records(
    ctx: Context,
    space: str,
    requests: list[NewJob],
    settings: Settings,
    now: int,
    *,
    policies: SpacePolicies,
    outcomes: list[Inserted | None],
    at: str,
    retry_of: Sequence[RetryOf] | None,
    once: str | None,
    defaulted: Sequence[frozenset[str]],
    fired: Fired | None = None,
) -> Placed:
    """Each request checked and resolved into what is written (by its place in the
    request); a key sent twice in one request is answered with its first job, in
    `outcomes`. `at`: the prefix of messages, `{}` for the request's place."""
    records: Placed = []
    first_with_key: dict[str, str] = {}
    for i, request in enumerate(requests):
        policy = policies.get(request.name)
        record = new_record(
            ctx,
            space,
            request,
            settings=settings,
            now=now,
            at=at.format(i),
            aging_ms=policy.aging_ms,
            width=policies.spread(request.name).width,
            retry_of=retry_of[i] if retry_of is not None else None,
            job_id=once,
            defaulted=defaulted[i],
            fired=fired,
        )
        if request.key is not None and request.key in first_with_key:
            outcomes[i] = Inserted(first_with_key[request.key], False)
            continue
        if request.key is not None:
            first_with_key[request.key] = record.job.id
        records.append((i, record))
    return records


def _reserve(
    ctx: Context,
    space: str,
    records: Placed,
    outcomes: list[Inserted | None],
    *,
    settings: Settings,
    now: int,
    refuse: bool = True,
) -> tuple[Placed, Reservation | None]:
    """Room for `records` under the space's `maxInFlight` (None: no cap, nothing counted),
    and the records still to write. A full space still answers a repeat of a keyed create
    with its job: it adds nothing. Without `refuse`, the records are counted whatever
    the count is."""
    cap = settings.max_in_flight
    if cap is None or not records:
        return records, None
    # Before the room is taken: should this create die before it settles, the clock gives
    # the room back then (one filing a minute, whatever the creates).
    ctx.timers.once(
        space, HEAL, "", now + limits.STALE_RESERVATION_MS + limits.MINUTE_MS, per_ms=limits.MINUTE_MS
    )
    if not refuse:
        return records, ctx.spaces.reserve(space, len(records), limits.UNCAPPED, now)
    reservation = ctx.spaces.reserve(space, len(records), cap, now)
    if reservation is None:
        records = _without_held_keys(ctx, space, records, outcomes, settings=settings, now=now)
        if records and (reservation := ctx.spaces.reserve(space, len(records), cap, now)) is None:
            raise ResourceExhausted(
                f"space {space} has its maxInFlight of {cap} unfinished jobs; try again later",
                retry_after_ms=ROOM_RETRY_MS,
            )
    return records, reservation


def _without_held_keys(
    ctx: Context,
    space: str,
    records: Placed,
    outcomes: list[Inserted | None],
    *,
    settings: Settings,
    now: int,
) -> Placed:
    """Answer DUPLICATE for records whose key an existing job holds, and retries of jobs
    already retried; the rest remain."""
    remaining = []
    retried = ctx.jobs.retries(space, [r.job.retry_of for _, r in records if r.job.retry_of])
    for i, record in records:
        if record.job.retry_of in retried:
            outcomes[i] = Inserted(retried[record.job.retry_of], False)
            continue
        key = record.job.key
        holder = ctx.jobs.holder(space, key) if key is not None else None
        if holder is not None and not holder.released(settings.key_window_ms, now):
            outcomes[i] = Inserted(holder.job_id, False)
        else:
            remaining.append((i, record))
    return remaining
