"""What happens without a request, in real time, against a real `emit dev`."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import DevServer
from tests.support import PATIENCE_S, check_signature, eventually

SECRET = "e2e-webhook-secret-0123"


class Receiver(ThreadingHTTPServer):
    """A callback target on 127.0.0.1 that answers from a script, then 204."""

    def __init__(self, script: list[int]) -> None:
        super().__init__(("127.0.0.1", 0), _Hook)
        self.script = list(script)
        self.got: list[tuple[dict[str, str], bytes, float]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class _Hook(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        content = self.rfile.read(int(self.headers["content-length"]))
        with self.server.lock:
            self.server.got.append((dict(self.headers), content, time.monotonic()))
            status = self.server.script.pop(0) if self.server.script else 204
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[Receiver]:
    server = Receiver(getattr(request, "param", []))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def client(dev: DevServer) -> httpx.Client:
    return httpx.Client(
        base_url=dev.url, headers={"Authorization": f"Bearer {dev.token}"}, timeout=PATIENCE_S
    )


def test_a_silent_worker_s_job_goes_to_the_next_worker(dev_server: DevServer) -> None:
    with client(dev_server) as emit:
        job_id = emit.post("/v1/spaces/e2e-lease/jobs", json={"name": "n", "backoffMs": 0}).json()["id"]
        first = emit.post("/v1/spaces/e2e-lease/jobs:claim", json={"count": 1, "leaseMs": 1_000}).json()[
            "jobs"
        ]
        assert first[0]["attempt"] == 1
        # emit dev's clock ends the lease (it ticks every second); a long poll then gets the job.
        again = eventually(
            lambda: emit.post("/v1/spaces/e2e-lease/jobs:claim", json={"count": 1, "waitMs": 5_000}).json()[
                "jobs"
            ]
        )
        assert [(j["id"], j["attempt"]) for j in again] == [(job_id, 2)]
        late = emit.post(
            "/v1/spaces/e2e-lease/jobs:report", json={"id": job_id, "attempt": 1, "complete": {}}
        )
        assert late.json()["outcomes"][0]["rejection"]["reason"] == "STALE"


def delivered(emit: httpx.Client, space: str, job_id: str) -> dict[str, Any] | None:
    """The job's callback delivery, once it is DELIVERED."""
    delivery: dict[str, Any] = emit.get(f"/v1/spaces/{space}/jobs/{job_id}").json()["callback"]["delivery"]
    return delivery if delivery["state"] == "DELIVERED" else None


def finish(emit: httpx.Client, space: str, url: str, how: str) -> str:
    emit.patch(f"/v1/spaces/{space}", json={"webhookSecret": SECRET})
    job = {"name": "render", "payload": {"r": 1}, "callback": {"url": url, "headers": {"x-tenant": "acme"}}}
    job_id: str = emit.post(f"/v1/spaces/{space}/jobs", json=job).json()["id"]
    if how == "cancel":
        emit.post(f"/v1/spaces/{space}/jobs:cancel", json=[job_id])
        return job_id
    [held] = emit.post(f"/v1/spaces/{space}/jobs:claim", json={"count": 1}).json()["jobs"]
    ending = (
        {"complete": {"result": {"ok": True}}}
        if how == "complete"
        else {"fail": {"error": "no", "unrecoverable": True}}
    )
    emit.post(f"/v1/spaces/{space}/jobs:report", json={"id": job_id, "attempt": held["attempt"], **ending})
    return job_id


@pytest.mark.parametrize(
    ("how", "status", "result"),
    [("complete", "completed", {"ok": True}), ("fail", "failed", "no"), ("cancel", "cancelled", None)],
)
def test_a_finished_job_calls_back_with_a_signature_we_can_check(
    dev_server: DevServer, receiver: Receiver, how: str, status: str, result: Any
) -> None:
    with client(dev_server) as emit:
        job_id = finish(emit, f"e2e-{how}", receiver.url, how)
        eventually(lambda: receiver.got)
        headers, content, _ = receiver.got[0]
        t = check_signature(SECRET, headers["Emit-Signature"], content)
        assert abs(t - time.time() * 1000) < 60_000
        body = json.loads(content)
        assert (body["jobId"], body["status"], body["result"], headers["x-tenant"]) == (
            job_id,
            status,
            result,
            "acme",
        )
        eventually(lambda: delivered(emit, f"e2e-{how}", job_id))


@pytest.mark.parametrize("receiver", [[500, 503]], indirect=True)
def test_a_receiver_that_fails_twice_is_called_again(dev_server: DevServer, receiver: Receiver) -> None:
    with client(dev_server) as emit:
        job_id = finish(emit, "e2e-retry", receiver.url, "complete")
        eventually(lambda: len(receiver.got) >= 3)
        gaps = [b[2] - a[2] for a, b in zip(receiver.got, receiver.got[1:], strict=False)]
        assert gaps[0] >= 4.5 and gaps[1] >= 9.5, "5 s, then doubling"
        assert len({c for _, c, _ in receiver.got}) == 1, "the same body every time"
        # The third answer was a 204: emit dev records the delivery once it has read it.
        delivery = eventually(lambda: delivered(emit, "e2e-retry", job_id))
        assert delivery["attempts"] == 3
