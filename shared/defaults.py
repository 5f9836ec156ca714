"""Defaults per job name (a space's `jobDefaults`): what a create leaves out, filled in.

They are laid over the create's request before anything else looks at it, so the
create's own checks and resolution (a start time a year ahead at most, a deadline from
`expiresInMs`, the space's settings for what is still missing) treat a default exactly
as if the creator had sent it. That gives the contract's order with no second code path:
the job's own field, then `jobDefaults` for its name, then the space's settings, then the
built-in default. Stored on the name's item (beside its policy), in the API's spelling,
holding only the fields someone set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.errors import InvalidArgument
from shared.schema import JobDefaultsSpec, NewJob

FIELDS = tuple(JobDefaultsSpec.model_fields)
"""The options a name may default, in the API's spelling and the answer's order."""

EXCLUSIVE = {"delayMs": "runAtMs", "expiresInMs": "expiresAtMs"}
"""A default not applied when the job sends the field it excludes: the creator's own
choice of start time or deadline wins, whichever way it was given."""


def patch_fields(patch: JobDefaultsSpec) -> dict[str, Any]:
    """The fields a PATCH sent, as they are stored; None: remove the field."""
    out: dict[str, Any] = {}
    for name in FIELDS:
        if name in patch.model_fields_set:
            value = getattr(patch, name)
            if hasattr(value, "model_dump"):
                value = value.model_dump(exclude_none=True) or None  # `backoff: {}` sets nothing
            out[name] = value
    return out


def shown(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A name's stored defaults as the API shows them, in `FIELDS` order."""
    return {f: stored[f] for f in FIELDS if stored.get(f) is not None}


def fill(request: NewJob, stored: Mapping[str, Any] | None) -> NewJob:
    """`request` with the options it left out (absent or null) taken from `stored`.

    Typed by the request's own model, so the filled request is the one a creator sending
    these values would have made. A field that model does not have is skipped (the
    defaults schema may accept it first). `backoff` is filled part by part: a job's
    `{"kind": "linear"}` keeps the name's `maxMs`."""
    if not stored:
        return request
    model = type(request)
    sent = request.model_fields_set
    missing: dict[str, Any] = {}
    for name, value in stored.items():
        if value is None or name not in model.model_fields:
            continue
        excluded = EXCLUSIVE.get(name)
        if excluded is not None and getattr(request, excluded, None) is not None:
            continue
        if name == "backoff" and request.backoff is not None:
            missing[name] = {**value, **request.backoff.model_dump(exclude_none=True)}
        elif name not in sent or getattr(request, name) is None:
            missing[name] = value
    if not missing:
        return request
    typed = model.model_validate({"name": request.name, **missing})
    return request.model_copy(update={name: getattr(typed, name) for name in missing})


def check(name: str, merged: Mapping[str, Any]) -> None:
    """Refuse defaults (a name's, as they would stand after a PATCH) that a create sending
    nothing else could not satisfy, naming `jobDefaults.<name>.<field>`. Each field already
    has the job field's bounds; the one rule of a create that joins two of them is that a
    deadline comes after the job's first time (`expiresInMs` past `delayMs`)."""
    delay, expires = merged.get("delayMs"), merged.get("expiresInMs")
    if delay is not None and expires is not None and expires <= delay:
        raise InvalidArgument(
            f"jobDefaults.{name}.expiresInMs: must be more than jobDefaults.{name}.delayMs ({delay}):"
            " a job's deadline must be later than it can first run"
        )


def filled(before: NewJob, after: NewJob) -> frozenset[str]:
    """The fields `fill` took from the name's defaults (for messages: "from jobDefaults")."""
    return frozenset(f for f in FIELDS if getattr(before, f, None) != getattr(after, f, None))
