"""Tasks: a job name, its payload's type and its create options, written once and shared by
the code that enqueues the jobs and the worker that runs them.

    resize = client.task("resize-image", payload=ResizeRequest, max_attempts=5,
                         timeout=timedelta(minutes=2))

    run = resize.enqueue(ResizeRequest(url="s3://in/cat.png", width=640))
    print(run.result(timeout=timedelta(minutes=5)))      # waits; raises JobFailed, ...

    @resize.worker(concurrency=4)
    def handle(request: ResizeRequest, job: emit.HeldJob) -> dict:
        return {"url": shrink(request.url, request.width)}

    handle.run()                                         # or emit.serve(handle, ...)

**The payload type** is optional: a pydantic model (anything with `model_validate` and
`model_dump`: pydantic is not a dependency of the SDK, only read off the class), a
dataclass, or none (the payload as JSON, as `jobs.create` takes it). `enqueue` takes an
instance of it or a mapping of its fields; either is checked against the type before
anything is sent (a pydantic `ValidationError`, or a `TypeError` for a dataclass), and sent
as JSON (`model_dump(mode="json")`, or `dataclasses.asdict`). A dataclass's fields are
JSON values as they are: nested dataclasses are sent as objects but read back as dicts
(use pydantic for nested models).

**The handler** takes the payload, parsed as the type, and, if it has a second parameter,
the `HeldJob` (for `progress`, `log`, `signal`, `attempt` ...). A payload the type refuses
fails the job for good (`emit.Unrecoverable`: no retry would parse it). The decorated
function is still the function: calling it (`handle(ResizeRequest(...))`, or with a held
job from `emit.testing.held_job`) runs it with no worker and no server.

On `Emit`, `enqueue` returns a `TaskRun` whose `get()` and `result()` block; on
`AsyncEmit` it is awaited (`await task.enqueue(...)`) and returns an `AsyncTaskRun`, whose
calls are awaited too.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from emit.control import Unrecoverable
from emit.held import HeldJob
from emit.jobs import JobFlows
from emit.models import Created, Job, Outcome
from emit.payloads import check_model, dump_payload, parse_payload
from emit.units import Duration
from emit.worker import Worker

if TYPE_CHECKING:
    from emit.client import AsyncEmit, Emit

M = TypeVar("M")

# `jobs.create`'s options, read off it so the two never drift apart.
_CREATE_OPTIONS = frozenset(
    p.name for p in inspect.signature(JobFlows.create).parameters.values() if p.kind == p.KEYWORD_ONLY
)
_DEFAULT_OPTIONS = _CREATE_OPTIONS - {"key", "run_at", "expires_at", "traceparent"}


# -- tasks -----------------------------------------------------------------------------


class _Task(Generic[M]):
    def __init__(
        self,
        client: Emit | AsyncEmit,
        name: str,
        payload: type[M] | None = None,
        **defaults: Any,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("task: give the job name, a non-empty string")
        check_model(payload)
        unknown = set(defaults) - _DEFAULT_OPTIONS
        if unknown:
            raise TypeError(
                f"task: unknown option(s) {', '.join(sorted(unknown))}; a task's defaults are "
                f"{', '.join(sorted(_DEFAULT_OPTIONS))}"
            )
        self.client = client
        self.name = name
        self.payload = payload
        """The payload's type (a pydantic model or a dataclass), or None."""
        self.defaults: dict[str, Any] = {k: v for k, v in defaults.items() if v is not None}
        """Create options each enqueue gets unless it gives its own."""

    def __repr__(self) -> str:
        model = getattr(self.payload, "__name__", None)
        return f"<emit task {self.name!r}" + (f" payload={model}>" if model else ">")

    def _options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        unknown = set(options) - _CREATE_OPTIONS
        if unknown:
            raise TypeError(f"enqueue: unknown option(s) {', '.join(sorted(unknown))}")
        return self.defaults | dict(options)

    def parse(self, payload: Any) -> M:
        """A job's payload as this task's type (what its handler is given)."""
        return parse_payload(self.payload, payload)

    def worker(
        self,
        *,
        concurrency: int = 1,
        lease: Duration | None = None,
        poll_wait: Duration = 5.0,
        report_interval: Duration = 1.0,
        grace: Duration = 25.0,
    ) -> Callable[[Callable[..., Any]], TaskWorker]:
        """Make the decorated function this task's worker (jobs of this name alone), on the
        task's client. It is given the payload as the task's type, and the `HeldJob` too if it
        takes a second parameter; what it returns is the result. Options as `Emit.worker`'s."""

        def decorate(fn: Callable[..., Any]) -> TaskWorker:
            return TaskWorker(
                self,
                fn,
                concurrency=concurrency,
                lease=lease,
                poll_wait=poll_wait,
                report_interval=report_interval,
                grace=grace,
            )

        return decorate


