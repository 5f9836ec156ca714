"""`GET /v1/spaces`: the spaces a token may use, a page at a time, with their in-flight counts.

Spaces are listed where the clock finds them (`keys.SPACES`, one item a space, in name
order), so a page is one query from the cursor on. A token limited to some spaces (at most
100) never pages the whole listing: its own spaces are looked up in one batch instead, and
those that exist are paged in memory. Either way each space on the page costs two reads in
one batch (settings and the in-flight count), as `GET /v1/spaces/{space}` answers them.
A page is a value (`SpacePage`), shown by `shared.render.spaces`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.errors import InvalidArgument
from shared.schema import SPACE_PATTERN
from shared.store.port import SpaceListing

_SPACE = re.compile(SPACE_PATTERN)


@dataclass(frozen=True)
class ListedSpace:
    name: str
    in_flight: int
    """Unfinished jobs: its `maxInFlight` count under a cap, else the stream's count."""


@dataclass(frozen=True)
class SpacePage:
    spaces: list[ListedSpace]
    """In name order."""
    cursor: str | None
    """The last name shown, where the next page goes on (None: this is the last page)."""


def page(store: SpaceListing, allowed: frozenset[str] | None, *, cursor: str | None, limit: int) -> SpacePage:
    """The spaces a token whose spaces are `allowed` (None: every space) may use, after
    `cursor` (the last name shown), with their in-flight counts."""
    if cursor is not None and not _SPACE.fullmatch(cursor):
        raise InvalidArgument("cursor: is not a cursor this API gave")
    if allowed is None:
        names, more = store.listed_after(cursor, limit)
    else:
        existing = sorted(store.listed_among(allowed))
        later = [name for name in existing if cursor is None or name > cursor]
        names, more = later[:limit], len(later) > limit
    counts = store.in_flight_of(names)
    return SpacePage(
        [ListedSpace(name, counts[name]) for name in names], names[-1] if more and names else None
    )
