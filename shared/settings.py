"""Space settings as values: a space's `Settings`, and its notification destinations.

They are the store's values (`shared.store.settings`, which alone knows the item they are
read from), named here for the services that read them: a create, the sender of
callbacks and the stream all read settings, and importing these from here leads back to
none of them.
"""

from __future__ import annotations

from shared.store.port import Destination, Kind, Settings

__all__ = ["Destination", "Kind", "Settings"]
