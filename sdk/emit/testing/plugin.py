"""emit's pytest plugin: a real `emit dev` for the session, a space and a client per test.

Loaded by pytest wherever `emit-sdk` is installed (its `pytest11` entry point); nothing
starts until a test asks for a fixture:

- `emit_dev`: one `emit dev` for the session (`emit.testing.DevServer`: `url`, `token`,
  `client(space)`), started on a free port at the first test that uses it, stopped at
  the end. The `emit_dev_args` ini option adds arguments (`--verbose`, say).
- `emit_space`: a new space name for each test, so a test sees only its own jobs.
- `emit_client`: an `emit.Emit` on `emit_dev`, in `emit_space`, with the admin token.
- `emit_env`: `EMIT_URL`, `EMIT_TOKEN` and `EMIT_SPACE` set for the test (to `emit_dev`
  and `emit_space`), for code that makes its client from the environment, as
  `@emit.worker` does; the space is returned.

`emit dev` needs the service installed beside the SDK (`emit-service[local]`); without it
a test that uses `emit_dev` errors, saying so.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import pytest

from emit.client import Emit
from emit.testing.dev import DevServer, new_space, start_dev_server


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("emit_dev_args", "arguments for the emit_dev fixture's `emit dev`", default="")


@pytest.fixture(scope="session")
def emit_dev(pytestconfig: pytest.Config) -> Iterator[DevServer]:
    """A real `emit dev` for the session, on a free port, stopped at its end."""
    args = shlex.split(str(pytestconfig.getini("emit_dev_args") or ""))
    server = start_dev_server(args)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def emit_space() -> str:
    """A space no other test uses."""
    return new_space()


@pytest.fixture
def emit_client(emit_dev: DevServer, emit_space: str) -> Iterator[Emit]:
    """A client on `emit_dev`, in `emit_space`, with the admin token."""
    with Emit(emit_dev.url, emit_dev.token, emit_space) as client:
        yield client


@pytest.fixture
def emit_env(emit_dev: DevServer, emit_space: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """`EMIT_URL`, `EMIT_TOKEN` and `EMIT_SPACE` for the test: `emit_dev` and `emit_space`."""
    for variable, value in (emit_dev.environment | {"EMIT_SPACE": emit_space}).items():
        monkeypatch.setenv(variable, value)
    return emit_space
