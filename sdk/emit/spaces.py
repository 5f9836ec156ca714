"""`emit.spaces`: read and change a space's settings (an admin token).

Settings are given as keyword arguments in Python spelling (`max_in_flight=10`) and
answered as the API's JSON, since they are few, flat, and documented there by name.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from emit.transport import Transport


class Spaces:
    def __init__(self, transport: Transport, space: str | None) -> None:
        self._transport = transport
        self._space = space

    def _path(self, space: str | None) -> str:
        name = space or self._space
        if not name:
            raise ValueError("no space: pass space= to Emit(), or set EMIT_SPACE")
        return f"/v1/spaces/{quote(name, safe='')}"

    def get(self, space: str | None = None) -> dict[str, Any]:
        """The settings in force, with `inFlight` (the space's unfinished jobs counted against
        its `maxInFlight`; None while it has none)."""
        answer: dict[str, Any] = self._transport.call("GET", self._path(space), repeatable=True)
        return answer

    def update(self, space: str | None = None, **settings: Any) -> dict[str, Any]:
        """Change settings, e.g. `update(max_in_flight=100, webhook_secret="...")`; None puts
        a setting back to its default (for `max_in_flight` and `unclaimed_ms`: off)."""
        body = {_camel(name): value for name, value in settings.items()}
        answer: dict[str, Any] = self._transport.call("PATCH", self._path(space), body=body, repeatable=True)
        return answer


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)
