"""The stream's filters (`infra.stack.STREAM_FILTERS`) let through every record the handler
acts on: `emit dev` hands the handler every record, so only this shows that AWS would too.

Each job's life is driven through the handlers and its records read back; a record the
counts, the callbacks, the wake or the cleanup need must match one of the patterns."""

from __future__ import annotations

import json
from typing import Any

from infra.stack import STREAM_FILTERS
from shared.clock import ManualClock
from shared.counts import tally_of
from shared.store.port import JobChange
from tests.support import Api, Background

SPACE = "/v1/spaces/filtered"


def _matches(pattern: Any, value: Any) -> bool:
    """EventBridge's rules as the patterns use them: a list of literals or `exists` /
    `prefix` matchers for a leaf, nested objects for the rest."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(_matches(p, value.get(k)) for k, p in pattern.items())
    for option in pattern:
        if isinstance(option, dict) and "exists" in option:
            if (value is not None) == option["exists"]:
                return True
        elif isinstance(option, dict) and "prefix" in option:
            leaves = value if isinstance(value, list) else [value]
            if any(isinstance(v, str) and v.startswith(option["prefix"]) for v in leaves):
                return True
        elif value == option or (isinstance(value, list) and option in value):
            return True
    return False


PATTERNS = [json.loads(f["pattern"]) for f in STREAM_FILTERS]


def passes(record: dict[str, Any]) -> bool:
    return any(_matches(p, record) for p in PATTERNS)


def test_every_record_the_counts_need_passes_the_filters(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    api.created(SPACE, "done")
    api.created(SPACE, "cancelled")
    api.created(SPACE, "retried", maxAttempts=2, backoffMs=0)
    api.created(SPACE, "expired", timeoutMs=1_000)
    api.created(SPACE, "later", delayMs=60_000)
    held = {name: api.claimed(SPACE, names=[name])[0] for name in ("done", "retried", "expired")}
    jobs = f"{SPACE}/jobs"
    api.post(f"{jobs}:report", {"id": held["done"], "attempt": 1, "complete": {}})
    api.post(f"{jobs}:report", {"id": held["retried"], "attempt": 1, "fail": {"error": "again"}})
    api.post(f"{jobs}:cancel", {"ids": [api.get(jobs, query={"name": "cancelled"}).body["jobs"][0]["id"]]})
    clock.advance(5_000)
    records = bg.records()
    bg.tick()  # the lease of `expired` ends: back to pending
    records += bg.records()
    counted = [r for r in records if (c := JobChange.of(r)) is not None and tally_of(c) is not None]
    moves = {(JobChange.of(r).moved[1], JobChange.of(r).moved[2]) for r in counted}  # type: ignore[union-attr]
    assert len(moves) >= 5, moves  # made, claimed, completed, failed and retried, cancelled, expired
    missed = [JobChange.of(r).moved for r in counted if not passes(r)]  # type: ignore[union-attr]
    assert not missed, f"the stream's filters drop records the counts need: {missed}"


def test_the_filters_drop_what_nothing_needs(api: Api, bg: Background) -> None:
    """A report that only renews a lease changes nothing the handler acts on."""
    job = api.created(SPACE, "touched")
    api.claimed(SPACE, names=["touched"])
    bg.records()
    api.post(f"{SPACE}/jobs:report", {"id": job, "attempt": 1, "touch": {}})
    assert [r for r in bg.records() if passes(r)] == []
