"""Errors a call to emit raises: one class per code the API answers with.

The classes mirror the API's codes (`InvalidArgument`, `NotFound`, ...) so that an
`except` names what went wrong, and each carries the server's message, which names the
field at fault (`jobs[3].delayMs: must be at most 31536000000`). Two cases have no code
from the server: `Unavailable` (no answer arrived at all) and `Internal` (a 5xx). After
either, the request may or may not have taken effect; `outcome_unknown` says so, so a
caller that must not repeat a create can tell "refused" from "don't know".
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx


class EmitError(Exception):
    """emit refused a call, or the call could not be made."""

    code: ClassVar[str] = "Unknown"

    def __init__(self, message: str, *, status: int | None = None, outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.outcome_unknown = outcome_unknown
        """True when the request may have been applied although no success was seen."""


class InvalidArgument(EmitError):
    """A body, field, query parameter or path part breaks a rule (400)."""

    code = "InvalidArgument"


class Unauthenticated(EmitError):
    """No token, or an unknown or revoked one (401)."""

    code = "Unauthenticated"


class PermissionDenied(EmitError):
    """The token lacks the scope, or the space (403)."""

    code = "PermissionDenied"


class NotFound(EmitError):
    """No such job, space or token (404)."""

    code = "NotFound"


class ResourceExhausted(EmitError):
    """The space is at its maxInFlight (429): nothing was kept; the same call may be sent again."""

    code = "ResourceExhausted"

    def __init__(self, message: str, *, status: int | None = 429, retry_after_ms: int = 1_000) -> None:
        super().__init__(message, status=status)
        self.retry_after_ms = retry_after_ms


class Internal(EmitError):
    """emit failed on its side (5xx); the request may or may not have taken effect."""

    code = "Internal"


class Unavailable(EmitError):
    """No answer came back: the connection failed, broke, or timed out."""

    code = "Unavailable"


_BY_CODE: dict[str, type[EmitError]] = {
    cls.code: cls for cls in (InvalidArgument, Unauthenticated, PermissionDenied, NotFound, Internal)
}
# A gateway answers some statuses itself, without an emit code (an unknown route is a
# bare 404, an oversized body a 413): map those by status.
_BY_STATUS: dict[int, type[EmitError]] = {
    400: InvalidArgument,
    401: Unauthenticated,
    403: PermissionDenied,
    404: NotFound,
    413: InvalidArgument,
}


def error_from_response(response: httpx.Response) -> EmitError:
    """The typed error for an answer of 400 or more, carrying the server's message."""
    status = response.status_code
    body = _json_object(response)
    code = body.get("code")
    message = str(body.get("message") or response.reason_phrase or f"HTTP {status}")
    if code == ResourceExhausted.code or status == 429:
        return ResourceExhausted(message, status=status, retry_after_ms=_retry_after_ms(response, body))
    if status >= 500:
        return Internal(message, status=status, outcome_unknown=True)
    cls = _BY_CODE.get(str(code)) or _BY_STATUS.get(status, EmitError)
    return cls(message, status=status)


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _retry_after_ms(response: httpx.Response, body: dict[str, Any]) -> int:
    """The body's `retryAfterMs`, else the `Retry-After` header's seconds, else one second."""
    value = body.get("retryAfterMs")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    header = response.headers.get("retry-after", "")
    return int(header) * 1_000 if header.isdigit() else 1_000
