from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from devserver.wiring import LOCAL_ENV
from shared.clock import ManualClock
from shared.runtime import Runtime, install
from shared.schema import NewToken
from tests.dev import DevServer, start_dev
from tests.support import Api, LocalAws

os.environ.update(LOCAL_ENV)


@pytest.fixture(scope="session")
def local_aws() -> Iterator[LocalAws]:
    aws = LocalAws()
    yield aws
    aws.close()


@pytest.fixture(scope="session")
def dev() -> Iterator[DevServer]:
    """One real `emit dev` for the whole session; each test works in spaces of its own."""
    server = start_dev()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def dev_server(dev: DevServer) -> DevServer:
    """The same `emit dev` (the end-to-end tests' name for it)."""
    return dev


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rt(clock: ManualClock, local_aws: LocalAws) -> Iterator[Runtime]:
    """A runtime of the test's own (its clock, an empty table and bucket), installed for the
    handlers to use."""
    runtime = local_aws.runtime(clock)
    install(runtime)
    try:
        yield runtime
    finally:
        install(None)
        local_aws.release()


@pytest.fixture
def admin_token(rt: Runtime) -> str:
    return str(rt.tokens.mint(NewToken(scopes=["admin"], name="test admin"))["token"])


@pytest.fixture
def api(admin_token: str) -> Api:
    return Api(admin_token)


def mint(rt: Runtime, scopes: list[str], spaces: list[str] | None = None) -> str:
    return str(rt.tokens.mint(NewToken.model_validate({"scopes": scopes, "spaces": spaces}))["token"])
