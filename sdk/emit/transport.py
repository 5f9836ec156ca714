"""One call over HTTP, made as reliably as the call allows.

Two kinds of trouble are handled here, so no resource method has to:

- **A full space (429).** emit kept nothing, so the same call is sent again after the
  wait the answer gives, for up to `room_wait` seconds in all; then the 429 is raised.
- **No answer, or a 5xx.** Sent again with backoff only when repeating is harmless:
  the caller says so (`repeatable=True`: reads, reports, cancels, creates whose jobs
  all carry keys). A connection that was never made is always tried again: the request
  did not leave. Otherwise the error is raised with `outcome_unknown` set, since the
  request may have been applied.

The rules are `_Tries`, without I/O; `Transport` (blocking) and `AsyncTransport` (an event
loop) each carry them in a loop of a few lines, so both clients retry alike.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import httpx

from emit.calls import Call
from emit.clock import SYSTEM, Clock
from emit.errors import EmitError, Internal, ResourceExhausted, Unavailable, error_from_response

try:
    VERSION = metadata.version("emit-sdk")
except metadata.PackageNotFoundError:  # run from a source tree without installing
    VERSION = "0+unknown"

# These fail before a byte of the request is sent, so trying again cannot repeat it.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class Backoff:
    """Waits between tries of a repeatable call: doubling, jittered, capped."""

    tries: int = 5
    """Tries in all, the first included."""
    first: float = 0.2
    most: float = 5.0

    def wait(self, failures: int) -> float:
        """Seconds before the next try, after `failures` failed tries: drawn from the upper
        half of the doubled wait, so clients that failed together don't retry together."""
        ceiling = min(self.most, self.first * 2 ** (failures - 1))
        return random.uniform(ceiling / 2, ceiling)


class _Tries:
    """One call's tries, sans I/O: what to send, and after each answer or error, whether
    to return, raise, or wait and send again (the same rules on both transports)."""

    def __init__(self, carrier: _Settings, call: Call) -> None:
        self.call = call
        self.backoff = carrier.backoff
        content = None if call.body is None else _dump(call.body)
        extra = dict(call.headers or {}) | (
            {"content-type": "application/json"} if content is not None else {}
        )
        self.request: dict[str, Any] = {
            "method": call.method,
            "url": call.path,
            "content": content,
            "headers": extra or None,
            "params": call.params,
            "timeout": call.timeout if call.timeout is not None else httpx.USE_CLIENT_DEFAULT,
        }
        self.clock = carrier.clock
        self.room_deadline = carrier.clock.monotonic() + carrier.room_wait
        self.failures = 0

    def after_error(self, exc: httpx.TransportError) -> float:
        """The wait before sending again after no answer; raises when it must not be sent again."""
        call = self.call
        sent = not isinstance(exc, _NOT_SENT)
        self.failures += 1
        if (call.repeatable or not sent) and self.failures < self.backoff.tries:
            return self.backoff.wait(self.failures)
        raise _unavailable(call.method, call.path, exc, sent=sent, repeatable=call.repeatable) from exc

    def after_response(self, response: httpx.Response) -> tuple[bool, Any]:
        """`(True, the answer's JSON)`, or `(False, seconds to wait before sending again)`;
        raises the call's `EmitError`."""
        if response.status_code < 400:
            return True, response.json() if response.content else None
        error = error_from_response(response)
        if isinstance(error, ResourceExhausted):
            wait = error.retry_after_ms / 1000
            if self.clock.monotonic() + wait <= self.room_deadline:
                return False, wait
            raise error
        if isinstance(error, Internal):
            self.failures += 1
            if self.call.repeatable and self.failures < self.backoff.tries:
                return False, self.backoff.wait(self.failures)
            raise _outcome_unknown(error, repeatable=self.call.repeatable)
        raise error


class _Settings:
    """What both transports know: where, as whom, and how patiently."""

    def __init__(self, url: str, token: str, *, room_wait: float, backoff: Backoff, clock: Clock) -> None:
        self.url = url.rstrip("/")
        self.authorization = f"Bearer {token}"
        self.room_wait = room_wait
        self.backoff = backoff
        self.clock = clock

    def _headers(self) -> dict[str, str]:
        return {
            "authorization": self.authorization,
            "user-agent": f"emit-python/{VERSION}",
            "accept": "application/json",
        }


class Transport(_Settings):
    """Authenticated JSON calls to one emit API, blocking (httpx's `Client`)."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        room_wait: float,
        timeout: float,
        backoff: Backoff,
        http_transport: httpx.BaseTransport | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        super().__init__(url, token, room_wait=room_wait, backoff=backoff, clock=clock)
        self._http = httpx.Client(
            base_url=self.url, timeout=timeout, transport=http_transport, headers=self._headers()
        )

    def close(self) -> None:
        self._http.close()

    def call(self, call: Call) -> Any:
        """The answer's JSON (None for an empty answer), or a typed `EmitError`."""
        tries = _Tries(self, call)
        while True:
            try:
                response = self._http.request(**tries.request)
            except httpx.TransportError as exc:
                self.clock.sleep(tries.after_error(exc))
                continue
            done, value = tries.after_response(response)
            if done:
                return value
            self.clock.sleep(value)

    def pause(self, seconds: float) -> None:
        self.clock.sleep(seconds)

    def monotonic(self) -> float:
        return self.clock.monotonic()


class AsyncTransport(_Settings):
    """The same calls on an event loop (httpx's `AsyncClient`), waiting on `clock.wait`."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        room_wait: float,
        timeout: float,
        backoff: Backoff,
        http_transport: httpx.AsyncBaseTransport | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        super().__init__(url, token, room_wait=room_wait, backoff=backoff, clock=clock)
        self._http = httpx.AsyncClient(
            base_url=self.url, timeout=timeout, transport=http_transport, headers=self._headers()
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, call: Call) -> Any:
        tries = _Tries(self, call)
        while True:
            try:
                response = await self._http.request(**tries.request)
            except httpx.TransportError as exc:
                await self.clock.wait(tries.after_error(exc))
                continue
            done, value = tries.after_response(response)
            if done:
                return value
            await self.clock.wait(value)

    async def pause(self, seconds: float) -> None:
        await self.clock.wait(seconds)

    def monotonic(self) -> float:
        return self.clock.monotonic()


def _dump(body: Any) -> bytes:
    # NaN and infinities are not JSON; refuse them here rather than send what emit refuses.
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _unavailable(
    method: str, path: str, exc: httpx.TransportError, *, sent: bool, repeatable: bool
) -> Unavailable:
    what = f"{method} {path}: no answer ({type(exc).__name__}: {exc})"
    if sent and not repeatable:
        what += "; the request may or may not have taken effect"
    return Unavailable(what, outcome_unknown=sent)


def _outcome_unknown(error: EmitError, *, repeatable: bool) -> EmitError:
    if not repeatable:
        error.message += "; the request may or may not have taken effect"
        error.args = (error.message,)
    return error
