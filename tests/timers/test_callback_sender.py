"""The callback sender: its own work, fed by the stream and the clock through an outbox
(SQS on AWS, emit dev's threads locally), so one space's dead targets hold up no other."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devserver.background import handler
from devserver.gateway import LambdaContext
from shared.callbacks import Due
from shared.clock import ManualClock
from shared.outbox import MAX_MESSAGE, SPACE_SENDS, LocalOutbox, SqsOutbox, due_of, message
from shared.runtime import Runtime
from shared.store import dynamo, keys
from shared.store.port import Snapshot
from tests.support import PATIENCE_S, Api, Background, eventually
from tests.timers.conftest import Receiver
from tests.timers.test_callbacks import Faulty


def finished(api: Api, space: str, callback: str, count: int = 1, **job: Any) -> list[str]:
    """`count` jobs in `space` calling back `callback`, claimed and completed."""
    ids: list[str] = []
    for start in range(0, count, 50):
        batch = [{"name": "cb", "callback": {"url": callback}, **job} for _ in range(min(50, count - start))]
        made = [j["id"] for j in api.post(f"/v1/spaces/{space}/jobs", batch).body["jobs"]]
        held = api.post(f"/v1/spaces/{space}/jobs:claim", {"count": len(made), "names": ["cb"]}).body["jobs"]
        assert sorted(h["id"] for h in held) == sorted(made)
        reports = [{"id": h["id"], "attempt": h["attempt"], "complete": {}} for h in held]
        assert api.post(f"/v1/spaces/{space}/jobs:report", reports).status == 200
        ids += made
    return ids


def sqs_event(*bodies: str) -> dict[str, Any]:
    return {
        "Records": [
            {"messageId": f"m{n}", "body": body, "attributes": {}, "eventSource": "aws:sqs"}
            for n, body in enumerate(bodies)
        ]
    }


def sender(event: dict[str, Any]) -> dict[str, Any]:
    return dict(handler("callback_sender")(event, LambdaContext("callback_sender", 30, 256)))


def test_the_sender_tries_each_message_once_and_reports_those_it_could_not_try(
    rt: Runtime, api: Api, bg: Background, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SQS batch: each delivery tried (one named twice, once); a message that is not one,
    and one whose hold the table would not take, come back as failures for SQS to give
    again; given again, a delivery already made sends nothing."""
    first, second, broken = finished(api, "hooks", "https://example.com/hook", 3)
    outbox = rt.outbox
    assert isinstance(outbox, LocalOutbox)
    bg.records()  # the stream is not read here: the test hands the messages over itself
    for job_id in (first, second, broken):
        assert rt.deliveries.start("hooks", job_id, rt.clock.now_ms())
    taking = Faulty(
        rt.db.client,
        lambda call, params: (
            call == "update_item" and params["Key"] == dynamo.serialize(keys.delivery("hooks", broken))
        ),
    )
    monkeypatch.setattr(rt.db, "client", taking)
    event = sqs_event(
        message(("hooks", first)),
        message(("hooks", first)),
        "not json",
        message(("hooks", second)),
        message(("hooks", broken)),
    )
    answer = sender(event)
    assert sorted(f["itemIdentifier"] for f in answer["batchItemFailures"]) == ["m2", "m4"]
    assert sorted(body["jobId"] for body in receiver.bodies()) == sorted([first, second])
    taking.on = False
    assert sender(sqs_event(message(("hooks", first)), message(("hooks", broken)))) == {
        "batchItemFailures": []
    }
    assert sorted(body["jobId"] for body in receiver.bodies()) == sorted([first, second, broken])
    shown = [rt.deliveries.get("hooks", job_id) for job_id in (first, second, broken)]
    assert [d and d["state"] for d in shown] == ["DELIVERED"] * 3


def test_a_message_carries_the_finished_job_when_it_is_small(rt: Runtime, api: Api) -> None:
    [job_id] = finished(api, "hooks", "https://example.com/hook", payload={"bytes": "x" * 100})
    item = rt.db.get(keys.job("hooks", job_id))
    assert item is not None
    seen = Snapshot("hooks", item)
    assert due_of(message(("hooks", job_id, seen))) == ("hooks", job_id, seen)
    huge = Snapshot("hooks", item | {"padding": b"\x00" * MAX_MESSAGE})
    assert due_of(message(("hooks", job_id, huge))) == ("hooks", job_id), "too large: the sender reads it"


