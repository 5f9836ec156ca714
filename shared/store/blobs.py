"""Where payloads, results and errors live, by size.

The job item is rewritten on every transition, and DynamoDB charges a write by the
larger of the item before and after, per started KB: so the item must stay small.

| stored JSON | where | why |
| --- | --- | --- |
| fits the room left in the job item, as text | text in the job item | compressing small JSON gains nothing |
| fits that room compressed | zlib bytes in the job item | a typical 1 KB payload stays under 1 KB |
| compressed to 350 KB or less | a side item `B#{space}#{id}` | written once, read once at claim |
| larger (up to the 4 MiB contract) | an S3 object | beyond DynamoDB's 400 KB item |
"""

from __future__ import annotations

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


@dataclass
class Packed:
    """One value, ready to store: attributes for the job item, plus what goes elsewhere."""

    attributes: dict[str, Any]
    size: int
    side_item: Item | None = None
    s3_key: str | None = None
    s3_body: bytes | None = field(default=None, repr=False)


def s3_key(space: str, job_id: str, name: str) -> str:
    return f"{space}/{job_id}/{name}"


def pack(
    space: str, job_id: str, name: str, raw: bytes, *, room: int = RESULT_ROOM, attempt: int | None = None
) -> Packed:
    """Choose the cheapest home for `raw` (UTF-8 JSON or text) under attribute `name`,
    given `room` bytes left in the job item.

    A result or an error kept outside the job item is stored under the attempt that
    reported it (`result-3`): it is written before the conditional write that decides
    whether the report counts, so a stale attempt's value never lands where the job's
    own value is."""
    if len(raw) <= room:
        return Packed({name: raw.decode()}, len(raw))
    packed = zlib.compress(raw, 6)
    if len(packed) <= room:
        return Packed({f"{name}Z": packed}, len(raw))
    place = name if attempt is None else f"{name}-{attempt}"
    suffix = "" if attempt is None else f":{place}"
    if len(packed) <= SIDE_ITEM_MAX:
        side = keys.blob(space, job_id, place) | {"data": packed}
        return Packed({f"{name}Ref": f"item{suffix}"}, len(raw), side_item=side)
    return Packed({f"{name}Ref": f"s3{suffix}"}, len(raw), s3_key=s3_key(space, job_id, place), s3_body=raw)


def _where(item: Item, name: str) -> tuple[str | None, str]:
    """Where a value kept outside the job item lives: ("item" | "s3" | None, its place)."""
    kind, _, place = str(item.get(f"{name}Ref") or "").partition(":")
    return (kind or None), (place or name)


def replacing(name: str, packed: Packed) -> dict[str, Any]:
    """Job item attributes that store `packed` under `name`, removing any earlier value's."""
    return {name: None, f"{name}Z": None, f"{name}Ref": None} | packed.attributes


class Blobs:
    def __init__(self, db: Dynamo, s3: S3Client | None, bucket: str | None) -> None:
        self.db = db
        self.s3 = s3
        self.bucket = bucket

    def store(self, values: list[Packed]) -> None:
        """Write what lives outside the job item; call before the job item that points at it."""
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
            # Side items never change once written, and are written before the job that
            # points at them: an eventually consistent read (half the price) almost always
            # finds them, and a strong read fetches the few it missed.
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
        """Remove the side items and S3 objects of a job's values (gone already is fine).

        A job that ever failed may have values of earlier attempts (their errors, a stale
        worker's result) that the item no longer names: its whole partition goes. Large
        values in S3 that no item names are left to the bucket's lifecycle rule."""
        places = [_where(item, name) for name in VALUES]
        side = [keys.blob(space, job_id, place) for kind, place in places if kind == "item"]
        if item.get("failures", 0) > 0:
            rows, _ = self.db.query(
                "pk = :pk", vals={":pk": keys.blob(space, job_id, "-")["pk"]}, consistent=True
            )
            side = [{"pk": row["pk"], "sk": row["sk"]} for row in rows]
        if side:
            self.db.batch_delete(side)
        for kind, place in places:
            if kind == "s3" and self.s3 is not None and self.bucket is not None:
                self.s3.delete_object(Bucket=self.bucket, Key=s3_key(space, job_id, place))
