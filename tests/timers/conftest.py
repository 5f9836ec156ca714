from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from shared.runtime import Runtime
from tests.support import Background

SECRET = "whsec_0123456789abcdef"


@pytest.fixture
def bg(rt: Runtime) -> Background:
    return Background(rt)


@dataclass
class Receiver:
    """A callback target behind httpx's MockTransport: records what it got, answers as scripted."""

    answers: list[int | Exception] = field(default_factory=list)
    calls: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls.append(request)
        answer = self.answers.pop(0) if self.answers else 204
        if isinstance(answer, Exception):
            raise answer
        return httpx.Response(answer)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(c.content) for c in self.calls]


@pytest.fixture
def receiver(rt: Runtime) -> Receiver:
    target = Receiver()
    rt.dispatcher.http = httpx.Client(transport=httpx.MockTransport(target))
    return target


def verify(secret: str, header: str, body: bytes) -> int:
    """The test's own check of Emit-Signature: t=<ms>,v1=<hex HMAC-SHA256 of "<t>.<body>">."""
    parts = dict(part.split("=", 1) for part in header.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, parts["v1"]), "signature does not match"
    return int(parts["t"])


Verify = Callable[[str, str, bytes], int]