def test_on_aws_the_outbox_hands_deliveries_to_the_queue_in_their_spaces_groups() -> None:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="callbacks")["QueueUrl"]
        carried = Snapshot("b", {"pk": "J#b", "n": 1})
        dues: list[Due] = [("a", f"job{n}") for n in range(12)] + [("b", "job", carried)]
        SqsOutbox(sqs, url).submit(dues)
        got: list[dict[str, Any]] = []
        while batch := sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["MessageGroupId"]
        ).get("Messages", []):
            got += batch
            for m in batch:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert sorted((due_of(m["Body"]), m["Attributes"].get("MessageGroupId")) for m in got) == sorted(
        (due, due[0]) for due in dues
    )


# -- one space's dead targets, another space's work -----------------------------------------


class Silent:
    """A callback target on 127.0.0.1 that accepts every connection, reads the request and
    never answers; it notes each connection the sender gives up on (closes)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=512)
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self.accepted = 0
        self.closed = 0
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, name="silent-server", daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # stopped
            with self.lock:
                self.accepted += 1
                self.conns.append(conn)
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        try:
            while conn.recv(65536):
                pass  # the request, then nothing: it never answers
        except OSError:
            return  # closed here, at the end
        with self.lock:
            self.closed += 1

    def stop(self) -> None:
        """Hang up on every connection: the sends waiting on them fail at once."""
        self.stopped.set()
        self.sock.close()
        with self.lock:
            for conn in self.conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self.conns.clear()


class Answering(BaseHTTPRequestHandler):
    got: list[dict[str, Any]]

    def do_POST(self) -> None:
        self.got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.stop()


@pytest.fixture
def answering() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    got: list[dict[str, Any]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Receiver", (Answering,), {"got": got}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", got
    server.shutdown()
    server.server_close()


def closed_port() -> str:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


def test_a_space_whose_targets_never_answer_holds_up_no_other_space(
    rt: Runtime,
    api: Api,
    bg: Background,
    clock: ManualClock,
    silent: Silent,
    answering: tuple[str, list[dict[str, Any]]],
) -> None:
    """Space A's 200 callbacks go to a target that never answers and to a closed port; then,
    under emit dev's threads, space B's callback arrives, its failure notice is made, its
    lease expires and its deadline cancels its job, all while every one of A's sends still
    waits on its target (none has reached its deadline): nothing of B's waited for them.
    And A never has more than its share of sends in flight."""
    rt.dispatcher.send_deadline_s = 3 * PATIENCE_S  # A's sends outlast the test, however slow the machine
    url, got = answering
    finished(api, "noisy", silent.url, 100)
    finished(api, "noisy", closed_port(), 100)
    bg.start()
    try:
        eventually(lambda: silent.accepted >= SPACE_SENDS // 2)  # A's sends hang on their targets
        quiet = "/v1/spaces/quiet"
        api.patch(quiet, {"onFailure": {"name": "alert"}})
        leased = api.created(quiet, "work")
        api.post(f"{quiet}/jobs:claim", {"count": 1, "names": ["work"], "leaseMs": 1_000})
        timed = api.created(quiet, "timed", expiresInMs=1_000)
        failing = api.created(quiet, "charge", maxAttempts=1)
        [held] = api.post(f"{quiet}/jobs:claim", {"count": 1, "names": ["charge"]}).body["jobs"]
        api.post(f"{quiet}/jobs:report", {"id": failing, "attempt": held["attempt"], "fail": {"error": "no"}})
        [called] = finished(api, "quiet", url)
        clock.advance(1_000)  # the lease and the deadline are over

        eventually(lambda: [body for body in got if body["jobId"] == called])
        eventually(lambda: api.get(f"{quiet}/jobs", query={"name": "alert"}).body["jobs"])
        eventually(lambda: api.get(f"{quiet}/jobs/{leased}").body.get("error") == "lease expired")
        eventually(lambda: api.get(f"{quiet}/jobs/{timed}").body.get("error") == "expired")
        with silent.lock:
            assert silent.closed == 0, "one of A's sends was given up on: B's work may have waited for it"
            assert 0 < silent.accepted <= SPACE_SENDS, "A had more than its share of sends in flight"
        assert {body["space"] for body in got} == {"quiet"}
    finally:
        silent.stop()  # A's sends fail at once now, and the rest of A's are refused
        try:
            eventually(lambda: isinstance(rt.outbox, LocalOutbox) and rt.outbox.idle())
        finally:
            bg.stop()
