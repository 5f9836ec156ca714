"""Checking that a callback came from emit: the `Emit-Signature` header.

The header reads `t=<Unix ms>,v1=<hex>`, the HMAC-SHA256 of `"<t>.<raw body>"` keyed
with the space's webhook secret. Verify against the body exactly as it arrived (bytes,
before any JSON parsing), since re-serializing changes it. A `t` further than the
tolerance from now is refused, so a captured request cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from datetime import datetime

from emit.units import Duration, duration_ms, instant_ms

DEFAULT_TOLERANCE_S = 300.0


def verify_signature(
    secret: str | bytes,
    header: str | None,
    body: str | bytes,
    tolerance: Duration = DEFAULT_TOLERANCE_S,
    *,
    now: datetime | None = None,
) -> bool:
    """Whether `header` signs `body` with `secret`, at a time within `tolerance` (a
    timedelta, or seconds) of `now` (an aware datetime; the real time by default).

    Never raises for a bad header: a missing, malformed, stale or forged one is False.
    The comparison takes the same time however much of the signature matches.
    """
    if not header or not secret:
        return False
    timestamp, candidates = _parse(header)
    if timestamp is None or not candidates:
        return False
    now_ms = time.time_ns() // 1_000_000 if now is None else instant_ms(now, "now")
    if abs(now_ms - timestamp) > duration_ms(tolerance, "tolerance"):
        return False
    expected = _digest(secret, timestamp, body).encode()
    matched = False
    for candidate in candidates:  # every one is compared: no early exit to time
        matched |= hmac.compare_digest(expected, candidate.encode())
    return matched


def sign(secret: str | bytes, body: str | bytes, *, now: datetime | None = None) -> str:
    """The `Emit-Signature` header emit sends with `body` at `now` (an aware datetime; the
    real time by default): for testing a receiver."""
    timestamp = time.time_ns() // 1_000_000 if now is None else instant_ms(now, "now")
    return f"t={timestamp},v1={_digest(secret, timestamp, body)}"


def _digest(secret: str | bytes, timestamp: int, body: str | bytes) -> str:
    key = secret.encode() if isinstance(secret, str) else secret
    raw = body.encode() if isinstance(body, str) else body
    return hmac.new(key, f"{timestamp}.".encode() + raw, hashlib.sha256).hexdigest()


def _parse(header: str) -> tuple[int | None, list[str]]:
    """`t` and every `v1` in the header; other schemes are ignored, for signatures to come."""
    timestamp: int | None = None
    candidates: list[str] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isascii() and value.isdigit() and timestamp is None:
            timestamp = int(value)
        elif name == "v1" and value:
            candidates.append(value.lower())
    return timestamp, candidates
