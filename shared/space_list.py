"""`GET /v1/spaces`: the spaces a token may use, a page at a time, with their in-flight counts.

Spaces are listed where the clock finds them (`keys.SPACES`, one item a space, in name
order), so a page is one query from the cursor on. A token limited to some spaces (at most
100) never pages the whole listing: its own spaces are looked up in one batch instead, and
those that exist are paged in memory. Either way each space on the page costs two reads in
one batch (settings and the in-flight count), as `GET /v1/spaces/{space}` answers them.
"""

from __future__ import annotations

import re
from typing import Any

from shared.errors import InvalidArgument
from shared.schema import SPACE_PATTERN
from shared.store.spaces import SpaceStore

_SPACE = re.compile(SPACE_PATTERN)


def page(
    store: SpaceStore, allowed: frozenset[str] | None, *, cursor: str | None, limit: int
) -> dict[str, Any]:
    """`{"spaces": [{"name", "inFlight"}], "cursor"}` for a token whose spaces are `allowed`
    (None: every space). The cursor is the last name shown: a page goes on after it."""
    if cursor is not None and not _SPACE.fullmatch(cursor):
        raise InvalidArgument("cursor: is not a cursor this API gave")
    if allowed is None:
        names, more = store.listed_after(cursor, limit)
    else:
        existing = sorted(store.listed_among(allowed))
        later = [name for name in existing if cursor is None or name > cursor]
        names, more = later[:limit], len(later) > limit
    counts = store.in_flight_of(names)
    return {
        "spaces": [{"name": name, "inFlight": counts[name]} for name in names],
        "cursor": names[-1] if more and names else None,
    }
