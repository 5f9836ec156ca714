"""`client.spaces.list()` and `emit spaces list` against the session's `emit dev`."""

from __future__ import annotations

import json

import pytest
from emit import Emit
from emit import cli as emit_cli

from tests.dev import DevServer
from tests.support import eventually


def test_the_sdk_lists_the_spaces_a_token_may_use(client: Emit, dev: DevServer, space: str) -> None:
    other = f"{space}-b"
    client.spaces.update(max_in_flight=5)
    client.jobs.create("n")
    with Emit(dev.url, dev.token, other) as elsewhere:
        elsewhere.jobs.create("n")
    listed = {s.name: s.in_flight for s in client.spaces.list(page_size=1)}
    assert listed[space] == 1  # under its cap: exact at once
    # Without one: the stream's count, once emit dev's stream has seen the create.
    eventually(lambda: {s.name: s.in_flight for s in client.spaces.list()}[other] == 1)
    assert len(list(client.spaces.list(limit=1, page_size=1))) == 1

    reader = client.tokens.create(["read"], spaces=[other, "no-such-space-here"]).secret
    with Emit(dev.url, reader) as limited:
        [(name, in_flight)] = [(s.name, s.in_flight) for s in limited.spaces.list()]
        assert name == other and isinstance(in_flight, int)


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
    listed = {s["name"]: s["inFlight"] for s in json.loads(capsys.readouterr().out)}
    assert isinstance(listed[space], int)  # the stream's count: 1 once it has seen the create
    assert emit_cli.main(["spaces", "list"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0].split() == ["SPACE", "IN", "FLIGHT"]
    assert [line.split()[0] for line in shown if line.split()[1:2] and line.split()[1].isdigit()].count(
        space
    ) == 1
