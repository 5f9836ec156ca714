"""The emit job queue's Python SDK.

    import emit

    client = emit.Emit()                      # EMIT_URL, EMIT_TOKEN, EMIT_SPACE
    client.jobs.create("charge-invoice", {"invoiceId": "inv_1042"}, key="charge-inv_1042",
                       delay=timedelta(minutes=5), timeout=timedelta(minutes=2))

    @emit.worker(names=["charge-invoice"], concurrency=4)
    def charge(job: emit.HeldJob) -> dict:
        job.progress(50, "charging")
        return {"chargeId": "ch_1"}

    charge.run()                              # until SIGTERM or SIGINT

A task names a job, its payload's type and its options once, for both sides:

    resize = client.task("resize-image", payload=ResizeRequest, max_attempts=5)
    resize.enqueue(ResizeRequest(url=..., width=640)).result(timeout=60)

    @resize.worker(concurrency=4)
    def handle(request: ResizeRequest) -> dict: ...

`emit.AsyncEmit` is the same client for asyncio, and `await emit.serve(w1, w2)` runs
several workers in one process. Durations are `timedelta`s (or seconds), instants
timezone-aware `datetime`s (`emit.units`). Built on the HTTP API alone, with httpx as its
only dependency.
"""

from emit.client import AsyncEmit, Emit, worker
from emit.clock import Clock, SystemClock
from emit.control import Release, RetryAfter, Unrecoverable
from emit.errors import (
    EmitError,
    Internal,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from emit.held import HeldJob
from emit.models import (
    Attempt,
    Backoff,
    Callback,
    Claimed,
    Created,
    Delivery,
    Event,
    Fired,
    FollowLink,
    Guarantee,
    Job,
    JobPage,
    JobStatus,
    Line,
    LogLevel,
    MintedToken,
    NewJob,
    Outcome,
    Progress,
    Rejection,
    Retried,
    Scope,
    Token,
    WaitingOn,
)
from emit.names import NameDiagnostics, Policy, Rate
from emit.results import JobCancelled, JobFailed, JobNotCompleted, JobTimeout
from emit.schedules import JobTemplate, LastRun, Overlap, Schedule
from emit.signature import sign, verify_signature
from emit.spaces import JobDefaults, SettledNotices, SpaceEntry, SpaceSettings
from emit.tasks import AsyncTask, AsyncTaskRun, Task, TaskRun, TaskWorker
from emit.transport import VERSION as __version__
from emit.units import Duration
from emit.worker import Worker, run, serve

__all__ = [
    "AsyncEmit",
    "AsyncTask",
    "AsyncTaskRun",
    "Attempt",
    "Backoff",
    "Callback",
    "Claimed",
    "Clock",
    "Created",
    "Delivery",
    "Duration",
    "Emit",
    "EmitError",
    "Event",
    "Fired",
    "FollowLink",
    "Guarantee",
    "HeldJob",
    "Internal",
    "InvalidArgument",
    "Job",
    "JobCancelled",
    "JobDefaults",
    "JobFailed",
    "JobNotCompleted",
    "JobPage",
    "JobStatus",
    "JobTemplate",
    "JobTimeout",
    "LastRun",
    "Line",
    "LogLevel",
    "MintedToken",
    "NameDiagnostics",
    "NewJob",
    "NotFound",
    "Outcome",
    "Overlap",
    "PermissionDenied",
    "Policy",
    "Progress",
    "Rate",
    "Rejection",
    "Release",
    "ResourceExhausted",
    "Retried",
    "RetryAfter",
    "Schedule",
    "Scope",
    "SettledNotices",
    "SpaceEntry",
    "SpaceSettings",
    "SystemClock",
    "Task",
    "TaskRun",
    "TaskWorker",
    "Token",
    "Unauthenticated",
    "Unavailable",
    "Unrecoverable",
    "WaitingOn",
    "Worker",
    "__version__",
    "run",
    "serve",
    "sign",
    "verify_signature",
    "worker",
]
