"""`emit.spaces`: read and change a space's settings (an admin token).

Settings are given as keyword arguments in Python spelling (`max_in_flight=10`) and
answered as the API's JSON, since they are few, flat, and documented there by name. A
value with a `to_api()` (a `Backoff`, a `JobDefaults`) is sent as that, also inside a
mapping, so a setting with a shape of its own gets a small class rather than a helper.
Defaults per job name have helpers of their own (`job_defaults`, `set_job_defaults`,
`clear_job_defaults`): their map is keyed by job name, which stays as written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, cast
from urllib.parse import quote

from emit.models import Backoff
from emit.transport import Transport

Guarantee = Literal["at_least_once", "at_most_once"]


@dataclass(frozen=True)
class JobDefaults:
    """Options a job name's jobs take when their creator leaves them out (a space's
    `jobDefaults`); None: not set here (the space's setting, or the built-in default)."""

    priority: int | None = None
    max_attempts: int | None = None
    timeout_ms: int | None = None
    backoff_ms: int | None = None
    backoff: Backoff | None = None
    guarantee: Guarantee | None = None
    concurrency_key: str | None = None
    delay_ms: int | None = None
    """Not applied to a job created with `run_at_ms`."""
    expires_in_ms: int | None = None
    """Not applied to a job created with an `expires_at`."""

    def to_api(self) -> dict[str, Any]:
        """Every field, a None one as null: sent, it makes the name's defaults exactly these."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Backoff):
                value = value.to_api()
            elif f.name == "guarantee" and value is not None:
                value = str(value).upper()
            out[_camel(f.name)] = value
        return out

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> JobDefaults:
        backoff = data.get("backoff")
        guarantee = data.get("guarantee")
        return cls(
            priority=data.get("priority"),
            max_attempts=data.get("maxAttempts"),
            timeout_ms=data.get("timeoutMs"),
            backoff_ms=data.get("backoffMs"),
            backoff=(
                Backoff(kind=backoff.get("kind"), max_ms=backoff.get("maxMs"), jitter=backoff.get("jitter"))
                if backoff
                else None
            ),
            guarantee=cast(Guarantee, str(guarantee).lower()) if guarantee else None,
            concurrency_key=data.get("concurrencyKey"),
            delay_ms=data.get("delayMs"),
            expires_in_ms=data.get("expiresInMs"),
        )


@dataclass(frozen=True)
class SpaceEntry:
    """A space the token may use (`Spaces.list`)."""

    name: str
    in_flight: int
    """Its unfinished jobs: exact under a `maxInFlight`, else the service's count (a few
    seconds behind)."""


class Spaces:
    def __init__(self, transport: Transport, space: str | None) -> None:
        self._transport = transport
        self._space = space

    def _path(self, space: str | None) -> str:
        name = space or self._space
        if not name:
            raise ValueError("no space: pass space= to Emit(), or set EMIT_SPACE")
        return f"/v1/spaces/{quote(name, safe='')}"

    def list(self, *, limit: int | None = None, page_size: int = 100) -> Iterator[SpaceEntry]:
        """The spaces the token may use (a `read` token's own spaces, or every space), in name
        order, a page at a time as it is iterated; `limit` stops after that many."""
        cursor: str | None = None
        left = limit
        while left is None or left > 0:
            size = page_size if left is None else min(page_size, left)
            params: dict[str, str | int] = {"limit": size} | ({"cursor": cursor} if cursor else {})
            page = self._transport.call("GET", "/v1/spaces", params=params, repeatable=True)
            for raw in page["spaces"]:
                yield SpaceEntry(name=raw["name"], in_flight=raw["inFlight"])
            if left is not None:
                left -= len(page["spaces"])
            cursor = page.get("cursor")
            if cursor is None or not page["spaces"]:
                return

    def get(self, space: str | None = None) -> dict[str, Any]:
        """The settings in force, with `inFlight` (the space's unfinished jobs counted against
        its `maxInFlight`; None while it has none)."""
        answer: dict[str, Any] = self._transport.call("GET", self._path(space), repeatable=True)
        return answer

    def update(self, space: str | None = None, **settings: Any) -> dict[str, Any]:
        """Change settings, e.g. `update(max_in_flight=100, webhook_secret="...")`; None puts
        a setting back to its default (for `max_in_flight` and `unclaimed_ms`: off)."""
        body = {_camel(name): _api(value) for name, value in settings.items()}
        answer: dict[str, Any] = self._transport.call("PATCH", self._path(space), body=body, repeatable=True)
        return answer

    def notify_on_failure(self, name: str | None, *, space: str | None = None) -> dict[str, Any]:
        """Make a job of `name` for each job of the space that ends failed or stalled (its
        notice as the payload); None: no more failure notices."""
        return self.update(space, on_failure={"name": name} if name is not None else None)

    def notify_on_settled(
        self,
        name: str | None,
        statuses: Sequence[str] = ("completed", "failed", "cancelled", "stalled"),
        *,
        space: str | None = None,
    ) -> dict[str, Any]:
        """Make a job of `name` for each job of the space that ends in one of `statuses`;
        None: no more settled notices."""
        value = {"name": name, "statuses": [s.upper() for s in statuses]} if name is not None else None
        return self.update(space, on_settled=value)

    def job_defaults(self, space: str | None = None) -> dict[str, JobDefaults]:
        """Each job name's defaults, by name (names without any are left out)."""
        return {n: JobDefaults.from_api(d) for n, d in self.get(space)["jobDefaults"].items()}

    def set_job_defaults(self, name: str, defaults: JobDefaults, *, space: str | None = None) -> JobDefaults:
        """Make `name`'s defaults exactly `defaults` (a field left None is unset), e.g.
        `set_job_defaults("mail", JobDefaults(max_attempts=10, priority=5))`. Jobs created
        after this take them for the options their creator leaves out."""
        answer = self.update(space, job_defaults={name: defaults})
        return JobDefaults.from_api(answer["jobDefaults"].get(name, {}))

    def clear_job_defaults(self, name: str | None = None, *, space: str | None = None) -> None:
        """Remove `name`'s defaults, or every name's (None)."""
        self.update(space, job_defaults={name: None} if name is not None else None)


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def _api(value: Any) -> Any:
    """A setting's value as the API takes it: `to_api()` where there is one."""
    if hasattr(value, "to_api"):
        return value.to_api()
    if isinstance(value, Mapping):
        return {k: _api(v) for k, v in value.items()}
    return value
