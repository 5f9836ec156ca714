from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from moto import mock_aws

from devserver.wiring import LOCAL_ENV, build_runtime
from shared.clock import ManualClock
from shared.queue import QueueConfig
from shared.runtime import Runtime, install
from shared.schema import NewToken
from tests.support import Api

os.environ.update(LOCAL_ENV)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rt(clock: ManualClock) -> Iterator[Runtime]:
    with mock_aws():
        runtime = build_runtime(clock=clock, queue_config=QueueConfig(max_wait_ms=60_000))
        install(runtime)
        yield runtime
        install(None)


@pytest.fixture
def admin_token(rt: Runtime) -> str:
    return str(rt.tokens.mint(NewToken(scopes=["admin"], name="test admin"))["token"])


@pytest.fixture
def api(admin_token: str) -> Api:
    return Api(admin_token)


def mint(rt: Runtime, scopes: list[str], spaces: list[str] | None = None) -> str:
    return str(rt.tokens.mint(NewToken.model_validate({"scopes": scopes, "spaces": spaces}))["token"])
