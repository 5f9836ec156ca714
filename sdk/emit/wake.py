"""The worker's wake: hear of work over the service's WebSocket instead of holding a long poll.

A claim's answer says where to listen (`wakeUrl`). The worker connects there with its
token, sends `{"action": "listen", "space", "names"}` (32 names a message), and is sent
`{"type": "work", "space", "name"}` when a job of those names may have become claimable;
it then claims. While it listens it claims only on a hint, at once while claims bring
work, and anyway every `CLAIM_EVERY_S` in case a hint was lost. A connection that breaks
is made again, with backoff; meanwhile, and wherever the WebSocket cannot be had (no
`wakeUrl`, the connection refused, the `websockets` package missing: `pip install
'emit-sdk[wake]'`), the worker long-polls as it always did.

The connection sends `{"action": "ping"}` every `KEEPALIVE_S` (API Gateway closes one idle
for 10 minutes and answers WebSocket pings without counting them) and nothing else.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Sequence
from typing import Any

from emit.clock import Clock
from emit.transport import Backoff

try:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus, WebSocketException
except ImportError:  # the `wake` extra is not installed: the worker long-polls
    connect = None  # type: ignore[assignment,misc]

    class WebSocketException(Exception):  # type: ignore[no-redef]
        """Never raised: nothing connects without the package."""

    InvalidStatus = WebSocketException  # type: ignore[assignment,misc]

log = logging.getLogger("emit.wake")

PROTOCOL = "emit.v1"
CLAIM_EVERY_S = 60.0
"""While listening, the worker claims at least this often, hint or not."""
SOON_AFTER_LISTENING_S: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
"""Claims made anyway this long after it first listens: a job whose change the service saw
before that (say, one the worker's first claims failed, to be retried a second later)
and that becomes claimable soon after was hinted to nobody (the service puts such hints
off for up to 15 s, for those listening then). Six claims a worker's run; after a break
in listening, the regular claim covers it."""
HINTED_WAIT_S = 0.5
"""A claim made on a hint waits this long for the job (the service's ready index may trail
the hint by a moment: on AWS it looks at once, then 250 ms and 500 ms on); it answers as
soon as it has one. Every worker listening to the name is hinted, and all but the one that
gets the job wait this long for nothing: short, so a hint costs them little."""
KEEPALIVE_S = 480.0
"""A `ping` this often keeps API Gateway from closing the connection (idle after 10 minutes)."""
LISTEN_NAMES = 32
"""Names one listen message may carry."""
MOST_NAMES = 256
"""Names one connection may listen to in all; a worker of more long-polls."""
OPEN_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 15.0
"""How long `Listener.close` waits for the listener to end once cancelled: longer than the
closing handshake websockets waits for (its `close_timeout`, 10 s), and a bound all the
same, so a listener that does not end never keeps the worker from releasing its jobs and
exiting."""
RECONNECT = Backoff(first=0.5, most=30.0)


def available() -> bool:
    """Whether this Python can listen at all (the `websockets` package is there)."""
    return connect is not None


class Refused(Exception):
    """The service will not have this worker listen (its token, its names): long-poll."""


class Listener:
    """Listens to `names` of `space` at `url` until closed, connecting again whenever the
    connection breaks; `hinted` is set by each hint (and once each time it starts
    listening, since hints may have been missed meanwhile), `changed` whenever it starts or
    stops listening."""

    def __init__(self, url: str, authorization: str, space: str, names: Sequence[str], clock: Clock) -> None:
        self.url = url
        self.authorization = authorization
        self.space = space
        self.names = sorted(set(names))
        self.clock = clock
        self.hinted = asyncio.Event()
        self.changed = asyncio.Event()
        self.listening = False
        self.listened = 0
        """How many times it has started listening (a first time, then once per reconnect)."""
        self.listened_at: float | None = None
        """When it first started listening (the clock's `monotonic`)."""
        self.refused: str | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="emit-wake")

    async def close(self) -> None:
        """Stop listening: cancel the listener and wait, bounded, for it to end.

        `asyncio.wait` rather than awaiting the task: its exception is no concern here, and
        a cancellation of `close` itself is not swallowed with the listener's."""
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
            if not task.done():
                log.warning(
                    "the wake listener did not end within %.0fs of being closed; leaving it", CLOSE_TIMEOUT_S
                )
            elif not task.cancelled():
                task.exception()  # retrieved, so asyncio does not report it: a failure meant long polls
        self._set(listening=False)

    def _set(self, *, listening: bool) -> None:
        if listening != self.listening:
            self.listening = listening
            self.changed.set()

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                await self._listen()
                failures = 0
            except Refused as exc:
                self.refused = str(exc)
                log.warning("not listening for work (%s): long-polling instead", exc)
                self._set(listening=False)
                return
            except (OSError, TimeoutError, WebSocketException, ValueError) as exc:
                failures += 1
                log.info("wake connection lost (%s: %s); long-polling meanwhile", type(exc).__name__, exc)
            self._set(listening=False)
            await self.clock.wait(RECONNECT.wait(max(failures, 1)))

    async def _listen(self) -> None:
        assert connect is not None
        try:
            socket = await connect(
                self.url,
                subprotocols=[PROTOCOL],  # type: ignore[list-item]
                additional_headers={"Authorization": self.authorization},
                compression=None,
                ping_interval=None,
                open_timeout=OPEN_TIMEOUT_S,
                max_size=128 * 1024,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            if 400 <= status < 500:
                raise Refused(
                    f"the handshake was answered {status}: {bytes(exc.response.body).decode()}"
                ) from None
            raise
        async with socket:
            for start in range(0, len(self.names), LISTEN_NAMES):
                names = self.names[start : start + LISTEN_NAMES]
                await socket.send(json.dumps({"action": "listen", "space": self.space, "names": names}))
                answer = await self._answer(socket)
                if answer.get("type") != "listening":
                    raise Refused(f"{answer.get('code')}: {answer.get('message')}")
            self.listened += 1
            if self.listened_at is None:
                self.listened_at = self.clock.monotonic()
            self._set(listening=True)
            self.hinted.set()  # whatever was hinted while it was not listening
            keepalive = asyncio.create_task(self._keepalive(socket), name="emit-wake-keepalive")
            try:
                async for message in socket:
                    self._heard(message)
            finally:
                keepalive.cancel()

    async def _answer(self, socket: Any) -> dict[str, Any]:
        """The answer to a listen (hints that come first are heard on the way).

        `asyncio.timeout`, not `asyncio.wait_for`: on Python 3.11, a `wait_for` cancelled
        just as its answer arrives returns the answer and drops the cancellation (CPython
        gh-86296). A worker shut down then was left listening for good, `close` waiting on
        it, its jobs never released."""
        while True:
            async with asyncio.timeout(OPEN_TIMEOUT_S):
                message = await socket.recv()
            found = _parsed(message)
            if found.get("type") in ("listening", "error"):
                return found
            self._heard(message)

    def _heard(self, message: Any) -> None:
        found = _parsed(message)
        if (
            found.get("type") == "work"
            and found.get("space") == self.space
            and found.get("name") in self.names
        ):
            self.hinted.set()

    async def _keepalive(self, socket: Any) -> None:
        while True:
            await self.clock.wait(KEEPALIVE_S)
            await socket.send('{"action":"ping"}')


def _parsed(message: Any) -> dict[str, Any]:
    try:
        found = json.loads(message)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


class Waking:
    """What a worker's claims wait for: the long poll as ever, or, while it listens, a hint
    (or the regular claim's time). `before_claim` waits as it should and answers the
    claim's wait; `after_claim` tells it what the claim brought."""

    def __init__(
        self,
        *,
        space: str | None,
        names: Sequence[str] | None,
        authorization: str,
        clock: Clock,
        poll_wait: float,
    ) -> None:
        self.space = space
        self.names = list(names or ())
        self.authorization = authorization
        self.clock = clock
        self.poll_wait = poll_wait
        self.listener: Listener | None = None
        self._idle = False
        self._last_claim = clock.monotonic()

    @property
    def listening(self) -> bool:
        return self.listener is not None and self.listener.listening

    async def before_claim(self, stopping: asyncio.Event) -> float | None:
        """The wait of the next claim, after waiting for a reason to make it (None: stopping)."""
        listener = self.listener
        if listener is None or not listener.listening:
            return self.poll_wait
        if not self._idle:
            listener.hinted.clear()
            return 0.0
        left = self._next_claim(listener) - self.clock.monotonic()
        listener.changed.clear()
        if not listener.hinted.is_set() and left > 0:
            await _first(
                listener.hinted.wait(), listener.changed.wait(), stopping.wait(), self.clock.wait(left)
            )
        if stopping.is_set():
            return None
        if not listener.listening:
            return self.poll_wait
        hinted = listener.hinted.is_set()
        listener.hinted.clear()
        return HINTED_WAIT_S if hinted else 0.0

    def _next_claim(self, listener: Listener) -> float:
        """When the next claim is due without a hint: a minute after the last, or sooner
        just after the listener first listened (`SOON_AFTER_LISTENING_S`)."""
        due = self._last_claim + CLAIM_EVERY_S
        if listener.listened_at is not None:
            soon = [listener.listened_at + s for s in SOON_AFTER_LISTENING_S]
            due = min([due] + [at for at in soon if at > self._last_claim])
        return due

    def after_claim(self, *, asked: int, got: int, wake_url: str | None) -> None:
        self._last_claim = self.clock.monotonic()
        self._idle = got < asked
        if self.listener is None and wake_url and self._can_listen():
            self.listener = Listener(wake_url, self.authorization, str(self.space), self.names, self.clock)
            self.listener.start()

    def _can_listen(self) -> bool:
        if not available():
            log.info("the websockets package is missing (pip install 'emit-sdk[wake]'): long-polling")
            return False
        return bool(self.space) and 1 <= len(set(self.names)) <= MOST_NAMES

    async def close(self) -> None:
        if self.listener is not None:
            await self.listener.close()


async def _first(*waits: Awaitable[Any]) -> None:
    """Wait for the first of several awaitables, and cancel the rest."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
