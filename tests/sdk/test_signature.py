"""`verify_signature` on `Emit-Signature: t=<ms>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`.

`assert_verifies` holds what must be true of any genuine callback: it is accepted as it
arrived, and refused once its body is touched, its signature is past the tolerance, or
the secret is another. The callbacks here are signed by this test, from the contract;
a callback delivered by `emit dev` goes through the same function.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from emit import Callback, Delivery, Emit, sign, verify_signature
from emit.units import utc as at

from tests.support import eventually

SECRET = "whsec-0123456789abcdef"
NOW_MS = 1_790_726_272_524
BODY = json.dumps(
    {
        "jobId": "01M3QSMMXQ00ZSGYA6VWM3NGQA",
        "space": "reports",
        "name": "render-report",
        "status": "completed",
        "attempt": 1,
        "timestamp": NOW_MS,
        "result": {"url": "https://files.example.com/rep_881.pdf"},
    }
).encode()


def contract_signature(secret: str, t: int, body: bytes) -> str:
    """The header as the contract defines it, computed without the SDK."""
    digest = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={digest}"


def assert_verifies(secret: str, header: str, body: bytes, *, received_ms: int) -> None:
    """A genuine callback, received at `received_ms`: accepted as is, refused when altered."""
    t = int(header.removeprefix("t=").partition(",")[0])
    assert verify_signature(secret, header, body, now=at(received_ms))
    assert verify_signature(secret, header, body.decode(), now=at(received_ms))  # str bodies too
    assert not verify_signature(secret, header, body + b" ", now=at(received_ms))
    assert not verify_signature(secret, header, body.replace(b"completed", b"failed"), now=at(received_ms))
    assert not verify_signature(secret + "x", header, body, now=at(received_ms))
    assert not verify_signature(secret, header, body, now=at(t + 300_001))  # replayed too late
    assert not verify_signature(secret, header, body, tolerance=60, now=at(t + 60_001))


def test_a_callback_signed_as_the_contract_says_verifies() -> None:
    header = contract_signature(SECRET, NOW_MS, BODY)
    assert_verifies(SECRET, header, BODY, received_ms=NOW_MS + 1_500)
    assert verify_signature(SECRET, header, BODY, now=at(NOW_MS + 300_000))  # the edge of five minutes


def test_sign_makes_the_header_the_contract_describes() -> None:
    assert sign(SECRET, BODY, now=at(NOW_MS)) == contract_signature(SECRET, NOW_MS, BODY)
    assert verify_signature(SECRET, sign(SECRET, BODY), BODY)  # against the real clock


def test_a_signature_from_the_future_beyond_the_tolerance_is_refused() -> None:
    header = contract_signature(SECRET, NOW_MS + 301_000, BODY)
    assert not verify_signature(SECRET, header, BODY, now=at(NOW_MS))


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "v1=abc",
        f"t={NOW_MS}",
        f"t=soon,v1={'0' * 64}",
        f"t=\uff11\uff12\uff13,v1={'0' * 64}",  # digits, but not ASCII ones
        f"t={NOW_MS},v1=ü",
        "garbage",
    ],
)
def test_a_missing_or_malformed_header_is_refused_without_raising(header: str | None) -> None:
    assert not verify_signature(SECRET, header, BODY, now=at(NOW_MS))


def test_any_of_several_v1_signatures_may_match_and_other_schemes_are_ignored() -> None:
    good = contract_signature(SECRET, NOW_MS, BODY).split("v1=")[1]
    header = f"t={NOW_MS}, v0=ignored, v1={'0' * 64}, v1={good.upper()}"
    assert verify_signature(SECRET, header, BODY, now=at(NOW_MS))


def test_an_empty_secret_never_verifies() -> None:
    assert not verify_signature("", contract_signature("", NOW_MS, BODY), BODY, now=at(NOW_MS))


def test_a_real_callback_from_emit_dev_verifies(client: Emit) -> None:
    """The service signs, the SDK checks: a callback received from `emit dev` itself."""
    received: list[tuple[str, bytes, int]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.headers["Emit-Signature"], body, int(time.time() * 1000)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client.spaces.update(webhook_secret=SECRET)
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        created = client.jobs.create("render", {"r": 1}, callback=Callback(url))
        [held] = client.jobs.claim(count=1)
        client.jobs.report([{"id": held.id, "attempt": held.attempt, "complete": {"result": {"ok": True}}}])
        eventually(lambda: received)
        [(header, body, received_ms)] = received
        assert json.loads(body)["jobId"] == created.id
        assert_verifies(SECRET, header, body, received_ms=received_ms)

        # How sending it went, on the job read back (its delivery is recorded after the answer).
        def delivery() -> Delivery | None:
            callback = client.jobs.get(created.id).callback
            found = callback.delivery if callback is not None else None
            return found if found is not None and found.state == "delivered" else None

        delivered = eventually(delivery)
        assert (delivered.attempts, delivered.last_status) == (1, 204)
        assert delivered.delivered_at is not None and delivered.delivered_at.tzinfo is not None
    finally:
        server.shutdown()
