from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from emit import Emit
from xdist.scheduler import LoadScopeScheduling

from devserver.wiring import LOCAL_ENV
from shared.clock import ManualClock
from shared.runtime import Runtime, install
from shared.schema import NewToken
from tests.dev import DevServer, start_dev
from tests.dynamodb_local import ENDPOINT_VARIABLE
from tests.support import Api, EndpointAws, LocalAws

os.environ.update(LOCAL_ENV)


BROWSER_MODULES = (
    "tests/browser/test_dashboard_browser.py",
    "tests/browser/test_dashboard_live.py",
    "tests/browser/test_follow_page.py",
)
"""Modules driving Chromium through Playwright's sync API, which runs an event loop in the
worker's thread while the browser is open: each module's tests run together, one after
another, and its browser is closed at the module's end (before another test's loop runs)."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (`make test` runs two workers), the CDK tests all go to one worker,
    so the app is synthesized once (their session fixture), and each browser module's tests
    go to one worker together (`BROWSER_MODULES`); every other test goes to whichever
    worker is free. (`--dist loadgroup` would do this with markers, but its
    marking does not take under pytest 9.)"""
    if config.getvalue("dist") != "load":
        return None

    class CdkTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/infra/"):
                return "tests/infra"
            module = nodeid.split("::", maxsplit=1)[0]
            return module if module in BROWSER_MODULES else nodeid

    return CdkTogether(config, log)


@pytest.fixture(scope="session")
def local_aws() -> LocalAws | EndpointAws:
    """moto, or the DynamoDB endpoint `EMIT_TEST_DYNAMODB_ENDPOINT` names (`make
    test-dynamodb-local`). Nothing to let go of at the end: moto's data goes with the
    process, and each test deletes its table on the endpoint."""
    endpoint = os.environ.get(ENDPOINT_VARIABLE)
    return EndpointAws(endpoint) if endpoint else LocalAws()


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
def rt(clock: ManualClock, local_aws: LocalAws | EndpointAws) -> Iterator[Runtime]:
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


@pytest.fixture
def space(request: pytest.FixtureRequest) -> str:
    """A space no other test uses, named after the test so a failure is easy to look into."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    return f"{name[:40]}-{secrets.token_hex(3)}"


@pytest.fixture
def client(dev: DevServer, space: str) -> Iterator[Emit]:
    with Emit(dev.url, dev.token, space) as client:
        yield client
