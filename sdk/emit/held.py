"""`HeldJob`: the job as a handler sees it while the worker holds it.

`progress`, `log` and `event` never wait on the network: they check what they are given
at once (so a mistake surfaces in the handler, where it was made) and buffer it; the
worker sends the buffer with its next report. They may be called from a plain function
on its thread or from an `async def` alike.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from emit.models import LOG_LEVELS, Guarantee
from emit.payloads import parse_payload

P = TypeVar("P")
M = TypeVar("M")

MAX_MESSAGE_CHARS = 4_096
MAX_PROGRESS_CHARS = 1_024
MAX_SOURCE_CHARS = 256
MAX_JSON_BYTES = 4_096
_LEVEL_ALIASES = {"warning": "warn", "critical": "fatal"}


@dataclass
class Buffered:
    """What the handler reported since the last report was built."""

    progress: dict[str, Any] | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.progress is not None or bool(self.lines) or bool(self.events)


class HeldJob(Generic[P]):
    """One attempt at a job, held by this worker.

    `signal` is set when the worker stops speaking for the attempt: the job was cancelled
    or finished elsewhere, another worker holds it now, the hold ran out, or the worker is
    shutting down. A plain handler should check it (`job.signal.is_set()`, or wait on it
    in place of `time.sleep`); an `async def` handler is also cancelled. Whatever the
    handler does afterwards is dropped.
    """

    def __init__(
        self,
        *,
        id: str,
        name: str,
        attempt: int,
        payload: P,
        space: str,
        guarantee: Guarantee = "at_least_once",
        traceparent: str | None = None,
        max_attempts: int | None = None,
        failures: int | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.attempt = attempt
        self.payload = payload
        self.space = space
        self.guarantee: Guarantee = guarantee
        """`at_most_once`: once the handler has started, the worker never gives the job back."""
        self.traceparent = traceparent
        """The producer's W3C trace context, if the job has one. With OpenTelemetry installed,
        the worker runs the handler in a span whose parent it names (`emit.tracing`)."""
        self.max_attempts = max_attempts
        """Failed attempts the job may have before it fails for good (None: not known)."""
        self.failures = failures
        """Attempts of it that failed before this one (None: not known). Releases and lost
        leases of at-least-once jobs are not failures, so this can be below `attempt - 1`."""
        self.signal = threading.Event()
        self.stop_reason: str | None = None
        """Why `signal` was set: `finished` (cancelled, or finished elsewhere), `stale`,
        `not_running`, `not_found`, `lease_expired` or `shutdown`."""
        self._lock = threading.Lock()
        self._buffer = Buffered()

    def __repr__(self) -> str:
        return f"HeldJob(id={self.id!r}, name={self.name!r}, attempt={self.attempt})"

    def payload_as(self, model: type[M]) -> M:
        """The payload as `model`, a pydantic model (`model_validate`) or a dataclass (made
        from its fields); its error (pydantic's `ValidationError`, a `TypeError`) if it
        does not fit. A task's handler is given its payload so already (`emit.tasks`)."""
        return parse_payload(model, self.payload)

    @property
    def last_try(self) -> bool:
        """Whether a failure now fails the job for good (no attempts left after this one);
        False when the service did not say how many it has."""
        if self.max_attempts is None or self.failures is None:
            return False
        return self.failures + 1 >= self.max_attempts

    def progress(self, percent: float, message: str | None = None) -> None:
        """How far along it is (0 to 100) and a short message; only the latest is kept."""
        if isinstance(percent, bool) or not isinstance(percent, int | float) or not 0 <= percent <= 100:
            raise ValueError(f"progress: percent must be a number from 0 to 100, not {percent!r}")
        shown: dict[str, Any] = {"percent": percent}
        if message is not None:
            shown["message"] = str(message)[:MAX_PROGRESS_CHARS]
        with self._lock:
            self._buffer.progress = shown

    def log(self, level: str, message: str, *, source: str | None = None, metadata: Any = None) -> None:
        """A log line: `level` is trace, debug, info, warn, error or fatal. A message over
        4 KiB is cut; metadata is any JSON up to 4 KiB."""
        name = _LEVEL_ALIASES.get(level.lower(), level.lower())
        if name not in LOG_LEVELS:
            raise ValueError(f"log: level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
        line: dict[str, Any] = {"level": name.upper(), "message": str(message)[:MAX_MESSAGE_CHARS]}
        if source is not None:
            line["source"] = str(source)[:MAX_SOURCE_CHARS]
        if metadata is not None:
            _check_json("log: metadata", metadata)
            line["metadata"] = metadata
        with self._lock:
            self._buffer.lines.append(line)

    def event(self, data: Any) -> None:
        """An event to keep with the job, in order: any JSON up to 4 KiB."""
        if data is None:
            raise ValueError("event: must not be None")
        _check_json("event", data)
        with self._lock:
            self._buffer.events.append(data)

    def pending(self) -> bool:
        """Whether anything is buffered (the worker's side)."""
        with self._lock:
            return bool(self._buffer)

    def take(self) -> Buffered:
        """Everything buffered, leaving the buffer empty (the worker's side)."""
        with self._lock:
            taken, self._buffer = self._buffer, Buffered()
        return taken

    def stop(self, reason: str) -> None:
        """Tell the handler to stop (the worker's side); the first reason sticks."""
        if not self.signal.is_set():
            self.stop_reason = reason
            self.signal.set()


def _check_json(what: str, value: Any) -> None:
    try:
        size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode())
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what}: must be JSON ({exc})") from None
    if size > MAX_JSON_BYTES:
        raise ValueError(f"{what}: must be at most {MAX_JSON_BYTES} bytes of JSON, not {size}")
