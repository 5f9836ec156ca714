"""A job's result, waited for: what `jobs.result`, `jobs.wait` and a task run's `result()` raise
when the job did not complete, and how a worker writes a handler's exception as its error.

A finished job that did not complete raises one of these, each carrying the job as read:

| the job              | raises                                                        |
| -------------------- | ------------------------------------------------------------- |
| `completed`          | nothing: its result is returned                               |
| `failed`, `stalled`  | `JobFailed`, with the error (`"ValueError: bad size\\n..."`)    |
| `cancelled`          | `JobCancelled` (a deadline's is too: error `expired`)         |
| not finished in time | `JobTimeout`, a `TimeoutError`, with the job as last seen     |

**The error format.** When a handler raises, its worker reports the error as the exception's
type and message on the first line (`ValueError: bad size`; a type outside the builtins is
named with its module, `billing.Declined: card declined`), then the last frames of its
traceback, all within the 4 KiB the API keeps of an error: frames are cut from the top (the
outermost), and the first line is kept whole unless it is itself too long. `emit.Unrecoverable`
and `emit.RetryAfter` are decisions rather than crashes: their message alone is the error.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

from emit.models import Job

MAX_ERROR_BYTES = 4_096
"""What the API keeps of an attempt's error (it cuts the rest)."""
_TRACEBACK = "Traceback (most recent call last{cut}):"
_OWN = (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
    os.path.dirname(os.__file__) + os.sep + "asyncio",
)


class JobNotCompleted(Exception):
    """The job finished without completing (`JobFailed`, `JobCancelled`). `job` is the job as
    read; `error` its error (None if it has none), and `error_type` the first line's type."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.error: str | None = job.error
        super().__init__(self._say())

    @property
    def error_type(self) -> str | None:
        """The exception type the error names (`ValueError`, `billing.Declined`), when its
        first line reads `Type: message` as a worker writes it; else None."""
        return error_type(self.error)

    def _say(self) -> str:
        first = (self.error or "").split("\n", 1)[0]
        return f"job {self.job.id} ({self.job.name}) {self.job.status}" + (f": {first}" if first else "")


class JobFailed(JobNotCompleted):
    """The job failed for good (`failed`, its attempts used up or unrecoverable) or
    `stalled` (an at-most-once job whose attempt ended unreported). `error` holds the whole
    error, traceback included; `str()` its first line."""


class JobCancelled(JobNotCompleted):
    """The job was cancelled (`jobs.cancel`, or its deadline passed: `error == "expired"`)."""


class JobTimeout(TimeoutError):
    """The job had not finished when the wait ran out; `job` is it as last seen."""

    def __init__(self, job: Job, waited: float) -> None:
        self.job = job
        super().__init__(f"job {job.id} ({job.name}) still {job.status} after {waited:g}s")


def outcome(job: Job) -> Any:
    """A finished job's result, or the exception saying why it has none."""
    if job.status == "completed":
        return job.result
    if job.status == "cancelled":
        raise JobCancelled(job)
    raise JobFailed(job)


def error_type(error: str | None) -> str | None:
    """`ValueError` from `"ValueError: bad size\\n..."` (None when there is no such type)."""
    if not error:
        return None
    head = error.split("\n", 1)[0].split(":", 1)[0].strip()
    if head and all(part.isidentifier() for part in head.split(".")):
        return head
    return None


def describe(exc: BaseException, *, limit: int = MAX_ERROR_BYTES) -> str:
    """`"Type: message"`, then the last frames of the exception's traceback (those of the SDK
    and asyncio that led to the handler left out), in at most `limit` bytes of UTF-8."""
    head = "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n") or type(exc).__name__
    head = _cut(head, limit)
    frames = list(traceback.extract_tb(exc.__traceback__))
    while frames and frames[0].filename.startswith(_OWN):
        frames.pop(0)  # the worker calling the handler: nobody's business
    lines = traceback.StackSummary.from_list(frames).format()
    kept: list[str] = []
    room = limit - len(head.encode()) - 1 - len(_TRACEBACK.format(cut=", 1000000 frames cut").encode()) - 1
    for frame in reversed(lines):
        size = len(frame.encode())
        if size > room:
            break
        kept.insert(0, frame)
        room -= size
    if not kept:
        return head
    cut = len(lines) - len(kept)
    title = _TRACEBACK.format(cut=f", {cut} frame{'s' if cut != 1 else ''} cut" if cut else "")
    return f"{head}\n{title}\n{''.join(kept).rstrip()}"


def _cut(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode(errors="ignore") + "..."
