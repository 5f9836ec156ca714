"""A real `emit dev` for tests: started in a process of its own on a free port, and stopped.

    with start_dev() as dev:
        client = dev.client(space="billing")
        created = client.jobs.create("charge-invoice", {"invoiceId": "inv_1"})
        [job] = work(client, charge_invoice, created.id)
        assert job.status == "completed"

`emit dev` is the service's, not the SDK's: the environment needs `emit-service[local]`
installed beside the SDK (README, Testing your workers). Its own process, so its embedded
DynamoDB and S3 (moto's, which patches botocore in the process that runs it) never touch
the test's own AWS clients.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from emit.client import Emit
from emit.models import Job
from emit.worker import Handler, Worker

START_TIMEOUT_S = 60.0
"""Starting takes a few seconds (importing the service and moto); a loaded CI machine, more."""
STOP_TIMEOUT_S = 10.0
FINISHED = frozenset({"completed", "failed", "cancelled", "stalled"})
CLOCK_PATH = "/_dev/clock"
"""`emit dev --test-clock`'s (devserver/clock.py): GET reads it, POST `{"advanceMs": N}` moves it."""
_LISTENING = re.compile(r"listening on (http://\S+)")
_WAKE = re.compile(r"wake on (ws://\S+)")


class DevServerError(RuntimeError):
    """`emit dev` could not be started; its output says why."""


class DevServer:
    """A running `emit dev`: its `url`, an admin `token` for every space, and clients on it."""

    def __init__(self, url: str, token: str, process: subprocess.Popen[str], output: deque[str]) -> None:
        self.url = url
        self.token = token
        self.process = process
        self.output = output
        """Its last lines of output (start-up, errors, and requests with `--verbose`)."""
        self.wake_url: str | None = None
        self.test_clock = False
        """Whether it runs a test clock, moved by `advance` (`start_dev_server(test_clock=True)`)."""
        self._reader: threading.Thread | None = None
        self._clients: list[Emit] = []

    def __repr__(self) -> str:
        return f"<emit dev {self.url}>"

    @property
    def environment(self) -> dict[str, str]:
        """`EMIT_URL` and `EMIT_TOKEN` for it: what `Emit()` and `@emit.worker` read."""
        return {"EMIT_URL": self.url, "EMIT_TOKEN": self.token}

    def client(self, space: str | None = None, **options: Any) -> Emit:
        """An `Emit` on this server with its admin token, bound to `space` (by default a new
        one, `new_space()`); closed when the server stops, if not before."""
        client = Emit(self.url, self.token, space or new_space(), **options)
        self._clients.append(client)
        return client

    def now(self) -> datetime:
        """The server's time (its test clock's, when it has one), in UTC."""
        return self._clock("GET")

    def advance(self, by: timedelta) -> datetime:
        """Move the server's test clock `by` ahead (it never goes back), and say its time.

        Every time the service decides by moves at once: a job delayed an hour, a backoff,
        a `RetryAfter`, a schedule's next run, a lease or a deadline. Claims see the new
        time at once; what the service's clock does unasked (a lease ended, a deadline
        passed, a schedule's job made) happens at its next tick, within a second. The
        session's tests share the server, and so its time: a test that advances it moves
        it for those after. Waits are still real (a long poll waits its seconds), and the
        SDK's own clock is apart: a held job's renewals are by real time, so advancing past
        a running job's lease ends the hold (as a lost worker would)."""
        if by < timedelta(0):
            raise ValueError("advance: the clock only goes forward")
        return self._clock("POST", {"advanceMs": round(by / timedelta(milliseconds=1))})

    def _clock(self, method: str, body: dict[str, Any] | None = None) -> datetime:
        if not self.test_clock:
            raise RuntimeError("this emit dev has no test clock (started without --test-clock)")
        answer = httpx.request(
            method,
            f"{self.url}{CLOCK_PATH}",
            json=body,
            headers={"authorization": f"Bearer {self.token}"},
            timeout=STOP_TIMEOUT_S,
        )
        answer.raise_for_status()
        return datetime.fromtimestamp(answer.json()["nowMs"] / 1000, UTC)

    def stop(self) -> None:
        """Stop the server (and close the clients it made); safe to call twice."""
        for client in self._clients:
            client.close()
        self._clients.clear()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._reader is not None:
            self._reader.join(STOP_TIMEOUT_S)


def new_space(prefix: str = "test") -> str:
    """A space name no other test uses: spaces need no creating, so each test can have its
    own and see only its own jobs."""
    return f"{prefix}-{secrets.token_hex(4)}"


