"""Speaking for the attempts a worker holds: renewals, progress, lines, events, endings.

One reporter serves every job a worker holds and sends what they have to say together,
in one `jobs:report` request per round:

- **Renewal.** Each hold is touched at half its lease (`touch` with the worker's
  `leaseMs`, or `{}` for the job's own timeout). A hold with no successful renewal by its
  lease's end is taken as lost.
- **Batching.** Progress, lines and events wait in the job's buffer for the next round
  (every `interval` seconds while there is any), riding in the same request as the
  renewals and endings that are due.
- **Retrying.** A request without an answer is sent again, the same reports, after a
  backoff; a report that raced a change is sent again as it was.
- **Falling silent.** Once an answer says `STALE`, `ALREADY_FINISHED`, `NOT_RUNNING` or
  `NOT_FOUND`, the attempt is not this worker's any more: nothing more is said for it,
  and the handler is told to stop.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from emit.clock import SYSTEM, Clock
from emit.errors import EmitError, InvalidArgument, Unauthenticated
from emit.held import HeldJob
from emit.models import Outcome
from emit.transport import Backoff

log = logging.getLogger("emit.worker")

# Answers meaning another worker, a cancel, or the clock has the job now.
_LOST = {"stale", "already_finished", "not_running", "not_found"}
_STOP_REASON = {"already_finished": "finished"}
_ENDINGS = ("complete", "fail", "release")
MAX_REPORTS = 1_000
MAX_REQUEST_BYTES = 5 * 1024 * 1024
"""Under the 6 MB a Lambda function may be sent, whatever else the request carries."""


@dataclass(eq=False)  # two reports may read alike; each is answered on its own
class Sent:
    """A report built for a hold and not yet answered."""

    body: dict[str, Any]
    touch: bool = False
    ending: bool = False


@dataclass
class Hold:
    """The worker's side of one attempt: when to renew, and what is still to be said."""

    job: HeldJob[Any]
    lease: float
    """Seconds a renewal holds the job for."""
    touch: dict[str, Any]
    next_touch: float
    deadline: float
    """Monotonic time the hold ends unless renewed."""
    on_lost: Callable[[str], None]
    ending: dict[str, Any] | None = None
    ended: bool = False
    done: bool = False
    outbox: list[Sent] = field(default_factory=list)
    last_sent: float = 0.0

    @property
    def base(self) -> dict[str, Any]:
        return {"id": self.job.id, "attempt": self.job.attempt}


Send = Callable[[list[dict[str, Any]]], Awaitable[list[Outcome]]]
"""One `jobs:report` request, awaited: the blocking client's on a thread, the async one's as is."""


