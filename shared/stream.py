"""What the table's stream drives: a callback and notices (`shared.jobs.notify`) when a job
finishes, and cleaning up after a job that retention removed.

Every step is safe to repeat: a delivery is recorded with a conditional put (a record
seen twice starts nothing twice), attempts are held one sender at a time, and cleanup
deletes what may already be gone. A removed job's delivery is replaced by a tombstone,
so its finish record replayed after the removal starts nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.callbacks import Due, Outbox
from shared.clock import Clock
from shared.jobs.notify import Notifier
from shared.machine import FINAL, JobStatus
from shared.store import keys
from shared.store.deliveries import DeliveryStore
from shared.store.dynamo import Item, deserialize
from shared.store.jobs import JobStore
from shared.store.spaces import SpaceStore
from shared.wake import Wake


@dataclass(frozen=True)
class JobChange:
    """One stream record about a job item."""

    event: str
    space: str
    job_id: str
    old: Item | None
    new: Item | None

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> JobChange | None:
        data = record.get("dynamodb") or {}
        pk = (data.get("Keys") or {}).get("pk", {}).get("S", "")
        if not pk.startswith("J#"):
            return None
        space = pk.split("#")[1]
        job_id = data["Keys"]["sk"]["S"]
        old = _image(data["OldImage"]) if data.get("OldImage") else None
        new = _image(data["NewImage"]) if data.get("NewImage") else None
        return cls(record.get("eventName", ""), space, job_id, old, new)

    @property
    def finished(self) -> bool:
        """This change is the one that finished the job (a record of any other change is not)."""
        return (
            self.new is not None
            and JobStatus(self.new["status"]) in FINAL
            and (self.old is None or JobStatus(self.old["status"]) not in FINAL)
        )

    @property
    def removed(self) -> bool:
        return self.event == "REMOVE" and self.old is not None


def _image(wire: Mapping[str, Any]) -> Item:
    """An item image of a record. Lambda's event is JSON: a binary value (`B`, `BS`: a
    compressed payload, result or error) comes as base64 text, which boto3 would refuse.
    And DynamoDB Local's stream writes an empty map as `{}` (GetItem answers `{"M": {}}`
    for the same value), which boto3 refuses too: both spellings are read."""
    return deserialize({name: _binary(value) for name, value in wire.items()})


def _binary(value: Mapping[str, Any]) -> Mapping[str, Any]:
    if not value:
        return {"M": {}}
    if isinstance(value.get("B"), str):
        return {"B": base64.b64decode(value["B"])}
    if "BS" in value:
        return {"BS": [base64.b64decode(v) if isinstance(v, str) else v for v in value["BS"]]}
    if "M" in value:
        return {"M": {k: _binary(v) for k, v in value["M"].items()}}
    if "L" in value:
        return {"L": [_binary(v) for v in value["L"]]}
    return value


class StreamProcessor:
    def __init__(
        self,
        *,
        clock: Clock,
        jobs: JobStore,
        deliveries: DeliveryStore,
        outbox: Outbox,
        spaces: SpaceStore,
        notifier: Notifier | None = None,
        wake: Wake | None = None,
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.deliveries = deliveries
        self.outbox = outbox
        self.spaces = spaces
        self.notifier = notifier
        self.wake = wake  # issue 19: hints to listening workers (shared.wake)

    def record(self, record: Mapping[str, Any]) -> Due | None:
        """Apply one record; answers the delivery it made due, with the finished job's item."""
        change = JobChange.of(record)
        if change is None:
            return None
        if self.wake is not None:  # issue 19: a job that may have become claimable hints its name
            self.wake.changed(change.space, change.old, change.new)
        if change.finished and change.new is not None and self.notifier is not None:
            # Before the callback: a record that fails here is retried whole, and the
            # callback's start is as safe to repeat as the notices are.
            self.notifier.ended(change.space, change.new)
        if change.finished and change.new is not None and change.new.get("callback"):
            marked = str(change.new.get("gpk", "")).startswith(keys.CALLBACK_PREFIX)
            # Listed at create; again here (once a function) for a job made before its
            # space's callback partitions were listed, whose retries the clock must find.
            self.spaces.register_callbacks(change.space)
            if not self.deliveries.start(change.space, change.job_id, self.clock.now_ms(), clear_mark=marked):
                return None  # delivered, given up, or the job is gone: a late replay
            return change.space, change.job_id, change.new
        if change.removed and change.old is not None:
            self.jobs.forget(change.space, change.job_id, change.old)
            if change.old.get("callback"):
                self.deliveries.bury(change.space, change.job_id, self.clock.now_ms())
        return None

    def deliver(self, due: list[Due]) -> None:
        """Hand the callbacks these records made due to the sender, which makes their first
        tries (never here: a target that does not answer would hold up the stream); what
        fails there waits for the clock."""
        once = {(target[0], target[1]): target for target in due}  # a record seen twice: one try
        self.outbox.submit(list(once.values()))