class Task(_Task[M]):
    """A task on `Emit` (`client.task(...)`): `enqueue` blocks until the job is created."""

    client: Emit

    def enqueue(self, payload: M | Mapping[str, Any] | None = None, **options: Any) -> TaskRun:
        """Create a job of this task: `payload` is an instance of its type or a mapping of its
        fields (checked before it is sent); `options` are `jobs.create`'s (`key`, `delay`,
        `priority`, ...), over the task's defaults. The run's `result()` waits for it."""
        body = dump_payload(self.payload, payload)
        created = self.client.jobs.create(self.name, body, **self._options(options))
        return TaskRun(self.client, created)


class AsyncTask(_Task[M]):
    """A task on `AsyncEmit`: `await task.enqueue(...)`."""

    client: AsyncEmit

    async def enqueue(self, payload: M | Mapping[str, Any] | None = None, **options: Any) -> AsyncTaskRun:
        """As `Task.enqueue`, awaited; the run's calls are awaited too."""
        body = dump_payload(self.payload, payload)
        created = await self.client.jobs.create(self.name, body, **self._options(options))
        return AsyncTaskRun(self.client, created)


# -- runs --------------------------------------------------------------------------------


class _Run:
    def __init__(self, created: Created) -> None:
        self.created = created
        """The create's answer (`outcome`: `new`, or `duplicate` for a repeated key)."""
        self.id = created.id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} ({self.created.outcome})>"


class TaskRun(_Run):
    """A job a task enqueued, on `Emit`: `get()` reads it, `result(timeout=)` waits for its result."""

    def __init__(self, client: Emit, created: Created) -> None:
        super().__init__(created)
        self._client = client

    def get(self) -> Job:
        """The job as it is now."""
        return self._client.jobs.get(self.id)

    refresh = get

    def wait(self, timeout: Duration | None = None) -> Job:
        """The job once finished, however it ended (`jobs.wait`)."""
        return self._client.jobs.wait(self.id, timeout=timeout)

    def result(self, timeout: Duration | None = None) -> Any:
        """Its result once completed; `JobFailed`, `JobCancelled`, or `JobTimeout` (a
        `TimeoutError`) if it does not complete (`jobs.result`)."""
        return self._client.jobs.result(self.id, timeout=timeout)

    def cancel(self) -> Outcome:
        [cancelled] = self._client.jobs.cancel(self.id)
        return cancelled


class AsyncTaskRun(_Run):
    """A job a task enqueued, on `AsyncEmit`: the same calls as `TaskRun`, awaited."""

    def __init__(self, client: AsyncEmit, created: Created) -> None:
        super().__init__(created)
        self._client = client

    async def get(self) -> Job:
        return await self._client.jobs.get(self.id)

    refresh = get

    async def wait(self, timeout: Duration | None = None) -> Job:
        return await self._client.jobs.wait(self.id, timeout=timeout)

    async def result(self, timeout: Duration | None = None) -> Any:
        return await self._client.jobs.result(self.id, timeout=timeout)

    async def cancel(self) -> Outcome:
        [cancelled] = await self._client.jobs.cancel(self.id)
        return cancelled


# -- workers ---------------------------------------------------------------------------


class TaskWorker(Worker):
    """A task's worker: a `Worker` for the task's name (`run()`, `serve()`, `emit.serve`)
    whose handler parses each payload as the task's type and calls the function. Calling
    it calls the function itself, unchanged."""

    def __init__(self, task: _Task[Any], fn: Callable[..., Any], **options: Any) -> None:
        self.task = task
        self.fn = fn
        self.wants_job = _takes_two(fn)
        super().__init__(_handler(task, fn, self.wants_job), client=task.client, names=[task.name], **options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<emit task worker {getattr(self.fn, '__qualname__', self.fn)!r} task={self.task.name!r}>"


def _takes_two(fn: Callable[..., Any]) -> bool:
    """Whether `fn` takes a second positional argument (the held job)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional and not any(p.kind == p.VAR_POSITIONAL for p in parameters):
        raise TypeError(f"task worker {fn!r}: must take the payload as its first argument")
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


def _parsed(task: _Task[Any], job: HeldJob[Any]) -> Any:
    try:
        return task.parse(job.payload)
    except Exception as exc:  # pydantic's ValidationError, a dataclass's TypeError, ...
        raise Unrecoverable(
            f"payload is not a {getattr(task.payload, '__name__', 'payload')}: {exc}"
        ) from exc


def _handler(task: _Task[Any], fn: Callable[..., Any], wants_job: bool) -> Callable[[HeldJob[Any]], Any]:
    if inspect.iscoroutinefunction(fn):

        async def handle_async(job: HeldJob[Any]) -> Any:
            payload = _parsed(task, job)
            return await (fn(payload, job) if wants_job else fn(payload))

        return functools.wraps(fn)(handle_async)

    def handle(job: HeldJob[Any]) -> Any:
        payload = _parsed(task, job)
        return fn(payload, job) if wants_job else fn(payload)

    return functools.wraps(fn)(handle)