class Reporter:
    def __init__(
        self,
        send: Send,
        *,
        interval: float,
        backoff: Backoff | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        self._send_reports = send
        self._interval = interval
        self._clock = clock
        self._backoff = backoff or Backoff(first=0.5, most=5.0)
        self._holds: dict[tuple[str, int], Hold] = {}
        self._wake = asyncio.Event()
        self._closing = False
        self._failures = 0
        self._retry_at = 0.0

    # -- what the worker tells it --------------------------------------------------

    def add(self, hold: Hold) -> None:
        self._holds[(hold.job.id, hold.job.attempt)] = hold
        self._wake.set()

    def end(self, hold: Hold, ending: dict[str, Any]) -> None:
        """Queue the attempt's last word (complete, fail or release); the first one counts."""
        if hold.done or hold.ended:
            return
        hold.ended = True
        hold.ending = ending
        self._wake.set()

    def holds(self) -> list[Hold]:
        return list(self._holds.values())

    def close(self) -> None:
        """Finish: `run` returns once every queued ending has been answered."""
        self._closing = True
        self._wake.set()

    # -- the loop -------------------------------------------------------------------

    async def run(self) -> None:
        """Report until closed and nothing is left to say."""
        while True:
            self._wake.clear()
            now = self._clock.monotonic()
            self._expire(now)
            if self._closing:
                self._drop_silent()
                if not self._holds:
                    return
            due = [h for h in self._holds.values() if self._due(h, now)] if now >= self._retry_at else []
            if due:
                await self._send(due, now)
                continue
            await self._sleep(self._next_wake(now) - now)

    def _due(self, hold: Hold, now: float) -> bool:
        if hold.outbox or hold.ending is not None or now >= hold.next_touch:
            return True
        return now >= hold.last_sent + self._interval and hold.job.pending()

    def _next_wake(self, now: float) -> float:
        if not self._holds:
            return now + 3600
        wake = min(min(h.next_touch, h.deadline) for h in self._holds.values())
        return max(min(wake, now + self._interval), self._retry_at)

    async def _sleep(self, seconds: float) -> None:
        """Until `seconds` pass on the clock, or something is queued (`_wake`)."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        woken = asyncio.ensure_future(self._wake.wait())
        timer = asyncio.ensure_future(self._clock.wait(seconds))
        try:
            await asyncio.wait([woken, timer], return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            timer.cancel()

    def _expire(self, now: float) -> None:
        for hold in list(self._holds.values()):
            # An attempt with its last word queued is still sent: the server judges it.
            if not hold.ended and now > hold.deadline:
                log.warning("job %s attempt %s: lease ran out before renewal", hold.job.id, hold.job.attempt)
                self._lose(hold, "lease_expired")

    def _drop_silent(self) -> None:
        """On close: holds with nothing left to send are forgotten."""
        for hold in list(self._holds.values()):
            if hold.ending is None and not hold.outbox:
                self._forget(hold)

    # -- building and sending --------------------------------------------------------

    def _build(self, hold: Hold, now: float) -> list[Sent]:
        """Reports saying what the handler buffered: line chunks and events (one a report)
        side by side, progress in the first, and the ending, if any, in the last."""
        data = hold.job.take()
        chunks = [data.lines[i : i + MAX_REPORTS] for i in range(0, len(data.lines), MAX_REPORTS)]
        sent = [Sent(dict(hold.base)) for _ in range(max(1, len(chunks), len(data.events)))]
        first, last = sent[0], sent[-1]
        if data.progress is not None:
            first.body["progress"] = data.progress
        for report, chunk in zip(sent, chunks, strict=False):
            report.body["lines"] = chunk
        for report, event in zip(sent, data.events, strict=False):
            report.body["event"] = event
        if hold.ending is not None:
            last.body.update(hold.ending)
            last.ending = True
            hold.ending = None
        elif now >= hold.next_touch:
            first.body["touch"] = hold.touch
            first.touch = True
        if len(sent) == 1 and first.body.keys() == hold.base.keys():
            return []  # nothing to say after all
        return sent

    async def _send(self, due: list[Hold], now: float) -> None:
        entries: list[tuple[Hold, Sent]] = []
        for hold in due:
            if not hold.outbox:
                hold.outbox = self._build(hold, now)
            hold.last_sent = now
            entries.extend((hold, s) for s in hold.outbox)
        for whole in _chunks(entries):
            chunk = [(h, s) for h, s in whole if not h.done]  # fallen silent since the last chunk
            if not chunk:
                continue
            sent_at = self._clock.monotonic()
            bodies = [s.body for _, s in chunk]
            try:
                outcomes = await self._send_reports(bodies)
            except InvalidArgument as refused:  # every report in the request broke a rule
                outcomes = [Outcome.from_api(_invalid(refused.message)) for _ in chunk]
            except EmitError as exc:
                self._failed(exc)
                return
            self._failures = 0
            for (hold, sent), outcome in zip(chunk, outcomes, strict=True):
                self._answered(hold, sent, outcome, sent_at)

    def _failed(self, exc: EmitError) -> None:
        self._failures += 1
        wait = self._backoff.wait(self._failures)
        level = logging.ERROR if isinstance(exc, Unauthenticated) else logging.WARNING
        log.log(level, "reports not delivered (%s: %s); sending again in %.1fs", exc.code, exc, wait)
        self._retry_at = self._clock.monotonic() + wait

    def _answered(self, hold: Hold, sent: Sent, outcome: Outcome, sent_at: float) -> None:
        if hold.done:
            return
        hold.outbox.remove(sent)
        rejection = outcome.rejection
        if rejection is not None:
            reason = rejection.reason
            if reason in _LOST:
                self._lose(hold, _STOP_REASON.get(reason, reason))
                return
            if reason == "too_many_events":
                log.warning("job %s: %s", hold.job.id, rejection.message)
            else:  # invalid, or a race with another change: none of this report was applied
                self._not_applied(hold, sent, reason, rejection.message)
                return
        if sent.touch:
            hold.next_touch = sent_at + hold.lease / 2
            hold.deadline = sent_at + hold.lease
        if sent.ending:
            self._forget(hold)

    def _not_applied(self, hold: Hold, sent: Sent, reason: str, message: str) -> None:
        if reason == "race":
            hold.outbox.insert(0, sent)  # the same report again: it was not applied
            return
        log.warning("job %s: report refused (%s): %s", hold.job.id, reason, message)
        if sent.touch:  # not renewed: try again soon, but not in a tight loop
            hold.next_touch = self._clock.monotonic() + min(0.5, hold.lease / 4)
        if sent.ending:
            ending = {k: v for k, v in sent.body.items() if k in _ENDINGS}
            if sent.body.keys() == (hold.base | ending).keys():
                log.error("job %s: its outcome was refused; the lease will decide", hold.job.id)
                self._forget(hold)
                return
            # The last word must still be said: alone this time, without what broke a rule.
            hold.outbox.append(Sent(hold.base | ending, ending=True))

    def _lose(self, hold: Hold, reason: str) -> None:
        self._forget(hold)
        hold.job.stop(reason)
        hold.on_lost(reason)

    def _forget(self, hold: Hold) -> None:
        hold.done = True
        hold.outbox.clear()
        hold.ending = None
        self._holds.pop((hold.job.id, hold.job.attempt), None)


def _invalid(message: str) -> dict[str, Any]:
    return {"rejection": {"reason": "INVALID", "message": message}}


def _chunks(entries: list[tuple[Hold, Sent]]) -> list[list[tuple[Hold, Sent]]]:
    """Requests of at most 1,000 reports and about 5 MiB each, in order."""
    chunks: list[list[tuple[Hold, Sent]]] = []
    size = 0
    for entry in entries:
        weight = len(json.dumps(entry[1].body, separators=(",", ":"), ensure_ascii=False))
        if not chunks or len(chunks[-1]) >= MAX_REPORTS or (size + weight > MAX_REQUEST_BYTES and chunks[-1]):
            chunks.append([])
            size = 0
        chunks[-1].append(entry)
        size += weight
    return chunks
