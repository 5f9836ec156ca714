"""The worker's wake against a real `emit dev`: it listens and claims on hints, makes a broken
connection again, and long-polls where the WebSocket cannot be had (no `wakeUrl`, the
connection refused, the `websockets` package missing).

The worker's regular claim (`CLAIM_EVERY_S`) is put off for an hour here, so a job it claims
while listening was claimed on a hint. The connection goes through a TCP relay the test can
refuse, cut and open again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from emit import Emit, HeldJob, wake
from emit.clock import SYSTEM
from emit.transport import Backoff

from tests.dev import DevServer
from tests.sdk.support import FAST, eventually, running
from tests.support import PATIENCE_S


class Relay:
    """A TCP relay on 127.0.0.1 to `upstream`. Until first `open()`ed, nothing listens on its
    port (a connection is refused); `cut()` ends every connection and drops those that come
    until it is `open()`ed again."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.accepted = 0
        self.passing = False
        self._server: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def open(self) -> None:
        self.passing = True
        if self._server is None:
            self._server = socket.create_server(("127.0.0.1", self.port))
            self._server.settimeout(0.2)
            threading.Thread(target=self._accept, args=(self._server,), daemon=True).start()

    def cut(self) -> None:
        self.passing = False
        with self._lock:
            cut, self._open = self._open, []
        for sock in cut:
            _close(sock)

    def close(self) -> None:
        self.cut()
        server, self._server = self._server, None
        if server is not None:
            server.close()

    def _accept(self, server: socket.socket) -> None:
        while self._server is server:
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self.passing:
                _close(client)
                continue
            upstream = socket.create_connection(self.upstream)
            with self._lock:
                self.accepted += 1
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class WakeAt(httpx.BaseTransport):
    """Passes every request on; claim answers say `wakeUrl` is `url` (None: leave it out),
    and each claim's `waitMs` is kept."""

    def __init__(self, url: str | None) -> None:
        self.inner = httpx.HTTPTransport()
        self.url = url
        self.waits: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if not request.url.path.endswith("/jobs:claim") or response.status_code != 200:
            return response
        self.waits.append(json.loads(request.content)["waitMs"])
        answer = json.loads(response.read())
        answer.pop("wakeUrl", None)
        if self.url is not None:
            answer["wakeUrl"] = self.url
        return httpx.Response(200, json=answer)


@pytest.fixture(autouse=True)
def hints_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """While listening, a worker claims only on a hint (its regular claim is an hour away),
    and it connects again quickly."""
    monkeypatch.setattr(wake, "CLAIM_EVERY_S", 3_600.0)
    monkeypatch.setattr(wake, "SOON_AFTER_LISTENING_S", ())
    monkeypatch.setattr(wake, "RECONNECT", Backoff(first=0.05, most=0.2))


@pytest.fixture
def relay(dev: DevServer) -> Iterator[Relay]:
    found = next(line for line in dev.output if "wake on ws://" in line)
    host, port = found.rsplit("ws://", 1)[1].strip().rsplit(":", 1)
    made = Relay((host, int(port)))
    yield made
    made.close()


def only_hints(monkeypatch: pytest.MonkeyPatch) -> None:
    """A listening worker then claims only on a hint: its regular and soon-after-listening
    claims are put past any test's patience, so a job it gets, a hint brought."""
    monkeypatch.setattr(wake, "CLAIM_EVERY_S", 100 * PATIENCE_S)
    monkeypatch.setattr(wake, "SOON_AFTER_LISTENING_S", ())


def worker_for(client: Emit, done: list[str], names: list[str] | None = None) -> Any:
    @client.worker(names=names or ["w"], **FAST)
    def handle(job: HeldJob[Any]) -> str:
        done.append(job.id)
        return "ok"

    return handle


def test_a_listening_worker_claims_on_a_hint(client: Emit, monkeypatch: pytest.MonkeyPatch) -> None:
    only_hints(monkeypatch)
    done: list[str] = []
    worker = worker_for(client, done)
    with running(worker):
        eventually(lambda: worker.listening)
        for _ in range(3):
            job = client.jobs.create("w").id
            eventually(lambda job=job: job in done)
        assert worker.listening


