"""Wake's AWS wiring: posts through API Gateway's management API (410 is `Gone`), hints put
off by an asynchronous invocation, both built from a deployed function's settings."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shared.runtime import Runtime
from shared.wake import ApiGatewayPoster, Gone, LambdaLater, LambdaSender, management_endpoint


class Client:
    def __init__(self, error: str | None = None) -> None:
        self.error = error
        self.calls: list[dict[str, Any]] = []

    def post_to_connection(self, **params: Any) -> None:
        self.calls.append(params)
        if self.error:
            status = 410 if self.error == "GoneException" else 500
            raise ClientError(
                {
                    "Error": {"Code": self.error, "Message": "x"},
                    "ResponseMetadata": {"HTTPStatusCode": status},
                },
                "PostToConnection",
            )

    def invoke(self, **params: Any) -> None:
        self.calls.append(params)


def test_the_management_endpoint_is_the_stage_over_https() -> None:
    url = "wss://abc123.execute-api.eu-west-1.amazonaws.com/v1"
    assert management_endpoint(url) == "https://abc123.execute-api.eu-west-1.amazonaws.com/v1"


def test_a_post_answered_410_is_gone_and_other_failures_are_raised() -> None:
    made: list[Client] = []

    def make(error: str | None) -> ApiGatewayPoster:
        return ApiGatewayPoster(lambda: made.append(Client(error)) or made[-1])

    make(None).post("c1", b"{}")
    assert made[-1].calls == [{"ConnectionId": "c1", "Data": b"{}"}]
    with pytest.raises(Gone):
        make("GoneException").post("c1", b"{}")
    with pytest.raises(ClientError):
        make("InternalServerErrorException").post("c1", b"{}")


def test_the_client_is_made_at_the_first_post_only() -> None:
    made: list[Client] = []
    poster = ApiGatewayPoster(lambda: made.append(Client()) or made[-1])
    assert made == []
    poster.post("a", b"1")
    poster.post("b", b"2")
    assert len(made) == 1 and len(made[0].calls) == 2


def test_a_hint_is_put_off_by_invoking_wake_later_without_waiting() -> None:
    client = Client()
    LambdaLater(client, "emit-wake-later").at("s", "n", 123, trailing=True)
    (call,) = client.calls
    assert (call["FunctionName"], call["InvocationType"]) == ("emit-wake-later", "Event")
    assert json.loads(call["Payload"]) == {"space": "s", "name": "n", "atMs": 123, "trailing": True}


def test_a_hints_posts_are_handed_to_wake_later_a_thousand_connections_an_invocation() -> None:
    client = Client()
    connections = [f"c{i}" for i in range(2_500)]
    LambdaSender(client, "emit-wake-later").send(connections, b'{"type":"work"}')
    assert [(c["FunctionName"], c["InvocationType"]) for c in client.calls] == [
        ("emit-wake-later", "Event")
    ] * 3
    handed = [json.loads(c["Payload"]) for c in client.calls]
    assert [len(h["post"]) for h in handed] == [1_000, 1_000, 500]
    assert [c for h in handed for c in h["post"]] == connections
    assert {h["data"] for h in handed} == {'{"type":"work"}'}


def test_a_deployed_function_builds_its_wake_from_its_settings() -> None:
    built = Runtime.from_env(
        {
            "EMIT_TABLE": "t",
            "EMIT_WAKE_URL": "wss://abc123.execute-api.us-east-1.amazonaws.com/v1",
            "EMIT_WAKE_LATER_FUNCTION": "emit-wake-later",
        }
    )
    assert built.wake.url == "wss://abc123.execute-api.us-east-1.amazonaws.com/v1"
    assert isinstance(built.wake.poster, ApiGatewayPoster)
    assert isinstance(built.wake.later, LambdaLater) and built.wake.later.function == "emit-wake-later"
    assert isinstance(built.wake.sender, LambdaSender) and built.wake.sender.function == "emit-wake-later"
    plain = Runtime.from_env({"EMIT_TABLE": "t"})
    assert plain.wake.url is None and plain.wake.poster is None and plain.wake.shown() == {}
    assert plain.wake.sender is None
