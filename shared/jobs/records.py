"""A create request checked and resolved into the record a create writes: the job with
its options resolved against the space's settings, its place in the claim order, and
its payload packed (in the item, or beside it when it does not fit).

Apart from the create's writes (`shared.jobs.create`): everything here is checked before
anything is written, so a refusal (400, naming the field) costs nothing.
"""

from __future__ import annotations

from shared import limits
from shared.errors import InvalidArgument
from shared.job import AT_LEAST_ONCE, Backoff, Callback, Fired, Job, JobStatus, place
from shared.jobs.context import Context
from shared.schema import NewJob, dump_json
from shared.settings import Settings
from shared.store.port import NewRecord, RetryOf


def new_record(
    ctx: Context,
    space: str,
    request: NewJob,
    *,
    settings: Settings,
    now: int,
    at: str,
    aging_ms: int,
    width: int,
    retry_of: RetryOf | None = None,
    job_id: str | None = None,
    defaulted: frozenset[str] = frozenset(),
    fired: Fired | None = None,
) -> NewRecord:
    """A request checked and resolved into what is written. `job_id`: the id it must
    have (a notice's, `shared.jobs.notify`), written only if no job has it (`NewRecord.once`)."""
    run_at = request.runAtMs if request.runAtMs is not None else now + (request.delayMs or 0)
    if run_at > now + limits.MAX_DELAY_MS:
        raise InvalidArgument(f"{at}runAtMs: must be at most a year ahead ({now + limits.MAX_DELAY_MS})")
    expires_at = _deadline(request, now, run_at, at, defaulted)
    if request.callback is not None:
        ctx.targets.check_url(request.callback.url, at=f"{at}callback.url")
    raw = dump_json(request.payload)
    if len(raw) > limits.MAX_PAYLOAD_BYTES:
        raise InvalidArgument(f"{at}payload: must be at most {limits.MAX_PAYLOAD_BYTES} bytes of JSON")
    spec = request.backoff
    default = settings.backoff()
    job = Job(
        id=job_id or ctx.ids.new(now),
        space=space,
        name=request.name,
        status=JobStatus.PENDING,
        attempt=0,
        failures=0,
        max_attempts=request.maxAttempts or settings.max_attempts,
        timeout_ms=request.timeoutMs or settings.timeout_ms,
        backoff=Backoff(
            kind=(spec.kind if spec and spec.kind else default.kind),
            base_ms=request.backoffMs if request.backoffMs is not None else default.base_ms,
            max_ms=(spec.maxMs if spec and spec.maxMs is not None else default.max_ms),
            jitter=(spec.jitter if spec and spec.jitter is not None else default.jitter),
        ),
        created_at_ms=now,
        run_at_ms=max(run_at, 0),
        # A job due in the past can be claimed from now: its wait (for claims' order and
        # the never-claimed window) starts at its creation.
        ready_at_ms=max(run_at, now),
        key=request.key,
        priority=request.priority,
        concurrency_key=request.concurrencyKey,
        guarantee=request.guarantee or AT_LEAST_ONCE,
        expires_at_ms=expires_at,
        callback=Callback(request.callback.url, request.callback.headers) if request.callback else None,
        retry_of=retry_of.job_id if retry_of is not None else None,
        schedule=fired,
        traceparent=request.traceparent,
    )
    assert job.ready_at_ms is not None
    where = place(ready_at_ms=job.ready_at_ms, now_ms=now, priority=job.priority, aging_ms=aging_ms)
    return NewRecord.packing(
        space,
        job,
        raw,
        where,
        width,
        retry_ttl=retry_of.ttl if retry_of is not None else None,
        once=job_id is not None,
    )


def _deadline(
    request: NewJob, now: int, run_at: int, at: str, defaulted: frozenset[str] = frozenset()
) -> int | None:
    """The job's deadline from `expiresAtMs` or `expiresInMs` (None: it has none). It must be
    at most a year ahead, and after the job's first time: a job whose deadline comes first
    could never run. `defaulted`: the fields its name's `jobDefaults` gave it, which a
    message then says (the creator never sent them)."""
    if request.expiresAtMs is not None and request.expiresInMs is not None:
        raise InvalidArgument(f"{at}expiresInMs: give expiresAtMs or expiresInMs, not both")
    if request.expiresInMs is not None:
        field, expires_at = "expiresInMs", now + request.expiresInMs
    elif request.expiresAtMs is not None:
        field, expires_at = "expiresAtMs", request.expiresAtMs
    else:
        return None
    if expires_at > now + limits.MAX_DELAY_MS:
        raise InvalidArgument(f"{at}{field}: must be at most a year ahead ({now + limits.MAX_DELAY_MS})")
    if expires_at <= max(run_at, now):
        first = max(run_at, now)
        given = [f"jobDefaults.{request.name}.{f}" for f in (field, "delayMs") if f in defaulted]
        origin = f" ({' and '.join(given)} for its name)" if given else ""
        raise InvalidArgument(f"{at}{field}: must be later than the job can first run ({first}){origin}")
    return expires_at
