"""The SDK's calls without their I/O, so that `Emit` and `AsyncEmit` share every one of them.

Each call of the SDK is written once, as a generator (a *flow*): it yields the HTTP calls it
needs (`Call`: method, path, body, whether repeating it is harmless), the pauses it
makes (`Pause`) and its questions of the time (`Now`), is sent each call's JSON answer
back, and returns (or, for a listing, yields) the parsed models. The flow decides
everything a call means (its body, its checks, its paging, its parsing); a transport
only carries it: `Transport` with httpx's blocking client, `AsyncTransport` with its
`AsyncClient`.

`blocking(flow)` and `awaiting(flow)` make a flow a method of a resource (`Jobs`,
`AsyncJobs`) with the flow's own signature and docstring, so `help()` and type checkers
read the same thing on both clients, and nothing is written twice.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import re
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, Protocol, TypeAlias, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
F = TypeVar("F")


@dataclass(frozen=True)
class Call:
    """One HTTP call a flow needs made, and what the transport may do with it."""

    method: str
    path: str
    body: Any = None
    params: Mapping[str, str | int] | None = None
    repeatable: bool = False
    """Harmless to send again after no answer or a 5xx (reads, reports, keyed creates)."""
    timeout: float | None = None
    """Seconds for this call's HTTP timeout, when not the client's (a long poll's)."""
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Pause:
    """A wait a flow makes between calls (`jobs.follow`'s polls), on the client's clock."""

    seconds: float


@dataclass(frozen=True)
class Now:
    """A flow asking the time: it is sent the client clock's `monotonic()` (`jobs.wait`'s
    deadline), so a test's clock moves it as it moves the pauses."""


NOW = Now()

Op: TypeAlias = Generator[Call | Pause | Now, Any, T]
"""A flow with one result: it yields calls (and pauses, and asks the time), is sent their
answers, and returns."""
Stream: TypeAlias = Generator[Call | Pause | Now | T, Any, None]
"""A flow of many results (a listing, a follow): it yields calls, pauses and items."""


class Carrier(Protocol):
    """What drives a flow on one side: a transport's `call` and the pauses of its clock."""

    def call(self, call: Call) -> Any: ...

    def pause(self, seconds: float) -> None: ...

    def monotonic(self) -> float: ...


class AsyncCarrier(Protocol):
    async def call(self, call: Call) -> Any: ...

    async def pause(self, seconds: float) -> None: ...

    def monotonic(self) -> float: ...


def _step(carrier: Carrier, step: Call | Pause | Now) -> Any:
    if isinstance(step, Call):
        return carrier.call(step)
    if isinstance(step, Pause):
        carrier.pause(step.seconds)
        return None
    return carrier.monotonic()


async def _astep(carrier: AsyncCarrier, step: Call | Pause | Now) -> Any:
    if isinstance(step, Call):
        return await carrier.call(step)
    if isinstance(step, Pause):
        await carrier.pause(step.seconds)
        return None
    return carrier.monotonic()


def run(carrier: Carrier, flow: Op[T]) -> T:
    """Drive a flow to its result, blocking."""
    answer: Any = None
    try:
        while True:
            answer = _step(carrier, flow.send(answer))
    except StopIteration as done:
        return done.value


def iterate(carrier: Carrier, flow: Stream[T]) -> Iterator[T]:
    """Drive a listing flow, blocking: its items as they come, a page fetched when needed."""
    answer: Any = None
    while True:
        try:
            step = flow.send(answer)
        except StopIteration:
            return
        answer = None
        if isinstance(step, Call | Pause | Now):
            answer = _step(carrier, step)
        else:
            yield step


async def arun(carrier: AsyncCarrier, flow: Op[T]) -> T:
    """Drive a flow to its result on the event loop."""
    answer: Any = None
    try:
        while True:
            answer = await _astep(carrier, flow.send(answer))
    except StopIteration as done:
        return done.value


async def aiterate(carrier: AsyncCarrier, flow: Stream[T]) -> AsyncIterator[T]:
    """Drive a listing flow on the event loop."""
    answer: Any = None
    while True:
        try:
            step = flow.send(answer)
        except StopIteration:
            return
        answer = None
        if isinstance(step, Call | Pause | Now):
            answer = await _astep(carrier, step)
        else:
            yield step


def collect(flow: Stream[T]) -> Generator[Call | Pause | Now, Any, builtins.list[T]]:
    """Inside a flow (`yield from collect(...)`): every item another listing flow makes,
    its calls and pauses passed on to whoever drives the outer flow."""
    items: builtins.list[T] = []
    answer: Any = None
    while True:
        try:
            step = flow.send(answer)
        except StopIteration:
            return items
        answer = None
        if isinstance(step, Call | Pause | Now):
            answer = yield step
        else:
            items.append(step)


# -- flows as methods ----------------------------------------------------------------
#
# A resource holds `_flows` (the object whose methods are flows) and `_carrier` (the
# transport). Its methods are made here from the flows' own functions.


def blocking(flow: Callable[Concatenate[F, P], Op[T]]) -> Callable[Concatenate[Any, P], T]:
    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        return run(self._carrier, flow(self._flows, *args, **kwargs))

    return _like(method, flow, "")


def blocking_stream(
    flow: Callable[Concatenate[F, P], Stream[T]],
) -> Callable[Concatenate[Any, P], Iterator[T]]:
    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        return iterate(self._carrier, flow(self._flows, *args, **kwargs))

    return _like(method, flow, "Iterator")


def awaiting(
    flow: Callable[Concatenate[F, P], Op[T]],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, T]]:
    async def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> T:
        return await arun(self._carrier, flow(self._flows, *args, **kwargs))

    return _like(method, flow, "")


def awaiting_stream(
    flow: Callable[Concatenate[F, P], Stream[T]],
) -> Callable[Concatenate[Any, P], AsyncIterator[T]]:
    def method(self: Any, *args: P.args, **kwargs: P.kwargs) -> AsyncIterator[T]:
        return aiterate(self._carrier, flow(self._flows, *args, **kwargs))

    return _like(method, flow, "AsyncIterator")


_FLOW_TYPE = re.compile(r"^(?:Op|Stream)\[(.*)\]$")


def _like(method: Any, flow: Callable[..., Any], wrapper: str) -> Any:
    """`method` named, documented and signed as `flow` is, answering what the flow makes
    (`Created` for an `Op[Created]`, `Iterator[Job]` for a `Stream[Job]`)."""
    functools.update_wrapper(method, flow)
    signature = inspect.signature(flow)
    answer = signature.return_annotation
    if isinstance(answer, str) and (found := _FLOW_TYPE.match(answer)):
        inner = found.group(1)
        answer = f"{wrapper}[{inner}]" if wrapper else inner
    method.__signature__ = signature.replace(return_annotation=answer)
    del method.__wrapped__  # help() reads __signature__, not the flow's
    return method
