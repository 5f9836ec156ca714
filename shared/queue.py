"""The queue's operations: create, claim, report, cancel, read.

Each operation decides with `shared.machine` and persists with `shared.store`; the
Lambda handlers only parse, call one of these, and render.
"""

from __future__ import annotations

import contextlib
import functools
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from shared import defaults, limits, render, wire
from shared.clock import Clock
from shared.deadlines import cancel_expired
from shared.errors import InvalidArgument, NotFound, ResourceExhausted
from shared.ids import IdGenerator, is_ulid
from shared.machine import (
    AT_LEAST_ONCE,
    Backoff,
    Callback,
    Job,
    JobStatus,
    NameState,
    Retention,
    Transition,
    before_deadline,
    place,
    refusal,
    waiting_on,
)
from shared.machine import cancel as cancel_transition
from shared.machine import complete as complete_transition
from shared.machine import fail as fail_transition
from shared.machine import give_back as give_back_transition
from shared.machine import keep as keep_transition
from shared.machine import release as release_transition
from shared.machine import touch as touch_transition
from shared.observability import logger
from shared.policy import Policies, Policy, SpacePolicies
from shared.schema import NewJob, Report, dump_json, parse
from shared.settings import Settings
from shared.spaces import SpaceSettings
from shared.spread import Spreader
from shared.store.blobs import ITEM_BUDGET, PLACES, Packed, pack, replacing
from shared.store.codec import LAPSED, UpdateBuilder, approximate_size, expired, job_item, purged
from shared.store.counters import Owner
from shared.store.deliveries import DeliveryStore
from shared.store.dynamo import ConditionFailed, Item
from shared.store.jobs import (
    Claimed,
    Inserted,
    JobStore,
    KeyHold,
    NameLimits,
    NewRecord,
    Reservation,
    RetryOf,
)
from shared.store.journal import Journal
from shared.store.spaces import SpaceStore
from shared.store.spread import SpreadStore
from shared.targets import TargetPolicy

ROOM_RETRY_MS = 1_000
"""How long a producer turned away by a full space is told to wait."""


@dataclass(frozen=True)
class QueueConfig:
    max_wait_ms: int = limits.MAX_CLAIM_WAIT_MS
    """Longest a claim waits for work; below the gateway's integration timeout on AWS."""
    poll_ms: int = 50
    """How soon a waiting claim first looks again; the pause doubles while nothing comes."""
    poll_max_ms: int = 200
    """The longest pause between looks: how late a waiting claim may see new work."""
    claim_payload_bytes: int = limits.MAX_CLAIM_PAYLOAD_BYTES
    """Where a claim's answer stops; on AWS, under Lambda's 6 MB response limit."""


