"""The SDK's models against the OpenAPI document: each reads (or sends) exactly the fields the
document gives the same answer (or request), under the SDK's Python names."""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

import pytest
from emit import models, names, schedules, spaces

from shared import openapi

PAIRS = [  # SDK model, the document's schema (several for a union), and SDK fields named otherwise
    (models.Created, ["Created"], {}),
    (models.Job, ["Job"], {}),
    (models.Progress, ["Progress"], {}),
    (models.Line, ["Line"], {}),
    (models.Event, ["Event"], {"data": "event"}),
    (models.Outcome, ["Applied", "Rejected"], {}),
    (models.Rejection, ["Rejection"], {}),
    (models.Retried, ["Retried", "Rejected"], {}),
    (models.Claimed, ["Claimed"], {}),
    (models.WaitingOn, ["WaitingOn"], {}),
    (names.Policy, ["NamePolicy"], {}),
    (names.NameDiagnostics, ["NameDiagnostics"], {}),
    (names.Rate, ["Rate"], {}),
    (models.Token, ["Token"], {}),
    (models.FollowLink, ["FollowLink"], {}),
    (models.Fired, ["Fired"], {}),
    (schedules.Schedule, ["Schedule"], {}),
    (schedules.LastRun, ["LastRun"], {}),
    (spaces.JobDefaults, ["JobDefaults"], {}),
    # Requests the SDK sends.
    (models.NewJob, ["NewJob"], {}),
    (models.Backoff, ["BackoffSpec"], {}),
    (models.Callback, ["CallbackSpec"], {}),
    (names.Rate, ["RateSpec"], {}),
    (schedules.JobTemplate, ["JobTemplate"], {}),
    (spaces.JobDefaults, ["JobDefaultsSpec"], {}),
]


def camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def properties(*names: str) -> set[str]:
    schemas = openapi.document()["components"]["schemas"]
    return {p for name in names for p in schemas[name]["properties"]}


def sdk_fields(model: type[Any], renamed: dict[str, str]) -> set[str]:
    return {renamed.get(f.name, camel(f.name)) for f in dataclasses.fields(model) if f.name != "raw"}


@pytest.mark.parametrize(("model", "schemas", "renamed"), PAIRS, ids=lambda p: getattr(p, "__name__", ""))
def test_each_sdk_model_has_the_documents_fields(
    model: type[Any], schemas: list[str], renamed: dict[str, str]
) -> None:
    assert sdk_fields(model, renamed) == properties(*schemas)


def test_a_minted_token_is_a_token_and_its_secret() -> None:
    assert properties("MintedToken") == properties("Token") | {"token"}
    assert {f.name for f in dataclasses.fields(models.MintedToken)} == {"token", "secret"}


def test_the_sdks_enumerations_are_the_documents_in_lower_case() -> None:
    schemas = openapi.document()["components"]["schemas"]
    statuses = schemas["JobSummary"]["properties"]["status"]["enum"]
    assert {s.lower() for s in statuses} == set(models.JobStatus.__args__)
    assert {s.lower() for s in schemas["Line"]["properties"]["level"]["enum"]} == set(models.LOG_LEVELS)
    described = inspect.getsource(models.Rejection)  # the reasons are listed in its docstring
    for reason in schemas["Rejection"]["properties"]["reason"]["enum"]:
        assert f"`{reason.lower()}`" in described, reason
