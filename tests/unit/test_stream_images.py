"""Stream record images as each engine writes them (shared/stream.py `JobChange.of`)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from shared.stream import JobChange


def record(new_image: dict[str, Any]) -> dict[str, Any]:
    keys = {"pk": {"S": "J#space#0"}, "sk": {"S": "job1"}}
    return {"eventName": "INSERT", "dynamodb": {"Keys": keys, "NewImage": keys | new_image}}


@pytest.mark.parametrize(
    "empty",
    [{"M": {}}, {}],
    ids=["as GetItem and AWS write it", "as DynamoDB Local's stream writes it"],
)
def test_an_empty_map_reads_as_an_empty_map_in_either_spelling(empty: dict[str, Any]) -> None:
    change = JobChange.of(record({"headers": empty, "meta": {"M": {"inner": empty}}, "list": {"L": [empty]}}))
    assert change is not None and change.new is not None
    assert change.new["headers"] == {}
    assert change.new["meta"] == {"inner": {}}
    assert change.new["list"] == [{}]


def test_binary_values_come_as_base64_text_in_lambda_events_and_as_bytes_otherwise() -> None:
    data = b"\x00\x01payload"
    text = base64.b64encode(data).decode()
    change = JobChange.of(
        record({"b": {"B": text}, "bs": {"BS": [text]}, "raw": {"B": data}, "m": {"M": {"b": {"B": text}}}})
    )
    assert change is not None and change.new is not None
    assert change.new["b"] == data and change.new["raw"] == data
    assert change.new["bs"] == {data}
    assert change.new["m"] == {"b": data}
