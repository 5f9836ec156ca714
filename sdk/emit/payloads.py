"""Payload types: a job's JSON payload as a pydantic model or a dataclass, and back.

pydantic is not a dependency of the SDK: a model is known by its methods (`model_validate`,
`model_dump`), never imported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar, cast

M = TypeVar("M")


def _is_pydantic(model: Any) -> bool:
    return callable(getattr(model, "model_validate", None)) and callable(getattr(model, "model_dump", None))


def check_model(model: Any) -> None:
    """Refuse a payload type that is neither a pydantic model nor a dataclass."""
    if model is None or _is_pydantic(model) or (isinstance(model, type) and dataclasses.is_dataclass(model)):
        return
    raise TypeError(f"payload: give a pydantic model or a dataclass (a class), not {model!r}")


def parse_payload(model: type[M] | None, payload: Any) -> M:
    """`payload` (JSON, or an instance already) as `model`: pydantic's `model_validate`, or
    the dataclass made from its fields; with no model, as it is."""
    if model is None:
        return cast(M, payload)
    if isinstance(payload, model):
        return payload
    if _is_pydantic(model):
        return cast(M, model.model_validate(payload))  # type: ignore[attr-defined]
    if not isinstance(payload, Mapping):
        raise TypeError(
            f"payload: {model.__name__} takes an object of its fields, not {type(payload).__name__}"
        )
    return model(**payload)


def dump_payload(model: type[Any] | None, payload: Any) -> Any:
    """`payload` as the JSON a job carries, checked against `model` first."""
    if model is None:
        return payload
    value = parse_payload(model, payload)
    if _is_pydantic(model):
        return value.model_dump(mode="json")
    return dataclasses.asdict(value)