def test_a_job_that_becomes_claimable_soon_after_the_worker_listens_is_claimed(
    client: Emit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its change came before anyone listened, so nobody was hinted when its delay ended: the
    worker's claims soon after it first listens find it."""
    monkeypatch.setattr(wake, "SOON_AFTER_LISTENING_S", (0.5, 1.0, 2.0, 4.0, 8.0))
    job = client.jobs.create("w", delay=timedelta(seconds=2)).id
    done: list[str] = []
    worker = worker_for(client, done)
    with running(worker):
        eventually(lambda: job in done)
        assert worker.listening


def test_a_worker_listens_to_each_of_its_names(client: Emit, monkeypatch: pytest.MonkeyPatch) -> None:
    only_hints(monkeypatch)
    names = [f"n{i}" for i in range(32)]
    done: list[str] = []
    worker = worker_for(client, done, names)
    with running(worker):
        eventually(lambda: worker.listening)
        job = client.jobs.create("n31").id
        eventually(lambda: job in done)


def test_a_broken_connection_is_made_again_and_a_refused_one_long_polls_meanwhile(
    dev: DevServer, space: str, relay: Relay
) -> None:
    routed = WakeAt(relay.url)
    client = Emit(dev.url, dev.token, space, http_transport=routed)
    done: list[str] = []
    worker = worker_for(client, done)
    with running(worker):
        # Refused: the worker long-polls, and still gets its work.
        first = client.jobs.create("w").id
        eventually(lambda: first in done)
        assert not worker.listening
        assert set(routed.waits) == {round(FAST["poll_wait"] * 1000)}
        # The WebSocket can be had: it listens, and claims on hints.
        relay.open()
        eventually(lambda: worker.listening)
        second = client.jobs.create("w").id
        eventually(lambda: second in done)
        # Cut: it long-polls, connects again, and hears of work again.
        relay.cut()
        eventually(lambda: not worker.listening)
        relay.open()
        eventually(lambda: worker.listening and relay.accepted >= 2)
        third = client.jobs.create("w").id
        eventually(lambda: third in done)
    client.close()


def test_without_a_wake_url_the_worker_long_polls(dev: DevServer, space: str) -> None:
    routed = WakeAt(None)
    client = Emit(dev.url, dev.token, space, http_transport=routed)
    done: list[str] = []
    worker = worker_for(client, done)
    with running(worker):
        jobs = [client.jobs.create("w").id for _ in range(2)]
        eventually(lambda: set(jobs) <= set(done))
        assert not worker.listening
    assert set(routed.waits) == {round(FAST["poll_wait"] * 1000)}, "every claim a long poll"
    client.close()


def test_without_the_websockets_package_the_worker_long_polls(
    dev: DevServer, space: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wake, "connect", None)
    assert not wake.available()
    routed = WakeAt(f"ws://127.0.0.1:{dev.url.rsplit(':', 1)[1]}")
    client = Emit(dev.url, dev.token, space, http_transport=routed)
    done: list[str] = []
    worker = worker_for(client, done)
    with running(worker):
        job = client.jobs.create("w").id
        eventually(lambda: job in done)
        assert not worker.listening
    client.close()


def test_a_worker_of_every_name_long_polls(client: Emit) -> None:
    """A listen names its names; a worker of every name of its space has none to name."""
    done: list[str] = []

    @client.worker(**FAST)
    def handle(job: HeldJob[Any]) -> str:
        done.append(job.id)
        return "ok"

    with running(handle):
        job = client.jobs.create("anything").id
        eventually(lambda: job in done)
        assert not handle.listening


class Answering:
    """A WebSocket connection whose listen is answered when the test says; nothing more
    comes on it after that."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.left = False
        """Whether the listener has let go of it (left its `async with`)."""

    async def __aenter__(self) -> Answering:
        return self

    async def __aexit__(self, *_: object) -> None:
        self.left = True

    async def send(self, message: str) -> None:
        self.asked.set()

    async def recv(self) -> str:
        return await self.answer

    def __aiter__(self) -> Answering:
        return self

    async def __anext__(self) -> str:
        never: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        return await never


def test_a_listener_closed_just_as_its_listen_is_answered_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's shutdown closes its listener whatever the listener is doing. Closed the
    moment the listen's answer came in, it once went on listening (on Python 3.11 the
    `asyncio.wait_for` around the answer dropped the cancellation), and the worker, waiting
    for it, never released its jobs nor exited (tests/sdk/test_shutdown.py, under load)."""

    async def scenario() -> None:
        connection = Answering()

        async def connect(*_: Any, **__: Any) -> Answering:
            return connection

        monkeypatch.setattr(wake, "connect", connect)
        listener = wake.Listener("ws://wake.invalid", "Bearer token", "space", ["w"], SYSTEM)
        listener.start()
        await connection.asked.wait()
        connection.answer.set_result(json.dumps({"type": "listening"}))
        await asyncio.sleep(0)  # the answer is in; the listener has yet to take it
        await listener.close()
        assert connection.left, "the listener went on listening after close"
        assert not listener.listening

    asyncio.run(scenario())
