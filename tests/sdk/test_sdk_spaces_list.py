"""`client.spaces.list()` and `emit spaces list` against the session's `emit dev`."""

from __future__ import annotations

import json

import pytest
from emit import Emit
from emit import cli as emit_cli

from tests.dev import DevServer


def test_the_sdk_lists_the_spaces_a_token_may_use(client: Emit, dev: DevServer, space: str) -> None:
    other = f"{space}-b"
    client.spaces.update(max_in_flight=5)
    client.jobs.create("n")
    with Emit(dev.url, dev.token, other) as elsewhere:
        elsewhere.jobs.create("n")
    listed = {s.name: s.in_flight for s in client.spaces.list(page_size=1)}
    assert listed[space] == 1 and listed[other] is None
    assert len(list(client.spaces.list(limit=1, page_size=1))) == 1

    reader = client.tokens.create(["read"], spaces=[other, "no-such-space-here"]).secret
    with Emit(dev.url, reader) as limited:
        assert [(s.name, s.in_flight) for s in limited.spaces.list()] == [(other, None)]


def test_emit_spaces_list(
    client: Emit,
    dev: DevServer,
    space: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    client.jobs.create("n")
    monkeypatch.setenv("EMIT_URL", dev.url)
    monkeypatch.setenv("EMIT_TOKEN", dev.token)
    assert emit_cli.main(["spaces", "list", "--json"]) == 0
    assert {"name": space, "inFlight": None} in json.loads(capsys.readouterr().out)
    assert emit_cli.main(["spaces", "list"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].split() == ["SPACE", "IN", "FLIGHT"]
    assert [space, "-"] in [line.split() for line in shown]
