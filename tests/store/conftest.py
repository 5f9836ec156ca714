"""The store's contract suite: `JobStore` at its public methods, on whichever engine the
shared runtime runs (moto by default, DynamoDB Local under `EMIT_TEST_DYNAMODB_ENDPOINT`),
as River's `riverdrivertest` runs one suite against every driver."""

from __future__ import annotations

import pytest

from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.store.jobs import JobStore
from tests.store.shelf import Shelf


@pytest.fixture
def store(rt: Runtime) -> JobStore:
    """The job store of the test's own runtime (an empty table on the engine in force)."""
    return rt.jobs


@pytest.fixture
def shelf(rt: Runtime, store: JobStore, clock: ManualClock, space: str) -> Shelf:
    return Shelf(rt, store, clock, space)
