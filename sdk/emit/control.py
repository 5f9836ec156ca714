"""What a handler raises to decide its job's fate, beyond "return completes it".

Any other exception fails the attempt with its type, message and traceback as the error
(`emit.results`), and the job is retried while attempts are left. These three say
something more, as the concepts page describes; the first two fail with their message
alone.
"""

from __future__ import annotations

from datetime import timedelta

from emit.units import Duration, as_timedelta


class Unrecoverable(Exception):
    """Fail the job for good, whatever attempts are left (a declined card, a bad payload)."""


class RetryAfter(Exception):
    """Fail this attempt and try again `after` (a timedelta, or seconds) instead of the
    backoff policy's wait: `raise RetryAfter("rate limited", after=timedelta(seconds=30))`.

    For a dependency that said when to come back, such as a 429 with `Retry-After`.
    At most a day.
    """

    def __init__(self, message: str, after: Duration) -> None:
        wait = as_timedelta(after, "RetryAfter: after")
        if not timedelta(0) <= wait <= timedelta(days=1):
            raise ValueError(f"RetryAfter: after must be from 0 to a day, not {wait}")
        super().__init__(message)
        self.after: timedelta = wait


class Release(Exception):
    """Give the job back unfinished: it is handed out again at once, and the attempt isn't counted.

    For work this worker cannot take right now (it is draining, or a local resource is busy).
    """
