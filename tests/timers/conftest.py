from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from shared.runtime import Runtime
from tests.support import Background, LocalAws, check_signature

SECRET = "whsec_0123456789abcdef"


@pytest.fixture
def bg(rt: Runtime, local_aws: LocalAws) -> Background:
    return Background(rt, streams_client=local_aws.streams)


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


verify = check_signature
