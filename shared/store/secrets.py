"""Secrets the service keeps for itself, made on first use and never changed.

A secret is 32 random bytes in an item of its own. The first process that needs one
writes it with a conditional put; a process that loses that race reads the winner's, so
every function everywhere ends up with the same bytes without any deploy-time step (and
`cdk synth` needs no secret at all). A process reads each secret once and keeps it.
"""

from __future__ import annotations

import contextlib
import secrets
import threading

from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo


class ServiceSecrets:
    def __init__(self, db: Dynamo) -> None:
        self.db = db
        self._kept: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def get(self, purpose: str, *, create: bool) -> bytes | None:
        """The secret for `purpose`; made now if there is none yet and `create`, else None."""
        kept = self._kept.get(purpose)
        if kept is not None:
            return kept
        with self._lock:
            item = self.db.get(keys.service_secret(purpose), consistent=True)
            if item is None and create:
                # Another process may have made it first: then theirs is the one.
                with contextlib.suppress(ConditionFailed):
                    self.db.put(
                        keys.service_secret(purpose) | {"secret": secrets.token_hex(32)},
                        condition="attribute_not_exists(pk)",
                    )
                item = self.db.get(keys.service_secret(purpose), consistent=True)
            if item is None:
                return None
            value = bytes.fromhex(item["secret"])
            self._kept[purpose] = value
            return value