class Queue:
    def __init__(
        self,
        *,
        clock: Clock,
        jobs: JobStore,
        spaces: SpaceStore,
        settings: SpaceSettings,
        journal: Journal,
        deliveries: DeliveryStore,
        targets: TargetPolicy,
        config: QueueConfig,
        policies: Policies,
        rand: Callable[[], float] = random.random,
        spreader: Spreader | None = None,
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.spaces = spaces
        self.settings = settings
        self.policies = policies
        self.journal = journal
        self.deliveries = deliveries
        self.targets = targets
        self.config = config
        self.rand = rand
        self.spreader = spreader or Spreader(SpreadStore(jobs.db))
        self._ids = IdGenerator()

    # -- create ---------------------------------------------------------------

    def create(
        self,
        space: str,
        requests: list[NewJob],
        *,
        batch: bool,
        apply_defaults: bool = True,
        retry_of: Sequence[RetryOf] | None = None,
        field: str = "jobs",
        once: str | None = None,
    ) -> list[Inserted]:
        """Create jobs, all or none: every job is checked before anything is written.

        `apply_defaults=False` leaves the names' `jobDefaults` out (notification jobs and
        retries: the contract does not apply them there, and a retry copies its old job's
        options). `retry_of` (one per request) makes retries (`shared.retry`): each job is
        written with its old job's retry mark, so an old job is retried once (a repeat
        answers the job its mark names, not NEW). `field`: what messages name the requests by.

        With `once` (one request: a notification, `shared.notify`), the job gets that id and
        is written unless a job has it (then: DUPLICATE, that id), and it is counted under
        the space's `maxInFlight` but never refused by it: a notice turned away would be
        lost, or would hold up every record behind it."""
        now = self.clock.now_ms()
        settings = self.settings.get(space)
        cap = settings.max_in_flight
        if once is not None and len(requests) != 1:
            raise ValueError("a fixed id goes with exactly one job")
        if cap is not None and len(requests) > cap and once is None:
            raise InvalidArgument(
                f"{field}: a batch of {len(requests)} is larger than the space's maxInFlight of {cap}"
            )
        outcomes: list[Inserted | None] = [None] * len(requests)
        policies = self.policies.space(space)
        defaulted: list[frozenset[str]] = [frozenset()] * len(requests)
        if apply_defaults:
            # Before any check: a default is checked and resolved as if the creator sent it.
            sent = requests
            requests = [defaults.fill(r, policies.job_defaults.get(r.name)) for r in requests]
            defaulted = [defaults.filled(b, a) for b, a in zip(sent, requests, strict=True)]
        records = self._new_records(
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
        )
        records, reservation = self._reserve(space, records, outcomes, settings, now, refuse=once is None)
        try:
            # Names first: a job whose name is not listed is never found by a claim without
            # names, nor by the clock's check for jobs nobody claims.
            self.spaces.register_names(space, {r.job.name for _, r in records}, now)
            if any(r.job.callback is not None for _, r in records):
                self.spaces.register_callbacks(space)  # before a job whose delivery the clock must find
            inserted = self.jobs.insert(
                space,
                [r for _, r in records],
                key_released=lambda item: self._key_released(item, settings, now),
                reservation=reservation,
                per_key={n: policies.get(n).per_key_concurrency for n in {r.job.name for _, r in records}},
            )
        except Exception:
            # Every job is checked before anything is written, so this is a fault of the
            # store: give back the room its jobs did not take rather than lose it (until the
            # clock heals it).
            if reservation is not None:
                self.spaces.settle(reservation)
            raise
        if reservation is not None:
            self.spaces.settle(reservation, sum(1 for o in inserted if not o.new))
        made: dict[str, int] = {}
        for (i, record), outcome in zip(records, inserted, strict=True):
            outcomes[i] = outcome
            made[record.job.name] = made.get(record.job.name, 0) + outcome.new
        for name, jobs in made.items():
            self.spreader.created(space, name, jobs, policies.spread(name), now)
        return [o for o in outcomes if o is not None]

    def _new_records(
        self,
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
    ) -> list[tuple[int, NewRecord]]:
        """Each request checked and resolved into what is written (by its place in the
        request); a key sent twice in one request is answered with its first job, in
        `outcomes`. `at`: the prefix of messages, `{}` for the request's place."""
        records: list[tuple[int, NewRecord]] = []
        first_with_key: dict[str, str] = {}
        for i, request in enumerate(requests):
            policy = policies.get(request.name)
            record = self._new_record(
                space,
                request,
                settings,
                now,
                at.format(i),
                aging_ms=policy.aging_ms,
                width=policies.spread(request.name).width,
                retry_of=retry_of[i] if retry_of is not None else None,
                job_id=once,
                defaulted=defaulted[i],
            )
            if request.key is not None and request.key in first_with_key:
                outcomes[i] = Inserted(first_with_key[request.key], False)
                continue
            if request.key is not None:
                first_with_key[request.key] = record.job.id
            records.append((i, record))
        return records

    def _reserve(
        self,
        space: str,
        records: list[tuple[int, NewRecord]],
        outcomes: list[Inserted | None],
        settings: Settings,
        now: int,
        *,
        refuse: bool = True,
    ) -> tuple[list[tuple[int, NewRecord]], Reservation | None]:
        """Room for `records` under the space's `maxInFlight` (None: no cap, nothing counted),
        and the records still to write. A full space still answers a repeat of a keyed create
        with its job: it adds nothing. Without `refuse`, the records are counted whatever
        the count is."""
        cap = settings.max_in_flight
        if cap is None or not records:
            return records, None
        if not refuse:
            return records, self.spaces.reserve(space, len(records), limits.UNCAPPED, now)
        reservation = self.spaces.reserve(space, len(records), cap, now)
        if reservation is None:
            records = self._without_held_keys(space, records, outcomes, settings, now)
            if records and (reservation := self.spaces.reserve(space, len(records), cap, now)) is None:
                raise ResourceExhausted(
                    f"space {space} has its maxInFlight of {cap} unfinished jobs; try again later",
                    retry_after_ms=ROOM_RETRY_MS,
                )
        return records, reservation

    def notify(self, space: str, request: NewJob, job_id: str) -> Inserted:
        """Create a notification job with the id its ending gives it, once (`shared.notify`):
        through the create path, with no jobDefaults of its name."""
        [made] = self.create(space, [request], batch=False, apply_defaults=False, once=job_id)
        return made

    def _without_held_keys(
        self,
        space: str,
        records: list[tuple[int, NewRecord]],
        outcomes: list[Inserted | None],
        settings: Settings,
        now: int,
    ) -> list[tuple[int, NewRecord]]:
        """Answer DUPLICATE for records whose key an existing job holds, and retries of jobs
        already retried; the rest remain."""
        remaining = []
        retried = self.jobs.retries(space, [r.job.retry_of for _, r in records if r.job.retry_of])
        for i, record in records:
            if record.job.retry_of in retried:
                outcomes[i] = Inserted(retried[record.job.retry_of], False)
                continue
            key = record.job.key
            holder = self.jobs.key_holder(space, key) if key is not None else None
            if holder is not None and not self._key_released(holder, settings, now):
                outcomes[i] = Inserted(holder.key["jobId"], False)
            else:
                remaining.append((i, record))
        return remaining

    def _new_record(
        self,
        space: str,
        request: NewJob,
        settings: Settings,
        now: int,
        at: str,
        *,
        aging_ms: int,
        width: int,
        retry_of: RetryOf | None = None,
        job_id: str | None = None,
        defaulted: frozenset[str] = frozenset(),
    ) -> NewRecord:
        """A request checked and resolved into what is written. `job_id`: the id it must
        have (a notice's, `shared.notify`), written only if no job has it (`NewRecord.once`)."""
        run_at = request.runAtMs if request.runAtMs is not None else now + (request.delayMs or 0)
        if run_at > now + limits.MAX_DELAY_MS:
            raise InvalidArgument(f"{at}runAtMs: must be at most a year ahead ({now + limits.MAX_DELAY_MS})")
        expires_at = _deadline(request, now, run_at, at, defaulted)
        if request.callback is not None:
            self.targets.check_url(request.callback.url, at=f"{at}callback.url")
        raw = dump_json(request.payload)
        if len(raw) > limits.MAX_PAYLOAD_BYTES:
            raise InvalidArgument(f"{at}payload: must be at most {limits.MAX_PAYLOAD_BYTES} bytes of JSON")
        spec = request.backoff
        default = settings.backoff()
        job = Job(
            id=job_id or self._ids.new(now),
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
        )
        assert job.ready_at_ms is not None
        where = place(ready_at_ms=job.ready_at_ms, now_ms=now, priority=job.priority, aging_ms=aging_ms)
        room = ITEM_BUDGET - approximate_size(job_item(job, {"payloadBytes": len(raw)}, where, width))
        packed = pack(space, job.id, "payload", raw, room=room)
        return NewRecord(
            job,
            packed,
            where,
            width,
            retry_ttl=retry_of.ttl if retry_of is not None else None,
            once=job_id is not None,
        )

    def _key_released(self, holder: KeyHold, settings: Settings, now: int) -> bool:
        """A key is held while its job is unfinished, and for the key window after it
        finished, even when retention has hidden or removed the job by then."""
        if holder.job is not None:
            if not JobStatus(holder.job["status"]).is_final:
                return False
            finished = holder.job["finishedAtMs"]
        else:
            # Removed: the stream's cleanup copies the finish time onto the key item. Until
            # it has, the key stays held (the window cannot be known to have passed).
            finished = holder.key.get("finishedAtMs")
            if finished is None:
                return False
        return bool(finished + settings.key_window_ms <= now)

    # -- claim ----------------------------------------------------------------

    def claim(
        self, space: str, *, count: int, names: list[str] | None, wait_ms: int, lease_ms: int | None
    ) -> list[dict[str, Any]]:
        """Hand out up to `count` jobs in order of hand-out; with `wait_ms`, wait for work to
        arrive. Paused names are not looked at."""
        deadline = self.clock.now_ms() + min(wait_ms, self.config.max_wait_ms)
        pause = self.config.poll_ms
        while True:
            now = self.clock.now_ms()
            wanted = sorted(set(names)) if names else self.spaces.names(space)
            policies = self.policies.space(space)
            running = {n: policy.aging_ms for n in wanted if not (policy := policies.get(n)).paused}
            claimed = self.jobs.claim(
                space,
                running,
                count=count,
                now_ms=now,
                lease_ms=lease_ms,
                payload_budget=self.config.claim_payload_bytes,
                reach={n: policies.spread(n).reach for n in running},
                limits={n: limits for n in running if (limits := name_limits(policies.get(n)))},
                per_key={n: policies.get(n).per_key_concurrency for n in running},
                per_key_rate={
                    n: (r.tokens, r.interval_ms) for n in running if (r := policies.get(n).per_key_rate)
                },
                on_expired=functools.partial(self._cancel_expired, space, now=now),
            )
            if claimed or now >= deadline:
                return self._answer(space, claimed, now)
            self.clock.sleep(min(pause, deadline - now) / 1000)
            # Every look costs reads: an idle worker looks less and less often, up to a limit.
            pause = min(pause * 2, self.config.poll_max_ms)

    def _answer(self, space: str, claimed: list[Claimed], now: int) -> list[dict[str, Any]]:
        """The claimed jobs as the answer shows them, measured as it is sent (`shared.wire`).

        The store chose jobs by their stored payload sizes; the answer's own bytes decide.
        A job that would take the answer past `claim_payload_bytes` is given back untouched
        (the first job always goes: it could never go otherwise). A job that cannot be shown
        at all fails for good rather than fail every claim that picks it. Either way the
        other jobs this claim won are answered: none is left running unseen."""
        answer: list[dict[str, Any]] = []
        size = wire.cost(wire.text({"jobs": []}))
        for c in claimed:
            job = self.jobs.load(space, c.item, bodies=False)
            try:
                shown = render.claimed(job, None if c.raw is None else json.loads(c.raw))
                cost = wire.cost(wire.text(shown)) + (1 if answer else 0)  # the comma before it
            except (ValueError, RecursionError):
                logger.exception("a claimed job cannot be shown", extra={"action": "claim", "job": job.id})
                self._unshowable(space, job, now)
                continue
            if answer and size + cost > self.config.claim_payload_bytes:
                with _afterthought(job):
                    aging_ms = self.policies.get(space, job.name).aging_ms
                    self.jobs.apply(space, job.id, give_back_transition(job, now_ms=now, aging_ms=aging_ms))
                continue
            answer.append(shown)
            size += cost
        return answer

    def _cancel_expired(self, space: str, item: Item, *, now: int) -> None:
        """Cancel a job found past its deadline (by a claim, or a report), as the clock would
        have: a fault leaves it to the clock, rather than fail the claim or the report."""
        with _afterthought(self.jobs.load(space, item, bodies=False)):
            cancel_expired(self.jobs, space, item, now_ms=now, retention=self.settings.get(space).retention)

    def _unshowable(self, space: str, job: Job, now: int) -> None:
        """Fail for good a job whose payload cannot be shown (say, one stored before nesting
        was bounded): no later claim could show it either."""
        with _afterthought(job):
            error = "emit could not read this job's payload to hand it out"
            transition = fail_transition(
                job,
                now_ms=now,
                error=error,
                unrecoverable=True,
                retry_after_ms=None,
                rand=0.0,
                retention=self.settings.get(space).retention,
                aging_ms=self.policies.get(space, job.name).aging_ms,
            )
            packed = pack(space, job.id, "error", error.encode(), attempt=job.attempt)
            self.jobs.blobs.store([packed])
            owner = Owner(job.name, job.concurrency_key)
            self.jobs.apply(space, job.id, transition, stored=replacing("error", packed), owner=owner)

    # -- report ---------------------------------------------------------------

    def report(self, space: str, raw_reports: list[Any]) -> list[dict[str, Any]]:
        """Apply each report on its own: one outcome per report, in order.

        Only when every report breaks a rule is the request refused (InvalidArgument)."""
        parsed: list[Report | InvalidArgument] = []
        for i, raw in enumerate(raw_reports):
            try:
                parsed.append(parse(Report, raw, at=f"reports[{i}]" if len(raw_reports) > 1 else ""))
            except InvalidArgument as invalid:
                parsed.append(invalid)
        if parsed and all(isinstance(p, InvalidArgument) for p in parsed):
            first = parsed[0]
            assert isinstance(first, InvalidArgument)
            raise first
        settings = self.settings.get(space)
        outcomes = []
        for p in parsed:
            if isinstance(p, InvalidArgument):
                outcomes.append(render.rejection("INVALID", p.message))
                continue
            outcomes.append(self._report_one(space, p, settings))
        return outcomes

    def _report_one(self, space: str, report: Report, settings: Settings) -> dict[str, Any]:
        """The report's outcome (a count the job holds is let go by its transition's own write).

        A value too large for the job item (a result, an error) takes three writes, each
        safe to stop after: its place is named on the job while this attempt runs (nothing
        is written for a report that cannot count), then the value, then the transition
        that points at it. A report refused at the last step removes its own value; if it
        is killed first, retention removes it, as the job names it."""
        now = self.clock.now_ms()
        try:
            transition, stored, outside, read = self._decide(space, report, settings, now)
            transition = before_deadline(transition, now_ms=now)
            if outside is not None:
                self._name_place(space, report, outside, now)
        except _Rejected as rejected:
            return self._rejection(space, rejected, now)
        if outside is not None:
            self.jobs.blobs.store([outside])
        try:
            item, with_event, events_full = self._apply_report(
                space, report, transition, stored, settings=settings, now=now, read=read
            )
        except _Rejected as rejected:
            if outside is not None:
                self._discard(space, report.id, outside)
            return self._rejection(space, rejected, now)
        self._journal(space, report, item, now, with_event=with_event)
        if events_full:
            message = _REASONS["TOO_MANY_EVENTS"].format(max=settings.max_events)
            return render.rejection("TOO_MANY_EVENTS", message)
        return {"status": item["status"]}

    def _apply_report(
        self,
        space: str,
        report: Report,
        transition: Transition,
        stored: dict[str, Any],
        *,
        settings: Settings,
        now: int,
        read: Item | None,
    ) -> tuple[Item, bool, bool]:
        """The item after the report's write, whether its event was kept, whether the job's
        events were full; raises _Rejected when the report cannot count. `read`: the job's
        item if the decision already read it."""
        with_event = report.event is not None
        events_full = False
        # Where jobs are likely to hold a count, the job is read first (a read is cheaper than
        # the write refused for holding one that would find it out).
        held = read
        if held is None and transition.lets_go and self._counted(space, settings):
            held = self.jobs.get_item(space, report.id)
        for _ in range(3):
            try:
                parts = _report_parts(report, settings.max_events, with_event=with_event)
                item = self.jobs.apply(space, report.id, transition, stored=stored, extra=parts, held=held)
                return item, with_event, events_full
            except ConditionFailed as failed:
                reason = self._refusal(failed.item, report, now)
                events = (failed.item or {}).get("eventCount", 0)
                if reason is None and with_event and events >= settings.max_events:
                    # The rest of the report is still applied, without its event.
                    with_event, events_full = False, True
                    continue
                if reason is None and transition.name == "touch":
                    # The lease already ends later than asked: a lease is never shortened.
                    transition = before_deadline(keep_transition(attempt=report.attempt), now_ms=now)
                    continue
                raise self._rejected(reason or "RACE", report, failed.item) from None
        raise self._rejected("RACE", report)

    def _counted(self, space: str, settings: Settings) -> bool:
        """Whether the space's jobs may hold a count: it has a cap, or a name has a concurrency."""
        if settings.max_in_flight is not None:
            return True
        policies = self.policies.space(space)
        return any(policies.get(n).concurrency is not None for n in ("", *policies.own))

    def _name_place(self, space: str, report: Report, value: Packed, now: int) -> None:
        """Name `value`'s place on the job, only while the report's attempt is running."""
        place = str(value.ref)
        try:
            self.jobs.apply(
                space,
                report.id,
                before_deadline(keep_transition(attempt=report.attempt), now_ms=now),
                extra=lambda update: update.add(PLACES, {place}),
            )
        except ConditionFailed as failed:
            reason = self._refusal(failed.item, report, now) or "RACE"
            raise self._rejected(reason, report, failed.item) from None

    def _discard(self, space: str, job_id: str, value: Packed) -> None:
        try:
            self.jobs.blobs.discard(space, job_id, [value])
        except Exception:  # the job names the place: retention removes it later
            logger.warning("could not remove a refused report's value", extra={"job": job_id})

    def _rejected(self, reason: str, report: Report, item: Item | None = None) -> _Rejected:
        """The report's refusal; `item`, the job's item that refused it (for an expired job,
        which the refusal then cancels)."""
        message = _REASONS[reason].format(id=report.id, attempt=report.attempt)
        if reason == "EXPIRED":
            return _Rejected("ALREADY_FINISHED", message, expired=item)
        return _Rejected(reason, message)

    def _rejection(self, space: str, rejected: _Rejected, now: int) -> dict[str, Any]:
        """A refused report's outcome; a job found past its deadline is cancelled first (the
        clock would have soon), so the worker is told it has finished, and it has."""
        if rejected.expired is not None:
            self._cancel_expired(space, rejected.expired, now=now)
        return render.rejection(rejected.reason, rejected.message)

    def _decide(
        self, space: str, report: Report, settings: Settings, now: int
    ) -> tuple[Transition, dict[str, Any], Packed | None, Item | None]:
        """The transition a report asks for, the job item attributes of any value (result,
        error) stored with it, that value when it lives outside the job item, and the job's
        item where the decision read it (its write then knows the holds it lets go)."""
        attempt = report.attempt
        if report.complete is not None:
            raw = dump_json(report.complete.result)
            if len(raw) <= limits.MAX_RESULT_BYTES:
                packed = pack(space, report.id, "result", raw, attempt=attempt)
                return (
                    complete_transition(attempt=attempt, now_ms=now, retention=settings.retention),
                    replacing("result", packed),
                    packed if packed.ref else None,
                    None,
                )
            error = f"result is larger than {limits.MAX_RESULT_BYTES} bytes of JSON"
            return self._fail(
                space, report, settings, now, error=error, unrecoverable=False, retry_after_ms=None
            )
        if report.fail is not None:
            return self._fail(
                space,
                report,
                settings,
                now,
                error=report.fail.error,
                unrecoverable=report.fail.unrecoverable,
                retry_after_ms=report.fail.retryAfterMs,
            )
        if report.release is not None:
            # Read for its priority and name: the job takes its place in the order again.
            job, item = self._running_job(space, report, now)
            aging_ms = self.policies.get(space, job.name).aging_ms
            release = release_transition(
                attempt=attempt, now_ms=now, priority=job.priority, aging_ms=aging_ms
            )
            return release, {}, None, item
        if report.touch is not None:
            lease_ms = report.touch.leaseMs
            if lease_ms is None:
                lease_ms = self._running_job(space, report, now)[0].timeout_ms
            return touch_transition(attempt=attempt, now_ms=now, lease_ms=lease_ms), {}, None, None
        return keep_transition(attempt=attempt), {}, None, None

    def _fail(
        self,
        space: str,
        report: Report,
        settings: Settings,
        now: int,
        *,
        error: str,
        unrecoverable: bool,
        retry_after_ms: int | None,
    ) -> tuple[Transition, dict[str, Any], Packed | None, Item | None]:
        job, item = self._running_job(space, report, now)
        error = _cut(error, limits.MAX_ERROR_BYTES)
        packed = pack(space, report.id, "error", error.encode(), attempt=report.attempt)
        transition = fail_transition(
            job,
            now_ms=now,
            error=error,
            unrecoverable=unrecoverable,
            retry_after_ms=retry_after_ms,
            rand=self.rand(),
            retention=settings.retention,
            aging_ms=self.policies.get(space, job.name).aging_ms,
        )
        return transition, replacing("error", packed), packed if packed.ref else None, item

    def _running_job(self, space: str, report: Report, now: int) -> tuple[Job, Item]:
        """The job a report speaks for, and its item, read when the decision needs its fields."""
        item = self.jobs.get_item(space, report.id)
        reason = self._refusal(item, report, now)
        if reason is not None:
            raise self._rejected(reason, report, item)
        assert item is not None
        return self.jobs.load(space, item, bodies=False), item

    @staticmethod
    def _refusal(item: Item | None, report: Report, now: int) -> str | None:
        """Why `report` cannot speak for the job as it stood (None: it can)."""
        if item is None or purged(item, now):
            return "NOT_FOUND"
        if expired(item, now):
            return "EXPIRED"
        return refusal(
            JobStatus(item["status"]),
            attempt=item["attempt"],
            reported_attempt=report.attempt,
            lapsed_attempt=item.get(LAPSED),
        )

    def _journal(self, space: str, report: Report, item: Item, now: int, *, with_event: bool) -> None:
        if report.lines:
            first = item["lineCount"] - len(report.lines)
            lines = [line.model_dump(exclude_none=True) | {"atMs": now} for line in report.lines]
            for line in lines:
                if "metadata" in line:
                    line["metadata"] = json.dumps(line["metadata"], separators=(",", ":"))
            self.journal.append_lines(space, report.id, first, lines)
        if with_event:
            self.journal.put_event(
                space, report.id, item["eventCount"] - 1, dump_json(report.event).decode(), now
            )

    # -- cancel ---------------------------------------------------------------

    def cancel(self, space: str, ids: list[str]) -> list[dict[str, Any]]:
        now = self.clock.now_ms()
        retention = self.settings.get(space).retention
        outcomes: list[dict[str, Any]] = []
        self._cancel_each(space, ids, now, retention, outcomes)
        return outcomes

    def _cancel_each(
        self, space: str, ids: list[str], now: int, retention: Retention, outcomes: list[dict[str, Any]]
    ) -> None:
        for job_id in ids:
            if not is_ulid(job_id):
                outcomes.append(render.rejection("NOT_FOUND", f"job {job_id} does not exist"))
                continue
            try:
                self.jobs.apply(space, job_id, cancel_transition(now_ms=now, retention=retention))
            except ConditionFailed as failed:
                if failed.item is None or purged(failed.item, now):
                    outcomes.append(render.rejection("NOT_FOUND", f"job {job_id} does not exist"))
                else:
                    outcomes.append(
                        render.rejection("ALREADY_FINISHED", f"job {job_id} is {failed.item['status']}")
                    )
                continue
            outcomes.append({"status": JobStatus.CANCELLED.value})

    # -- read -----------------------------------------------------------------

    def get(self, space: str, job_id: str) -> dict[str, Any]:
        item = self._item(space, job_id)
        job = self.jobs.load(space, item)
        delivery = None
        if job.callback is not None and job.status.is_final:
            delivery = render.delivery(self.deliveries.get(space, job_id))
        waiting = None
        if job.status == JobStatus.PENDING:
            now = self.clock.now_ms()
            ready = job.ready_at_ms if job.ready_at_ms is not None else job.run_at_ms
            # The name's counters are read only for a job that waits on nothing of its own.
            state = (
                self.name_state(space, job.name, now, job.concurrency_key) if ready <= now else NameState()
            )
            reason = waiting_on(job, now_ms=now, name=state)
            waiting = render.waiting_on(*reason, key=job.concurrency_key) if reason else None
        return render.job(job, delivery=delivery, waiting_on=waiting)

    def name_state(self, space: str, name: str, now: int, concurrency_key: str | None = None) -> NameState:
        """What holds the name's claimable jobs back now: its pause, its concurrency (slots
        read now), its rate (when it next allows a hand-out); and for a job with a
        `concurrencyKey`, whether its key has `perKeyConcurrency` jobs running."""
        policy = self.policies.get(space, name)
        counters = self.jobs.counters
        full = policy.concurrency is not None and sum(counters.running(space, name)) >= policy.concurrency
        until = None
        if policy.rate is not None:
            until = counters.rate_until(space, name, policy.rate.tokens, policy.rate.interval_ms, now)
        key_full, key_until = False, None
        cap, key_rate = policy.per_key_concurrency, policy.per_key_rate
        if concurrency_key is not None and cap is not None:
            key_full = self.jobs.key_entries.running(space, name, concurrency_key) >= cap
        if concurrency_key is not None and key_rate is not None:
            rate = (key_rate.tokens, key_rate.interval_ms)
            key_until = self.jobs.key_entries.rate_until(space, name, concurrency_key, rate, now)
        return NameState(
            paused=policy.paused,
            at_concurrency=full,
            rate_until_ms=until,
            key_at_concurrency=key_full,
            key_rate_until_ms=key_until,
        )

    def list(
        self, space: str, *, status: JobStatus | None, name: str | None, limit: int, cursor: str | None
    ) -> dict[str, Any]:
        if cursor is not None and not is_ulid(cursor):
            raise InvalidArgument("cursor: is not a cursor this API gave")
        now = self.clock.now_ms()
        rows = self.jobs.page(space, before=cursor, limit=limit + 1, status=status, name=name, now_ms=now)
        more = len(rows) > limit
        rows = rows[:limit]
        return {
            "jobs": [render.job(self.jobs.load(space, r, bodies=False), bodies=False) for r in rows],
            "cursor": rows[-1]["sk"] if more else None,
        }

    def lines(self, space: str, job_id: str, *, cursor: str | None, limit: int) -> dict[str, Any]:
        item = self._item(space, job_id)
        after = _seq_cursor(cursor)
        found = self.journal.lines(space, job_id, after, limit)
        lines = []
        for seq, line in found:
            shown = {"seq": seq, **line}
            if "metadata" in shown:
                shown["metadata"] = json.loads(shown["metadata"])
            lines.append(shown)
        next_seq = found[-1][0] + 1 if found else after
        return {
            "lines": lines,
            "cursor": _next_cursor(next_seq, item.get("lineCount", 0), len(found) == limit),
        }

    def events(self, space: str, job_id: str, *, cursor: str | None, limit: int) -> dict[str, Any]:
        item = self._item(space, job_id)
        after = _seq_cursor(cursor)
        rows = self.journal.events(space, job_id, after, limit)
        events = [{"seq": int(r["sk"]), "atMs": r["atMs"], "event": json.loads(r["body"])} for r in rows]
        next_seq = events[-1]["seq"] + 1 if events else after
        return {
            "events": events,
            "cursor": _next_cursor(next_seq, item.get("eventCount", 0), len(rows) == limit),
        }

    def _item(self, space: str, job_id: str) -> Item:
        item = self.jobs.get_item(space, job_id) if is_ulid(job_id) else None
        if item is None or purged(item, self.clock.now_ms()):
            raise NotFound(f"job {job_id} does not exist in space {space}")
        return item


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


@contextlib.contextmanager
def _afterthought(job: Job) -> Iterator[None]:
    """A claim's own write on a job it won but does not answer with. If the job changed
    since (a cancel), there is nothing left to do; a fault leaves the job to its lease's
    expiry rather than fail the claim, whose other jobs are already running."""
    try:
        yield
    except ConditionFailed:
        pass
    except Exception:
        logger.exception("a claim could not settle a job", extra={"action": "claim", "job": job.id})


class _Rejected(Exception):
    def __init__(self, reason: str, message: str, *, expired: Item | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.expired = expired
        """The item of a job the report found past its deadline, unfinished: to cancel."""


_REASONS = {
    "STALE": "job {id}: attempt {attempt} is not the current attempt; stop working on it",
    "NOT_RUNNING": "job {id} is not held by anyone",
    "ALREADY_FINISHED": "job {id} has finished; stop working on it",
    "EXPIRED": "job {id} has passed its deadline and is cancelled; stop working on it",
    "NOT_FOUND": "job {id} does not exist",
    "TOO_MANY_EVENTS": "the job has all the events its space allows ({max}); the rest of the report applied",
    "RACE": "job {id} changed while the report was applied; send it again",
}


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


def _cut(text: str, max_bytes: int) -> str:
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode(errors="ignore")


def _next_cursor(next_seq: int, count: int, full: bool) -> str | None:
    """Where the next page starts, while a full page leaves some of the job's `count` unread.
    Past a short page nothing more is stored, even when the count says more: a report's
    lines or event lost to a fault after its job's write leave a gap that never fills."""
    return str(next_seq) if full and next_seq < count else None


def _seq_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 10:
        raise InvalidArgument("cursor: is not a cursor this API gave")
    return int(cursor)


def _report_parts(report: Report, max_events: int, *, with_event: bool) -> Callable[[UpdateBuilder], None]:
    """What a report adds to its transition's write: progress, line and event counts (an
    event only while the job's events are not full)."""

    def parts(update: UpdateBuilder) -> None:
        if report.progress is not None:
            update.set("progress", report.progress.model_dump(exclude_none=True))
        if report.lines:
            update.add("lineCount", len(report.lines))
        if with_event:
            update.add("eventCount", 1)
            update.require("eventCount", "<", max_events)

    return parts
