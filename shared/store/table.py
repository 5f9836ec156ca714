"""The table's definition, shared by the CDK app, `emit dev` and the tests."""

from __future__ import annotations

from typing import Any

READY_INDEX = "ready"
TTL_ATTRIBUTE = "ttl"
# What a claim needs from a candidate before it writes: the attempt to fence on, the
# timeout that sets the default lease, the payload size for the 8 MiB answer cap, and the
# priority and ready time that place a later job among the due ones (the ready time also
# lets the never-claimed check and diagnostics read the due lane). The concurrency key is
# for the per-key limits, which decide at the claim too.
READY_PROJECTION = ("attempt", "timeoutMs", "payloadBytes", "priority", "readyAtMs", "concurrencyKey")


def create_table_request(name: str) -> dict[str, Any]:
    """CreateTable parameters for the local and test tables (the CDK app mirrors these)."""
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "gpk", "gsk")
        ],
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": READY_INDEX,
                "KeySchema": [
                    {"AttributeName": "gpk", "KeyType": "HASH"},
                    {"AttributeName": "gsk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(READY_PROJECTION)},
            },
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    }