def start_dev_server(
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    test_clock: bool = True,
    timeout: float = START_TIMEOUT_S,
) -> DevServer:
    """Start `emit dev` on 127.0.0.1 and a free port (its wake WebSocket on another), with an
    admin token of its own, and wait until it listens. `args` go to `emit dev` (`--verbose`,
    `--dynamodb-endpoint URL`); `env` is its environment (by default this process's, where
    `EMIT_*` settings apply to it as they would to `emit dev` itself). With `test_clock`,
    its time can be moved ahead (`DevServer.advance`). Stop it with `stop()`."""
    token = f"test-{secrets.token_urlsafe(18)}"
    environment = dict(os.environ if env is None else env)
    for variable in ("EMIT_URL", "EMIT_TOKEN", "EMIT_SPACE"):  # the SDK's, not the server's
        environment.pop(variable, None)
    environment |= {"EMIT_DEV_TOKEN": token, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "emit.cli", "dev", "--host", "127.0.0.1", "--port", "0"]
    command += ["--test-clock", *args] if test_clock else list(args)
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environment,
    )
    output: deque[str] = deque(maxlen=500)
    assert process.stdout is not None
    ready = threading.Event()
    found: dict[str, str] = {}

    def read() -> None:  # all along, so a full pipe never blocks the server
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip("\n"))
            if (wake := _WAKE.search(line)) is not None:
                found["wake"] = wake.group(1)
            if (listening := _LISTENING.search(line)) is not None:
                found["url"] = listening.group(1)
                ready.set()
        ready.set()  # it exited

    reader = threading.Thread(target=read, name="emit-dev-output", daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while not ready.wait(0.1) and time.monotonic() < deadline:
        pass
    if "url" not in found:
        process.kill()
        process.wait()
        reader.join(STOP_TIMEOUT_S)
        said = "\n".join(output)
        why = "exited" if process.returncode not in (None, -9) else f"did not listen within {timeout:.0f}s"
        raise DevServerError(f"emit dev {why} ({' '.join(command)}):\n{said}")
    server = DevServer(found["url"], token, process, output)
    server.wake_url, server.test_clock = found.get("wake"), test_clock
    server._reader = reader
    return server


@contextmanager
def start_dev(
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    test_clock: bool = True,
    timeout: float = START_TIMEOUT_S,
) -> Iterator[DevServer]:
    """`start_dev_server`, stopped at the block's end."""
    server = start_dev_server(args, env=env, test_clock=test_clock, timeout=timeout)
    try:
        yield server
    finally:
        server.stop()


def work(
    client: Emit,
    handler: Handler | Worker,
    *job_ids: str,
    names: Sequence[str] | None = None,
    concurrency: int | None = None,
    timeout: float = 60.0,
) -> list[Job]:
    """Run `handler` as a worker on `client` until every job of `job_ids` has finished
    (completed, failed for good, cancelled or stalled), then stop it; the jobs as they
    ended, in the order given.

    `handler` is a plain function, an `async def`, or a worker made with `@emit.worker`
    or `client.worker` (its handler, names and concurrency are taken, on this `client`).
    `names` (by default the worker's, or every name) are the jobs it claims. A job
    still unfinished after `timeout` seconds raises `TimeoutError`; so does a worker that
    stopped on its own. A job failed with attempts left is retried after its backoff, and
    waited for."""
    if isinstance(handler, Worker):
        names = handler.names if names is None else names
        concurrency = handler.concurrency if concurrency is None else concurrency
        handler = handler.handler
    worker = Worker(handler, client=client, names=names, concurrency=concurrency or 1)
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            worker.run()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=serve, name="emit-testing-worker", daemon=True)
    thread.start()
    try:
        return _finished(client, job_ids, timeout, alive=thread.is_alive)
    finally:
        worker.stop()  # once: no more claims, the handlers finish ...
        worker.stop()  # ... twice: the idle long poll is let go at once
        thread.join(STOP_TIMEOUT_S)
        if failure:
            raise failure[0]


def _finished(
    client: Emit, job_ids: Sequence[str], timeout: float, *, alive: Callable[[], bool]
) -> list[Job]:
    deadline = time.monotonic() + timeout
    done: dict[str, Job] = {}
    while True:
        for job_id in job_ids:
            if job_id not in done and (job := client.jobs.get(job_id)).status in FINISHED:
                done[job_id] = job
        if len(done) == len(job_ids):
            return [done[job_id] for job_id in job_ids]
        if not alive():
            raise TimeoutError("the worker stopped before the jobs finished")
        if time.monotonic() > deadline:
            waiting = {j: client.jobs.get(j).status for j in job_ids if j not in done}
            raise TimeoutError(f"jobs not finished within {timeout:.0f}s: {waiting}")
        time.sleep(0.05)
