"""Where payloads, results and errors live, by size.

The job item is rewritten on every transition, and DynamoDB charges a write by the
larger of the item before and after, per started KB: so the item must stay small.

| stored JSON | where | why |
| --- | --- | --- |
| fits the room left in the job item, as text | text in the job item | compressing small JSON gains nothing |
| fits that room compressed | zlib bytes in the job item | a typical 1 KB payload stays under 1 KB |
| compressed to 350 KB or less | a side item `B#{space}#{id}` | written once, read once at claim |
| larger (up to the 4 MiB contract) | an S3 object | beyond DynamoDB's 400 KB item |

A result or an error that a report stores outside the job item goes to a place of its
own (`result-3-9f2c41`: attempt, then a random part), and that place is named in the job
item's string set `places` before anything is written there (see `shared.jobs.report`):
so a refused report never writes over the job's value, and retention deletes every
place the set names, whatever became of the reports that wrote them.
"""

from __future__ import annotations

import secrets
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shared.store import keys
from shared.store.dynamo import Dynamo, Item

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

ITEM_BUDGET = 1024 - 240
"""A payload may fill the job item up to this; the rest is kept for what transitions add
(lease and finish times, retention, progress, a small result)."""
RESULT_ROOM = 128
"""A result or an error kept in the job item is at most this (compressed); beyond, a side item."""
SIDE_ITEM_MAX = 350_000
VALUES = ("payload", "result", "error")
PLACES = "places"
"""The job item's string set of every place outside it that a report may have written."""


@dataclass
class Packed:
    """One value, ready to store: attributes for the job item, plus what goes elsewhere."""

    attributes: dict[str, Any]
    size: int
    side_item: Item | None = None
    s3_key: str | None = None
    s3_body: bytes | None = field(default=None, repr=False)
    ref: str | None = None
    """Where it lives outside the job item (`item:result-3-9f2c41`, `s3:...`); None: inside."""
    name: str = ""
    """The job's attribute it is stored under (`result`, `error`, `payload`)."""


def s3_key(space: str, job_id: str, name: str) -> str:
    return f"{space}/{job_id}/{name}"


def pack(
    space: str, job_id: str, name: str, raw: bytes, *, room: int = RESULT_ROOM, attempt: int | None = None
) -> Packed:
    """Choose the cheapest home for `raw` (UTF-8 JSON or text) under attribute `name`,
    given `room` bytes left in the job item.

    A result or an error kept outside the job item (given the `attempt` that reported
    it) gets a place no other report uses (`result-3-9f2c41`): two reports for one attempt
    never write to the same place, so the one that loses cannot replace the winner's."""
    if len(raw) <= room:
        return Packed({name: raw.decode()}, len(raw), name=name)
    packed = zlib.compress(raw, 6)
    if len(packed) <= room:
        return Packed({f"{name}Z": packed}, len(raw), name=name)
    place = name if attempt is None else f"{name}-{attempt}-{secrets.token_hex(3)}"
    suffix = "" if attempt is None else f":{place}"
    if len(packed) <= SIDE_ITEM_MAX:
        side = keys.blob(space, job_id, place) | {"data": packed}
        ref = f"item{suffix}"
        return Packed({f"{name}Ref": ref}, len(raw), side_item=side, ref=ref, name=name)
    ref = f"s3{suffix}"
    return Packed(
        {f"{name}Ref": ref}, len(raw), s3_key=s3_key(space, job_id, place), s3_body=raw, ref=ref, name=name
    )


def _parse(ref: str, name: str) -> tuple[str | None, str]:
    """("item" | "s3" | None, place) of a reference; a bare kind is the value's own place."""
    kind, _, place = ref.partition(":")
    return (kind or None), (place or name)


def _where(item: Item, name: str) -> tuple[str | None, str]:
    """Where a value kept outside the job item lives: ("item" | "s3" | None, its place)."""
    return _parse(str(item.get(f"{name}Ref") or ""), name)


def replacing(name: str, packed: Packed) -> dict[str, Any]:
    """Job item attributes that store `packed` under `name`, removing any earlier value's."""
    return {name: None, f"{name}Z": None, f"{name}Ref": None} | packed.attributes


class Blobs:
    def __init__(self, db: Dynamo, s3: S3Client | None, bucket: str | None) -> None:
        self.db = db
        self.s3 = s3
        self.bucket = bucket

    def store(self, values: list[Packed]) -> None:
        """Write what lives outside the job item; call before the job item that points at
        it. (A new job's payload side item is not written here but in the job's own
        transaction: `JobStore.insert`.)"""
        side = [v.side_item for v in values if v.side_item]
        if side:
            self.db.batch_put(side)
        for value in values:
            if value.s3_key is not None:
                if self.s3 is None or self.bucket is None:
                    raise RuntimeError("no S3 bucket is configured for values over 350 KB")
                self.s3.put_object(Bucket=self.bucket, Key=value.s3_key, Body=value.s3_body or b"")

    def read_many(self, space: str, wanted: list[tuple[Item, str]]) -> list[bytes | None]:
        """The stored bytes of each (job item, attribute); one batched read for side items."""
        out: list[bytes | None] = [None] * len(wanted)
        side: dict[tuple[str, str], int] = {}
        for i, (item, name) in enumerate(wanted):
            kind, place = _where(item, name)
            if name in item:
                out[i] = str(item[name]).encode()
            elif f"{name}Z" in item:
                out[i] = zlib.decompress(item[f"{name}Z"])
            elif kind == "item":
                side[(item["sk"], place)] = i
            elif kind == "s3":
                out[i] = self._s3_get(s3_key(space, item["sk"], place))
        if side:
            # Side items never change once written, and are written no later than the job
            # that points at them: an eventually consistent read (half the price) almost
            # always finds them, and a strong read fetches the few it missed.
            wanted_keys = [keys.blob(space, job_id, place) for job_id, place in side]
            found = self.db.batch_get(wanted_keys, consistent=False)
            seen = {(row["pk"], row["sk"]) for row in found}
            missed = [k for k in wanted_keys if (k["pk"], k["sk"]) not in seen]
            if missed:
                found += self.db.batch_get(missed, consistent=True)
            for row in found:
                job_id = row["pk"].rsplit("#", 1)[1]
                out[side[(job_id, row["sk"])]] = zlib.decompress(row["data"])
        return out

    def _s3_get(self, key: str) -> bytes:
        if self.s3 is None or self.bucket is None:
            raise RuntimeError("no S3 bucket is configured")
        return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def delete(self, space: str, job_id: str, item: Item) -> None:
        """Remove every side item and S3 object of a job's values (gone already is fine):
        the ones the item points at, and every place its `places` set names (values of
        earlier attempts, of refused reports, of reports killed half way)."""
        places = {_where(item, name) for name in VALUES if item.get(f"{name}Ref")}
        places |= {_parse(str(ref), "") for ref in item.get(PLACES) or ()}
        self._remove(space, job_id, places)

    def discard(self, space: str, job_id: str, values: list[Packed]) -> None:
        """Remove values a refused report stored (their places stay named for retention)."""
        self._remove(space, job_id, {_parse(v.ref, "") for v in values if v.ref})

    def _remove(self, space: str, job_id: str, places: set[tuple[str | None, str]]) -> None:
        side = [keys.blob(space, job_id, place) for kind, place in sorted(places, key=str) if kind == "item"]
        if side:
            self.db.batch_delete(side)
        for kind, place in sorted(places, key=str):
            if kind == "s3" and self.s3 is not None and self.bucket is not None:
                self.s3.delete_object(Bucket=self.bucket, Key=s3_key(space, job_id, place))
