"""A job as one look at its item saw it (`Snapshot`), and the looks that come as JSON: the
table's stream records (`JobChange`) and the callback sender's messages (`Snapshot.wire`).

A finished job never changes, so what a stream record or a message carries of it is the
job: the sender and the notices need no read of it, only of the bodies it points at. The
use cases read `Snapshot.job`; the item stays the store's, which reads those bodies
(`JobStore.outcome`, `payloads`) or cleans up after a removed job (`forget_removed`).
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.job import FINAL, Job, JobStatus
from shared.machine import HELD_WHILE_RUNNING
from shared.store import keys
from shared.store.codec import HOLDS, job_from_item
from shared.store.dynamo import Item, deserialize, serialize


@dataclass(frozen=True)
class Snapshot:
    """A job item as one look saw it: a read, a stream record's image, a message's copy."""

    space: str
    item: Item = field(repr=False)
    """The store's: a use case reads `job`."""

    @functools.cached_property
    def job(self) -> Job:
        """The job, without its payload, result and error (`JobStore.outcome` reads them)."""
        return job_from_item(self.space, self.item)

    def wire(self) -> dict[str, Any]:
        """The item as JSON carries it: DynamoDB's JSON, binary values in base64 (as
        Lambda's events carry them)."""
        return {name: _base64(value) for name, value in serialize(self.item).items()}

    @classmethod
    def of_wire(cls, space: str, wire: Mapping[str, Any]) -> Snapshot:
        """The snapshot `wire` carries (a message's, a stream record's image)."""
        return cls(space, image(wire))


@dataclass(frozen=True)
class JobChange:
    """One stream record about a job item: its images as the record carries them (the
    store's, like a snapshot's item), and what the change was."""

    event: str
    space: str
    job_id: str
    old: Item | None
    new: Item | None

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> JobChange | None:
        """The change a stream record shows; None: the record is not about a job item."""
        data = record.get("dynamodb") or {}
        pk = (data.get("Keys") or {}).get("pk", {}).get("S", "")
        if not pk.startswith(keys.JOB_PREFIX):
            return None
        space = pk.split("#")[1]
        job_id = data["Keys"]["sk"]["S"]
        old = image(data["OldImage"]) if data.get("OldImage") else None
        new = image(data["NewImage"]) if data.get("NewImage") else None
        return cls(record.get("eventName", ""), space, job_id, old, new)

    @property
    def name(self) -> str:
        item = self.new if self.new is not None else self.old
        return str((item or {}).get("name", ""))

    @property
    def finished(self) -> bool:
        """This change is the one that finished the job (a record of any other change is not)."""
        return (
            self.new is not None
            and JobStatus(self.new["status"]) in FINAL
            and (self.old is None or JobStatus(self.old["status"]) not in FINAL)
        )

    @property
    def moved(self) -> tuple[str, JobStatus | None, JobStatus | None] | None:
        """(name, status before, status after) when the record changed the job's status,
        or made or removed the job (None for a status it had none of); None otherwise."""
        before = JobStatus(self.old["status"]) if self.old is not None else None
        after = JobStatus(self.new["status"]) if self.new is not None else None
        if before == after:
            return None
        item = self.new if self.new is not None else self.old
        return (str(item["name"]), before, after) if item is not None else None

    @property
    def removed(self) -> bool:
        return self.event == "REMOVE" and self.old is not None

    def became_claimable(self, now_ms: int) -> tuple[str, int] | None:
        """(name, when) if this change made the job claimable (created, released, retried):
        now, or at its ready time; None if it was claimable before or is not now."""
        ready = claimable(self.new, now_ms)
        if ready is None or self.new is None or claimable(self.old, now_ms) is not None:
            return None
        return str(self.new["name"]), ready

    def became_pending(self, now_ms: int) -> tuple[str, int] | None:
        """(name, ready time) if this change made the job claimable, now or later (created,
        released, retried): the ready time its item keeps, from which an unclaimed window
        counts; None as for `became_claimable`."""
        if self.became_claimable(now_ms) is None or self.new is None:
            return None
        return str(self.new["name"]), int(self.new.get("readyAtMs") or now_ms)

    @property
    def freed_room(self) -> str | None:
        """The job's name if this change let go of a slot of its name's `concurrency` or of
        its key's (`perKeyConcurrency`): a job of the name waiting for room may be claimable
        now. Only a job of a name with such a limit (or a key) holds one, so for any other
        this is None, read from the images alone."""
        if self.old is None or not _running_holds(self.old) - _running_holds(self.new):
            return None
        return str(self.old["name"])

    @property
    def finished_job(self) -> Snapshot | None:
        """The job as this change finished it; None: the change did not finish it."""
        return Snapshot(self.space, self.new) if self.finished and self.new is not None else None

    @property
    def removed_job(self) -> Snapshot | None:
        """The job as it was when removed (by retention); None: the change is no removal."""
        return Snapshot(self.space, self.old) if self.removed and self.old is not None else None


def image(wire: Mapping[str, Any]) -> Item:
    """An item image of a record (or a message). Lambda's event is JSON: a binary value
    (`B`, `BS`: a compressed payload, result or error) comes as base64 text, which boto3
    would refuse. And DynamoDB Local's stream writes an empty map as `{}` (GetItem answers
    `{"M": {}}` for the same value), which boto3 refuses too: both spellings are read."""
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


def _base64(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _base64(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_base64(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def _running_holds(item: Item | None) -> set[str]:
    """The holds of an image that are a running job's (`shared.machine.HELD_WHILE_RUNNING`)."""
    held = (item or {}).get(HOLDS) or ()
    return {tag for tag in held if tag.partition(".")[0] in HELD_WHILE_RUNNING}


def claimable(item: Item | None, now_ms: int) -> int | None:
    """When a job item is claimable (pending, in the ready index): now or later; None if
    it is not waiting to be claimed."""
    if item is None or item.get("status") != "PENDING" or not item.get("gsk"):
        return None
    sort = str(item["gsk"])
    if keys.is_due(sort):
        return now_ms
    if sort.startswith(keys.LATER):
        return max(now_ms, int(sort[len(keys.LATER) : len(keys.LATER) + 13]))
    return None
