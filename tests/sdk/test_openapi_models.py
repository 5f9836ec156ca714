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
    (models.Job, ["Job"], {"backoff": "backoff,backoffMs"}),  # one Backoff: its first wait and shape
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
    (models.Callback, ["Callback"], {}),
    (models.Delivery, ["Delivery"], {}),
    (schedules.Schedule, ["Schedule"], {}),
    (schedules.LastRun, ["LastRun"], {}),
    (
        spaces.SpaceSettings,
        ["Space"],
        {"backoff": "backoff,backoffMs", "webhook_secret_set": "webhookSecret"},
    ),
    (spaces.JobDefaults, ["JobDefaults"], {"backoff": "backoff,backoffMs"}),
    # Requests the SDK sends.
    (models.NewJob, ["NewJob"], {"backoff": "backoff,backoffMs"}),
    (models.Backoff, ["BackoffSpec"], {"first": ""}),  # `first` is sent beside it, as `backoffMs`
    (models.Callback, ["CallbackSpec"], {"delivery": ""}),  # read back only
    (names.Rate, ["RateSpec"], {}),
    (schedules.JobTemplate, ["JobTemplate"], {"backoff": "backoff,backoffMs"}),
    (spaces.JobDefaults, ["JobDefaultsSpec"], {"backoff": "backoff,backoffMs"}),
]


def camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def properties(*names: str) -> set[str]:
    schemas = openapi.document()["components"]["schemas"]
    return {p for name in names for p in schemas[name]["properties"]}


def sdk_fields(model: type[Any], renamed: dict[str, str], schemas: list[str]) -> set[str]:
    """The SDK's fields under the API's names: a time the SDK holds as a `timedelta` or a
    `datetime` (`timeout`, `run_at`) is the API's field in ms (`timeoutMs`, `runAtMs`)."""
    known = properties(*schemas)
    shown: set[str] = set()
    for f in dataclasses.fields(model):
        if f.name == "raw":
            continue
        name = renamed.get(f.name, camel(f.name))
        for api in name.split(","):
            if api:
                shown.add(api if api in known or f"{api}Ms" not in known else f"{api}Ms")
    return shown


@pytest.mark.parametrize(("model", "schemas", "renamed"), PAIRS, ids=lambda p: getattr(p, "__name__", ""))
def test_each_sdk_model_has_the_documents_fields(
    model: type[Any], schemas: list[str], renamed: dict[str, str]
) -> None:
    assert sdk_fields(model, renamed, schemas) == properties(*schemas)


def test_a_minted_token_is_a_token_and_its_secret() -> None:
    assert properties("MintedToken") == properties("Token") | {"token"}
    assert {f.name for f in dataclasses.fields(models.MintedToken)} == {"token", "secret"}


def test_the_sdks_enumerations_are_the_documents_in_lower_case() -> None:
    schemas = openapi.document()["components"]["schemas"]
    statuses = schemas["JobSummary"]["properties"]["status"]["enum"]
    assert {s.lower() for s in statuses} == set(models.JobStatus.__args__)
    assert {s.lower() for s in schemas["Line"]["properties"]["level"]["enum"]} == set(models.LOG_LEVELS)
    assert {s.lower() for s in schemas["Delivery"]["properties"]["state"]["enum"]} == set(
        models.DeliveryState.__args__
    )
    described = inspect.getsource(models.Rejection)  # the reasons are listed in its docstring
    for reason in schemas["Rejection"]["properties"]["reason"]["enum"]:
        assert f"`{reason.lower()}`" in described, reason
