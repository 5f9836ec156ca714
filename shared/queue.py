"""The queue's operations: create, claim, report, cancel, read.

Each operation decides with `shared.machine` and persists with `shared.store`; the
Lambda handlers only parse, call one of these, and render.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared import limits, render
from shared.callbacks import TargetPolicy
from shared.clock import Clock
from shared.errors import InvalidArgument, NotFound, ResourceExhausted
from shared.ids import IdGenerator, is_ulid
from shared.machine import Backoff, Callback, Job, JobStatus, Retention, Transition, refusal
from shared.machine import cancel as cancel_transition
from shared.machine import complete as complete_transition
from shared.machine import fail as fail_transition
from shared.machine import keep as keep_transition
from shared.machine import release as release_transition
from shared.machine import touch as touch_transition
from shared.schema import NewJob, Report, dump_json, parse
from shared.spaces import Settings, SpaceSettings
from shared.store.blobs import ITEM_BUDGET, pack, replacing
from shared.store.codec import UpdateBuilder, approximate_size, job_item, purged
from shared.store.deliveries import DeliveryStore
from shared.store.dynamo import ConditionFailed, Item
from shared.store.jobs import Inserted, JobStore, NewRecord
from shared.store.journal import Journal
from shared.store.spaces import SpaceStore

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
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.spaces = spaces
        self.settings = settings
        self.journal = journal
        self.deliveries = deliveries
        self.targets = targets
        self.config = config
        self.rand = rand
        self._ids = IdGenerator()

    # -- create ---------------------------------------------------------------

    def create(self, space: str, requests: list[NewJob], *, batch: bool) -> list[Inserted]:
        """Create jobs, all or none: every job is checked before anything is written."""
        now = self.clock.now_ms()
        settings = self.settings.get(space)
        cap = settings.max_in_flight
        if cap is not None and len(requests) > cap:
            raise InvalidArgument(
                f"jobs: a batch of {len(requests)} is larger than the space's maxInFlight of {cap}"
            )
        outcomes: list[Inserted | None] = [None] * len(requests)
        records: list[tuple[int, NewRecord]] = []
        first_with_key: dict[str, str] = {}
        for i, request in enumerate(requests):
            at = f"jobs[{i}]." if batch else ""
            record = self._new_record(space, request, settings, now, at)
            if request.key is not None and request.key in first_with_key:
                outcomes[i] = Inserted(first_with_key[request.key], False)
                continue
            if request.key is not None:
                first_with_key[request.key] = record.job.id
            records.append((i, record))
        if not self.spaces.reserve(space, len(records), cap):
            # A full space still answers a repeat of a keyed create with its job: it adds nothing.
            records = self._without_held_keys(space, records, outcomes, settings, now)
            if records and not self.spaces.reserve(space, len(records), cap):
                raise ResourceExhausted(
                    f"space {space} has its maxInFlight of {cap} unfinished jobs; try again later",
                    retry_after_ms=ROOM_RETRY_MS,
                )
        # Names first: a job whose name is not listed is never found by a claim without
        # names, nor by the clock's check for jobs nobody claims.
        self.spaces.register_names(space, {r.job.name for _, r in records}, now)
        try:
            inserted = self.jobs.insert(
                space,
                [r for _, r in records],
                key_released=lambda item: self._key_released(item, settings, now),
            )
        except Exception:
            # Every job is checked before anything is written, so this is a fault of the
            # store: give the room back rather than lose it for good.
            self.spaces.release(space, len(records))
            raise
        self.spaces.release(space, sum(1 for o in inserted if not o.new))
        for (i, _), outcome in zip(records, inserted, strict=True):
            outcomes[i] = outcome
        return [o for o in outcomes if o is not None]

    def _without_held_keys(
        self,
        space: str,
        records: list[tuple[int, NewRecord]],
        outcomes: list[Inserted | None],
        settings: Settings,
        now: int,
    ) -> list[tuple[int, NewRecord]]:
        """Answer DUPLICATE for records whose key an existing job holds; the rest remain."""
        remaining = []
        for i, record in records:
            key = record.job.key
            holder = self.jobs.key_holder(space, key) if key is not None else None
            if holder is not None and not self._key_released(holder, settings, now):
                outcomes[i] = Inserted(holder["sk"], False)
            else:
                remaining.append((i, record))
        return remaining

    def _new_record(self, space: str, request: NewJob, settings: Settings, now: int, at: str) -> NewRecord:
        run_at = request.runAtMs if request.runAtMs is not None else now + (request.delayMs or 0)
        if run_at > now + limits.MAX_DELAY_MS:
            raise InvalidArgument(f"{at}runAtMs: must be at most a year ahead ({now + limits.MAX_DELAY_MS})")
        if request.callback is not None:
            self.targets.check_url(request.callback.url, at=f"{at}callback.url")
        raw = dump_json(request.payload)
        if len(raw) > limits.MAX_PAYLOAD_BYTES:
            raise InvalidArgument(f"{at}payload: must be at most {limits.MAX_PAYLOAD_BYTES} bytes of JSON")
        spec = request.backoff
        default = settings.backoff()
        job = Job(
            id=self._ids.new(now),
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
            ready_at_ms=max(run_at, 0),
            key=request.key,
            callback=Callback(request.callback.url, request.callback.headers) if request.callback else None,
        )
        room = ITEM_BUDGET - approximate_size(job_item(job, {"payloadBytes": len(raw)}))
        return NewRecord(job, pack(space, job.id, "payload", raw, room=room))

    def _key_released(self, holder: Item | None, settings: Settings, now: int) -> bool:
        """A key is held while its job is unfinished, and for the key window after."""
        if holder is None or purged(holder, now):
            return True
        if not JobStatus(holder["status"]).is_final:
            return False
        return bool(holder["finishedAtMs"] + settings.key_window_ms <= now)

    # -- claim ----------------------------------------------------------------

    def claim(
        self, space: str, *, count: int, names: list[str] | None, wait_ms: int, lease_ms: int | None
    ) -> list[dict[str, Any]]:
        """Hand out up to `count` jobs, oldest first; with `wait_ms`, wait for work to arrive."""
        deadline = self.clock.now_ms() + min(wait_ms, self.config.max_wait_ms)
        pause = self.config.poll_ms
        while True:
            now = self.clock.now_ms()
            wanted = sorted(set(names)) if names else self.spaces.names(space)
            claimed = self.jobs.claim(
                space,
                wanted,
                count=count,
                now_ms=now,
                lease_ms=lease_ms,
                payload_budget=self.config.claim_payload_bytes,
            )
            if claimed or now >= deadline:
                return [
                    render.claimed(self.jobs.load(space, c.item, bodies=False), c.payload) for c in claimed
                ]
            self.clock.sleep(min(pause, deadline - now) / 1000)
            # Every look costs reads: an idle worker looks less and less often, up to a limit.
            pause = min(pause * 2, self.config.poll_max_ms)

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
        finished: list[str] = []
        try:
            for p in parsed:
                if isinstance(p, InvalidArgument):
                    outcomes.append(render.rejection("INVALID", p.message))
                    continue
                outcomes.append(self._report_one(space, p, settings, finished))
        finally:
            # Jobs finished before a fault (even one in the same report) still leave the count.
            self.spaces.release(space, len(finished))
        return outcomes

    def _report_one(
        self, space: str, report: Report, settings: Settings, finished: list[str]
    ) -> dict[str, Any]:
        """The report's outcome; a job it finishes is added to `finished` as soon as its write
        is made (for the in-flight count)."""
        now = self.clock.now_ms()
        try:
            transition, stored = self._decide(space, report, settings, now)
        except _Rejected as rejected:
            return render.rejection(rejected.reason, rejected.message)
        with_event = report.event is not None
        events_full = False
        for _ in range(3):
            try:
                item = self._write_report(space, report, transition, stored, settings, with_event=with_event)
                break
            except ConditionFailed as failed:
                reason = self._refusal(failed.item, report, now)
                events = (failed.item or {}).get("eventCount", 0)
                if reason is None and with_event and events >= settings.max_events:
                    # The rest of the report is still applied, without its event.
                    with_event, events_full = False, True
                    continue
                if reason is None and transition.name == "touch":
                    # The lease already ends later than asked: a lease is never shortened.
                    transition = keep_transition(attempt=report.attempt)
                    continue
                reason = reason or "RACE"
                return render.rejection(reason, _REASONS[reason].format(id=report.id, attempt=report.attempt))
        else:
            return render.rejection("RACE", _REASONS["RACE"].format(id=report.id))
        if transition.to.is_final:
            finished.append(report.id)
        self._journal(space, report, item, now, with_event=with_event)
        if events_full:
            message = _REASONS["TOO_MANY_EVENTS"].format(max=settings.max_events)
            return render.rejection("TOO_MANY_EVENTS", message)
        return {"status": item["status"]}

    def _decide(
        self, space: str, report: Report, settings: Settings, now: int
    ) -> tuple[Transition, dict[str, Any]]:
        """The transition a report asks for, and any value (result, error) stored with it."""
        attempt = report.attempt
        if report.complete is not None:
            raw = dump_json(report.complete.result)
            if len(raw) <= limits.MAX_RESULT_BYTES:
                packed = pack(space, report.id, "result", raw, attempt=attempt)
                self.jobs.blobs.store([packed])
                return complete_transition(
                    attempt=attempt, now_ms=now, retention=settings.retention
                ), replacing("result", packed)
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
            return release_transition(attempt=attempt, now_ms=now), {}
        if report.touch is not None:
            lease_ms = report.touch.leaseMs
            if lease_ms is None:
                lease_ms = self._running_job(space, report, now).timeout_ms
            return touch_transition(attempt=attempt, now_ms=now, lease_ms=lease_ms), {}
        return keep_transition(attempt=attempt), {}

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
    ) -> tuple[Transition, dict[str, Any]]:
        job = self._running_job(space, report, now)
        error = _cut(error, limits.MAX_ERROR_BYTES)
        packed = pack(space, report.id, "error", error.encode(), attempt=report.attempt)
        self.jobs.blobs.store([packed])
        transition = fail_transition(
            job,
            now_ms=now,
            error=error,
            unrecoverable=unrecoverable,
            retry_after_ms=retry_after_ms,
            rand=self.rand(),
            retention=settings.retention,
        )
        return transition, replacing("error", packed)

    def _running_job(self, space: str, report: Report, now: int) -> Job:
        """The job a report speaks for, read when the decision needs its fields."""
        item = self.jobs.get_item(space, report.id)
        reason = self._refusal(item, report, now)
        if reason is not None:
            raise _Rejected(reason, _REASONS[reason].format(id=report.id, attempt=report.attempt))
        assert item is not None
        return self.jobs.load(space, item, bodies=False)

    def _write_report(
        self,
        space: str,
        report: Report,
        transition: Transition,
        stored: dict[str, Any],
        settings: Settings,
        *,
        with_event: bool,
    ) -> Item:
        def parts(update: UpdateBuilder) -> None:
            if report.progress is not None:
                update.set("progress", report.progress.model_dump(exclude_none=True))
            if report.lines:
                update.add("lineCount", len(report.lines))
            if with_event:
                update.add("eventCount", 1)
                update.require("eventCount", "<", settings.max_events)

        return self.jobs.apply(space, report.id, transition, stored=stored, extra=parts)

    @staticmethod
    def _refusal(item: Item | None, report: Report, now: int) -> str | None:
        """Why `report` cannot speak for the job as it stood (None: it can)."""
        if item is None or purged(item, now):
            return "NOT_FOUND"
        return refusal(JobStatus(item["status"]), attempt=item["attempt"], reported_attempt=report.attempt)

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
        try:
            self._cancel_each(space, ids, now, retention, outcomes)
        finally:
            cancelled = sum(1 for o in outcomes if o.get("status") == JobStatus.CANCELLED.value)
            self.spaces.release(space, cancelled)
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
        return render.job(job, delivery=delivery)

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
        return {"lines": lines, "cursor": str(next_seq) if next_seq < item.get("lineCount", 0) else None}

    def events(self, space: str, job_id: str, *, cursor: str | None, limit: int) -> dict[str, Any]:
        item = self._item(space, job_id)
        after = _seq_cursor(cursor)
        rows = self.journal.events(space, job_id, after, limit)
        events = [{"seq": int(r["sk"]), "atMs": r["atMs"], "event": json.loads(r["body"])} for r in rows]
        next_seq = events[-1]["seq"] + 1 if events else after
        return {"events": events, "cursor": str(next_seq) if next_seq < item.get("eventCount", 0) else None}

    def _item(self, space: str, job_id: str) -> Item:
        item = self.jobs.get_item(space, job_id) if is_ulid(job_id) else None
        if item is None or purged(item, self.clock.now_ms()):
            raise NotFound(f"job {job_id} does not exist in space {space}")
        return item


class _Rejected(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


_REASONS = {
    "STALE": "job {id}: attempt {attempt} is not the current attempt; stop working on it",
    "NOT_RUNNING": "job {id} is not held by anyone",
    "ALREADY_FINISHED": "job {id} has finished; stop working on it",
    "NOT_FOUND": "job {id} does not exist",
    "TOO_MANY_EVENTS": "the job has all the events its space allows ({max}); the rest of the report applied",
    "RACE": "job {id} changed while the report was applied; send it again",
}


def _cut(text: str, max_bytes: int) -> str:
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode(errors="ignore")


def _seq_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 10:
        raise InvalidArgument("cursor: is not a cursor this API gave")
    return int(cursor)
