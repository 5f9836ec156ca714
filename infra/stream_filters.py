"""The stream trigger's filters: which of the table's stream records Lambda hands the stream
handler (`infra.stack` builds its event source mapping with them), and how Lambda matches
them, so the tests and `bench.cost` see exactly the records AWS would hand over (`emit dev`
hands the handler every record). Plain Python: the benches import it without the CDK."""

from __future__ import annotations

from typing import Any

from shared.job import FINAL

_JOB = {"pk": {"S": [{"prefix": "J#"}]}}
PATTERNS: list[dict[str, Any]] = [
    # A job that just finished: its callback to deliver, its notices, its name's counts
    # (`shared.counts`), and room a job holding a slot of its name's or key's concurrency
    # let go of (wake).
    {
        "dynamodb": {
            "Keys": _JOB,
            "OldImage": {"status": {"S": ["PENDING", "RUNNING"]}},
            "NewImage": {"status": {"S": sorted(s.value for s in FINAL)}},
        }
    },
    # A job removed by retention: only finished jobs carry `ttl`, and finished jobs never
    # change again, so an old image with `ttl` is the record of their removal.
    {"dynamodb": {"Keys": _JOB, "OldImage": {"ttl": {"N": [{"exists": True}]}}}},
    # Wake (issue 19): a pending job in the ready index, which may have just become
    # claimable (created, released, retried); the handler compares it with the old image.
    {
        "dynamodb": {
            "Keys": _JOB,
            "NewImage": {"status": {"S": ["PENDING"]}, "gsk": {"S": [{"exists": True}]}},
        }
    },
    # A job claimed: its name's running and pending counts (`shared.counts`).
    {
        "dynamodb": {
            "Keys": _JOB,
            "OldImage": {"status": {"S": ["PENDING"]}},
            "NewImage": {"status": {"S": ["RUNNING"]}},
        }
    },
]
"""Records the stream handler needs (only the `dynamodb` key can be filtered on [4.4]);
the handler checks each record again."""


def passes(record: dict[str, Any]) -> bool:
    """Whether Lambda hands the handler `record`: it matches one of the patterns."""
    return any(matches(p, record) for p in PATTERNS)


def matches(pattern: Any, value: Any) -> bool:
    """Lambda's event filtering, as far as the patterns use it: nested keys, a list of
    alternatives (an exact value, `prefix`, `exists`), any element of an array value."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(
            matches(want, value.get(key, _ABSENT)) for key, want in pattern.items()
        )
    values = value if isinstance(value, list) else [value]
    for alternative in pattern:
        if isinstance(alternative, dict) and "exists" in alternative:
            if (value is not _ABSENT) is alternative["exists"]:
                return True
        elif isinstance(alternative, dict):
            if any(isinstance(v, str) and v.startswith(alternative["prefix"]) for v in values):
                return True
        elif alternative in values:
            return True
    return False


_ABSENT = object()
