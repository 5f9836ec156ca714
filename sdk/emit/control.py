"""What a handler raises to decide its job's fate, beyond "return completes it".

Any other exception fails the attempt with its message, and the job is retried while
attempts are left. These three say something more, as the concepts page describes.
"""

from __future__ import annotations


class Unrecoverable(Exception):
    """Fail the job for good, whatever attempts are left (a declined card, a bad payload)."""


class RetryAfter(Exception):
    """Fail this attempt and try again after `seconds`, instead of the backoff policy's wait.

    For a dependency that said when to come back, such as a 429 with `Retry-After`.
    At most a day.
    """

    def __init__(self, message: str, seconds: float) -> None:
        if not 0 <= seconds <= 86_400:
            raise ValueError(f"RetryAfter: seconds must be from 0 to 86400, not {seconds}")
        super().__init__(message)
        self.seconds = seconds


class Release(Exception):
    """Give the job back unfinished: it is handed out again at once, and the attempt isn't counted.

    For work this worker cannot take right now (it is draining, or a local resource is busy).
    """
