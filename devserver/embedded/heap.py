"""Garbage collection that stays short with a large table.

With 100,000 jobs the embedded DynamoDB holds a few million objects (items, their values,
the lookups), and each full collection of Python's cyclic garbage collector walks all of
them: seconds of pause, every time a quarter more objects have survived since the last.
None of those objects is part of a reference cycle (a deleted item is freed at once by
reference counting), so walking them finds nothing. After each full collection, the
survivors are moved out of the collector's sight (gc.freeze): the next full collection
walks only what came since.

What is frozen is never collected as a cycle: an object alive then that later becomes
part of unreachable cycle stays. The lookups break their own cycles when they let an item
go (devserver.embedded.partitions), and the little that request threads had in flight at
that moment is all else there is.
"""

from __future__ import annotations

import gc
from typing import Any


def _after_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def keep_collections_short() -> None:
    """Freeze the survivors of each full collection (once per process)."""
    if _after_collection not in gc.callbacks:
        gc.callbacks.append(_after_collection)
