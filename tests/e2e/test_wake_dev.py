"""`emit dev`'s wake: the same WebSocket protocol as on AWS, on a port of its own, printed at
start-up, and the URL the space's and the claim's answers give."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.dev import DevServer
from tests.support import PATIENCE_S


def wake_url(dev: DevServer) -> str:
    found = [re.search(r"wake on (ws://\S+)", line) for line in dev.output]
    (url,) = [m.group(1) for m in found if m]
    return url


def answered(socket: ClientConnection) -> dict[str, object]:
    return dict(json.loads(socket.recv(timeout=PATIENCE_S)))


def test_it_prints_its_wake_address_on_a_port_of_its_own(dev: DevServer, space: str) -> None:
    url = wake_url(dev)
    assert url.rsplit(":", 1)[1] != dev.url.rsplit(":", 1)[1]
    auth = {"authorization": f"Bearer {dev.token}"}
    assert httpx.get(f"{dev.url}/v1/spaces/{space}", headers=auth).status_code == 404
    assert httpx.patch(f"{dev.url}/v1/spaces/{space}", json={}, headers=auth).json()["wakeUrl"] == url
    assert httpx.get(f"{dev.url}/v1/spaces/{space}", headers=auth).json()["wakeUrl"] == url
    claim = httpx.post(f"{dev.url}/v1/spaces/{space}/jobs:claim", json={"count": 1}, headers=auth)
    assert claim.json() == {"jobs": [], "wakeUrl": url}


def test_a_worker_offering_its_token_as_a_subprotocol_hears_of_new_work(dev: DevServer, space: str) -> None:
    with connect(
        wake_url(dev), subprotocols=["emit.v1", f"bearer.{dev.token}"], open_timeout=PATIENCE_S
    ) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "emit.v1"
        ws.send(json.dumps({"action": "listen", "space": space, "names": ["a"]}))
        assert answered(ws) == {"type": "listening", "space": space, "names": ["a"]}
        ws.send(json.dumps({"action": "ping"}))  # the keep-alive: no answer
        ws.send(json.dumps({"action": "listen", "space": space, "names": [f"n{i}" for i in range(33)]}))
        assert answered(ws) == {
            "type": "error",
            "code": "InvalidArgument",
            "message": "names: 1 to 32 job names",
        }
        created = httpx.post(
            f"{dev.url}/v1/spaces/{space}/jobs",
            json={"name": "a"},
            headers={"authorization": f"Bearer {dev.token}"},
        )
        assert created.status_code == 200
        assert answered(ws) == {"type": "work", "space": space, "name": "a"}


@pytest.mark.parametrize(
    ("offered", "headers"),
    [([], {"Authorization": "Bearer emit_no_such"}), (["emit.v1", "bearer.wrong"], {}), ([], {})],
)
def test_a_handshake_without_a_valid_token_is_refused_with_401(
    dev: DevServer, offered: list[str], headers: dict[str, str]
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        connect(
            wake_url(dev), subprotocols=offered or None, additional_headers=headers, open_timeout=PATIENCE_S
        )  # type: ignore[arg-type]
    response = refused.value.response
    assert response.status_code == 401
    assert json.loads(bytes(response.body))["code"] == "Unauthenticated"
