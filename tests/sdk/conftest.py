"""A client of the session's `emit dev` (the `dev` fixture), in a space of each test's own."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator

import pytest
from emit import Emit

from tests.dev import DevServer


@pytest.fixture
def space(request: pytest.FixtureRequest) -> str:
    """A space no other test uses, named after the test so a failure is easy to look into."""
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    return f"{name[:48]}-{secrets.token_hex(3)}"


@pytest.fixture
def client(dev: DevServer, space: str) -> Iterator[Emit]:
    with Emit(dev.url, dev.token, space) as client:
        yield client
