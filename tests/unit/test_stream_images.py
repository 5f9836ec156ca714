"""Stream records as each engine writes them: the stream reader's Lambda records
(devserver/background.py `as_lambda_record`) and their images (shared/store/images.py `JobChange.of`)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from devserver.background import as_lambda_record
from shared.store.images import JobChange


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


def test_a_deletion_by_ttl_reaches_the_handler_as_remove_whatever_the_engine_names_it() -> None:
    """DynamoDB Local names the records of its TTL deletions UNKNOWN_TO_SDK_VERSION."""
    keys = {"pk": {"S": "J#space#0"}, "sk": {"S": "job1"}}
    for name in ("REMOVE", "UNKNOWN_TO_SDK_VERSION"):
        got = as_lambda_record({"eventName": name, "dynamodb": {"Keys": keys, "OldImage": keys}}, "arn")
        change = JobChange.of(got)
        assert got["eventName"] == "REMOVE" and change is not None and change.removed
    insert = as_lambda_record({"eventName": "INSERT", "dynamodb": {"Keys": keys, "NewImage": keys}}, "arn")
    assert insert["eventName"] == "INSERT"
