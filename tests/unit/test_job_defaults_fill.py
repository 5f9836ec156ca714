"""`shared.defaults.fill` on its own: which left-out options a name's defaults fill, and
how it will treat the job fields other branches add (`guarantee`, `expiresAtMs` /
`expiresInMs`), shown with a model that has them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from shared.defaults import fill
from shared.schema import NewJob, parse


class LaterJob(NewJob):
    """`NewJob` as it will be once the guarantee and deadline fields are merged."""

    guarantee: Literal["AT_LEAST_ONCE", "AT_MOST_ONCE"] = "AT_LEAST_ONCE"
    expiresAtMs: Annotated[int, Field(ge=0)] | None = None
    expiresInMs: Annotated[int, Field(ge=1)] | None = None


def later(**fields: Any) -> LaterJob:
    return parse(LaterJob, {"name": "n", **fields})


def test_nothing_stored_leaves_the_request_as_it_is() -> None:
    request = parse(NewJob, {"name": "n", "priority": 3})
    assert fill(request, None) is request
    assert fill(request, {}) is request
    assert fill(request, {"priority": 9}) is request, "sent: the job's own value wins"


def test_guarantee_and_deadline_fill_once_the_model_has_them() -> None:
    filled = fill(later(), {"guarantee": "AT_MOST_ONCE", "expiresInMs": 60_000})
    assert (filled.guarantee, filled.expiresInMs) == ("AT_MOST_ONCE", 60_000)
    assert isinstance(filled, LaterJob)
    own = fill(later(guarantee="AT_LEAST_ONCE"), {"guarantee": "AT_MOST_ONCE"})
    assert own.guarantee == "AT_LEAST_ONCE", "a guarantee sent, even the default one, wins"


def test_a_deadline_or_start_time_sent_another_way_keeps_the_default_out() -> None:
    stored = {"expiresInMs": 60_000, "delayMs": 5_000}
    filled = fill(later(expiresAtMs=123, runAtMs=456), stored)
    assert (filled.expiresInMs, filled.delayMs) == (None, None)
    assert (filled.expiresAtMs, filled.runAtMs) == (123, 456)


def test_backoff_is_filled_part_by_part() -> None:
    filled = fill(later(backoff={"kind": "linear"}), {"backoff": {"kind": "constant", "maxMs": 9}})
    assert filled.backoff is not None
    assert (filled.backoff.kind, filled.backoff.maxMs, filled.backoff.jitter) == ("linear", 9, None)
