"""A made-up held job, and a handler called on it as the worker would call it, with no server.

from emit.testing import call, held_job

job = held_job({"invoiceId": "inv_1", "amountCents": 100}, name="charge-invoice")
ran = call(charge_invoice, job)
assert ran.completed and ran.result == {"chargeId": "ch_inv_1"}
assert job.progress_reports[-1] == {"percent": 50, "message": "card accepted"}
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, TypeVar

from emit.held import HeldJob
from emit.models import Guarantee
from emit.worker import Handler, Worker

P = TypeVar("P")

Ending = Literal["completed", "failed", "released"]

_ids = itertools.count(1)


class RecordedJob(HeldJob[P]):
    """A `HeldJob` that keeps everything its handler reports, for a test to read.

    Each call is checked exactly as on a worker (a percent out of range, a level that is
    not one, metadata that is not JSON raise the same `ValueError`), then recorded in the
    form the worker would send it: `progress_reports` (every one, in order, where the
    service keeps only the latest), `lines` (`{"level": "INFO", "message": ...}`, with
    `source` and `metadata` when given) and `events`. `stop(reason)` sets `signal`, as the
    worker does when the job is cancelled or its hold is lost."""

    def __init__(self, **fields: Any) -> None:
        super().__init__(**fields)
        self.progress_reports: list[dict[str, Any]] = []
        self.lines: list[dict[str, Any]] = []
        self.events: list[Any] = []

    def progress(self, percent: float, message: str | None = None) -> None:
        super().progress(percent, message)
        self.progress_reports.append(dict(self._buffer.progress or {}))

    def log(self, level: str, message: str, *, source: str | None = None, metadata: Any = None) -> None:
        super().log(level, message, source=source, metadata=metadata)
        self.lines.append(dict(self._buffer.lines[-1]))

    def event(self, data: Any) -> None:
        super().event(data)
        self.events.append(data)

    @property
    def messages(self) -> list[str]:
        """The log lines' messages alone, in order."""
        return [line["message"] for line in self.lines]


def held_job(
    payload: Any = None,
    *,
    name: str = "test-job",
    id: str | None = None,
    attempt: int = 1,
    space: str = "test",
    guarantee: Guarantee = "at_least_once",
    traceparent: str | None = None,
    max_attempts: int | None = None,
    failures: int | None = None,
) -> RecordedJob[Any]:
    """A held job as a worker would hand it to a handler: attempt `attempt` (the first by
    default) of a job of `name` with `payload`, with a made-up id unless given one.

    `max_attempts` and `failures` (the attempts before this one that failed; given
    `max_attempts`, by default all of them, `attempt - 1`) make `job.last_try`:
    `held_job(p, attempt=3, max_attempts=3).last_try` is True. Left out, they are unknown
    (None) and `last_try` is False."""
    if attempt < 1:
        raise ValueError("attempt: must be at least 1")
    if failures is None and max_attempts is not None:
        failures = attempt - 1
    if failures is not None and not 0 <= failures < attempt:
        raise ValueError(f"failures: must be from 0 to attempt - 1 ({attempt - 1}), not {failures}")
    if max_attempts is not None and max_attempts < 1:
        raise ValueError("max_attempts: must be at least 1")
    return RecordedJob(
        id=id or f"test-{next(_ids):06d}",
        name=name,
        attempt=attempt,
        payload=payload,
        space=space,
        guarantee=guarantee,
        traceparent=traceparent,
        max_attempts=max_attempts,
        failures=failures,
    )


@dataclass
class Ran:
    """How a handler's call ended, as the worker would report it."""

    outcome: Ending
    """`completed` (it returned), `failed` (it raised) or `released` (`emit.Release`)."""
    job: RecordedJob[Any]
    result: Any = None
    """What it returned, when completed."""
    error: str | None = None
    """The error the attempt fails with: `"Type: message"` and the last frames of the
    traceback (`emit.results`); `Unrecoverable`'s and `RetryAfter`'s message alone."""
    unrecoverable: bool = False
    """Failed for good, whatever attempts are left (`emit.Unrecoverable`, or a result that is
    not JSON)."""
    retry_after: timedelta | None = None
    """`emit.RetryAfter`'s wait, in place of the backoff policy's."""

    @property
    def completed(self) -> bool:
        return self.outcome == "completed"

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def released(self) -> bool:
        return self.outcome == "released"


def call(handler: Handler | Worker, job: RecordedJob[Any] | None = None) -> Ran:
    """Call `handler` (a plain function, an `async def`, a worker made with `@emit.worker`, or
    a task's worker, whose payload is parsed as its type first)
    on `job` (by default `held_job()`) as the worker would, and say how it ended: what it
    returned, or the failure its exception makes. An exception is not raised here: it is the
    outcome (`ran.error`). Not from a running event loop: there, `await call_async(...)`."""
    return asyncio.run(call_async(handler, job))


async def call_async(handler: Handler | Worker, job: RecordedJob[Any] | None = None) -> Ran:
    """`call`, on the running event loop."""
    job = held_job() if job is None else job
    worker = handler if isinstance(handler, Worker) else Worker(handler, client=_no_client)
    ending = await worker._call(job)  # the worker's own mapping of returns and exceptions
    return _ran(ending, job)


def _ran(ending: dict[str, Any], job: RecordedJob[Any]) -> Ran:
    if "complete" in ending:
        return Ran("completed", job, result=ending["complete"].get("result"))
    if "release" in ending:
        return Ran("released", job)
    failed = ending["fail"]
    wait = failed.get("retryAfterMs")
    return Ran(
        "failed",
        job,
        error=failed.get("error"),
        unrecoverable=bool(failed.get("unrecoverable")),
        retry_after=None if wait is None else timedelta(milliseconds=wait),
    )


def _no_client() -> Any:
    raise RuntimeError("emit.testing.call runs the handler alone: it has no client")
