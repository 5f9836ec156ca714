"""Errors the API answers with: one class per contract code.

The HTTP mapping lives in `shared.http`; everything below it raises these, never a
status code. A message names the field that is wrong (`jobs[3].delayMs: ...`).
"""

from __future__ import annotations


class EmitError(Exception):
    """Something went wrong."""

    code = "Internal"
    status = 500

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.__doc__ or self.code)
        self.message = message or self.__doc__ or self.code


class InvalidArgument(EmitError):
    """The request is not valid."""

    code = "InvalidArgument"
    status = 400


class Unauthenticated(EmitError):
    """A valid bearer token is required."""

    code = "Unauthenticated"
    status = 401


class PermissionDenied(EmitError):
    """The token may not do this."""

    code = "PermissionDenied"
    status = 403


class NotFound(EmitError):
    """No such resource."""

    code = "NotFound"
    status = 404


class ResourceExhausted(EmitError):
    """The space is full: try again later."""

    code = "ResourceExhausted"
    status = 429

    def __init__(self, message: str | None = None, *, retry_after_ms: int) -> None:
        super().__init__(message)
        self.retry_after_ms = retry_after_ms
