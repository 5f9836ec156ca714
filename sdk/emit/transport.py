"""One call over HTTP, made as reliably as the call allows.

Two kinds of trouble are handled here, so no resource method has to:

- **A full space (429).** emit kept nothing, so the same call is sent again after the
  wait the answer gives, for up to `room_wait` seconds in all; then the 429 is raised.
- **No answer, or a 5xx.** Sent again with backoff only when repeating is harmless:
  the caller says so (`repeatable=True`: reads, reports, cancels, creates whose jobs
  all carry keys). A connection that was never made is always tried again: the request
  did not leave. Otherwise the error is raised with `outcome_unknown` set, since the
  request may have been applied.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import httpx

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


class Transport:
    """Authenticated JSON calls to one emit API."""

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
        self.url = url.rstrip("/")
        self.authorization = f"Bearer {token}"
        self.room_wait = room_wait
        self.backoff = backoff
        self.clock = clock
        self._http = httpx.Client(
            base_url=self.url,
            timeout=timeout,
            transport=http_transport,
            headers={
                "authorization": self.authorization,
                "user-agent": f"emit-python/{VERSION}",
                "accept": "application/json",
            },
        )

    def close(self) -> None:
        self._http.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str | int] | None = None,
        repeatable: bool,
        timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """The answer's JSON (None for an empty answer), or a typed `EmitError`. `headers`:
        the call's own, beside the client's."""
        content = None if body is None else _dump(body)
        extra = dict(headers or {}) | ({"content-type": "application/json"} if content is not None else {})
        room_deadline = self.clock.monotonic() + self.room_wait
        failures = 0
        while True:
            try:
                response = self._http.request(
                    method,
                    path,
                    content=content,
                    headers=extra or None,
                    params=params,
                    timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
                )
            except httpx.TransportError as exc:
                sent = not isinstance(exc, _NOT_SENT)
                failures += 1
                if (repeatable or not sent) and failures < self.backoff.tries:
                    self.clock.sleep(self.backoff.wait(failures))
                    continue
                raise _unavailable(method, path, exc, sent=sent, repeatable=repeatable) from exc
            if response.status_code < 400:
                return response.json() if response.content else None
            error = error_from_response(response)
            if isinstance(error, ResourceExhausted):
                wait = error.retry_after_ms / 1000
                if self.clock.monotonic() + wait <= room_deadline:
                    self.clock.sleep(wait)
                    continue
                raise error
            if isinstance(error, Internal):
                failures += 1
                if repeatable and failures < self.backoff.tries:
                    self.clock.sleep(self.backoff.wait(failures))
                    continue
                raise _outcome_unknown(error, repeatable=repeatable)
            raise error


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
