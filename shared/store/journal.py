"""Log lines and events: kept in order beside their job, read a page at a time.

A report's lines go into one page item (more only if they pass 300 KB), numbered from
the job's line counter, which the report's own conditional write advanced: so lines
keep their order across reports and workers, and a stale worker's lines are never kept.

Read back as values (`Line`, `Event`): what a line's metadata or an event was sent as
is stored as JSON text, and comes back parsed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.store import keys
from shared.store.dynamo import Dynamo

PAGE_BYTES = 300_000


@dataclass(frozen=True)
class Line:
    """One log line, numbered in its job's order."""

    seq: int
    level: str
    message: str
    at_ms: int
    source: str | None = None
    metadata: Any = None
    """As the worker sent it (None: it sent none; a null is not kept)."""


@dataclass(frozen=True)
class Event:
    """One event, numbered in its job's order."""

    seq: int
    at_ms: int
    event: Any
    """As the worker sent it."""


class Journal:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def append_lines(self, space: str, job_id: str, first: int, lines: list[dict[str, Any]]) -> None:
        pages: list[dict[str, Any]] = []
        start, size = first, 0
        current: list[dict[str, Any]] = []
        for line in lines:
            line_size = len(json.dumps(line, ensure_ascii=False).encode()) + 16
            if current and size + line_size > PAGE_BYTES:
                pages.append({"pk": keys.lines(space, job_id), "sk": keys.line_page(start), "lines": current})
                start, size, current = start + len(current), 0, []
            current.append(line)
            size += line_size
        if current:
            pages.append({"pk": keys.lines(space, job_id), "sk": keys.line_page(start), "lines": current})
        self.db.batch_put(pages)

    def lines(self, space: str, job_id: str, after: int, limit: int) -> list[Line]:
        """Lines numbered `after` and up, at most `limit`, in order."""
        pk = keys.lines(space, job_id)
        # The page holding line `after` starts at or before it.
        first, _ = self.db.query(
            "pk = :pk AND sk <= :at", vals={":pk": pk, ":at": keys.line_page(after)}, forward=False, limit=1
        )
        start_sk = first[0]["sk"] if first else keys.line_page(0)
        out: list[Line] = []
        start = None
        while len(out) < limit:
            rows, start = self.db.query(
                "pk = :pk AND sk >= :from", vals={":pk": pk, ":from": start_sk}, start=start, consistent=True
            )
            for row in rows:
                base = int(row["sk"])
                for offset, line in enumerate(row["lines"]):
                    if base + offset >= after and len(out) < limit:
                        out.append(_line(base + offset, line))
            if start is None:
                break
        return out

    def put_event(self, space: str, job_id: str, seq: int, body: str, at_ms: int) -> None:
        self.db.put({"pk": keys.events(space, job_id), "sk": keys.event(seq), "body": body, "atMs": at_ms})

    def events(self, space: str, job_id: str, after: int, limit: int) -> list[Event]:
        """Events numbered `after` and up, at most `limit`, in order."""
        rows, _ = self.db.query(
            "pk = :pk AND sk >= :from",
            vals={":pk": keys.events(space, job_id), ":from": keys.event(after)},
            limit=limit,
            consistent=True,
        )
        return [Event(int(r["sk"]), r["atMs"], json.loads(r["body"])) for r in rows]


def _line(seq: int, stored: dict[str, Any]) -> Line:
    metadata = stored.get("metadata")
    return Line(
        seq,
        level=stored["level"],
        message=stored["message"],
        at_ms=stored["atMs"],
        source=stored.get("source"),
        metadata=json.loads(metadata) if metadata is not None else None,
    )
