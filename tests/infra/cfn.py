"""Reading a synthesized template where `aws_cdk.assertions` has no question for it:
following references from a route to its function, from a function to its policies."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True)
class Synthesized:
    outdir: Path
    templates: dict[str, Json]
    """Stack name -> its template."""
    failure: str | None
    """cdk-nag's report when the synthesis failed its checks."""


def resources(template: Json, kind: str) -> dict[str, Json]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def referenced(value: Any) -> str:
    """The logical id in a `{"Ref": id}` or `{"Fn::GetAtt": [id, attribute]}`."""
    if "Ref" in value:
        return str(value["Ref"])
    return str(value["Fn::GetAtt"][0])


def route_targets(template: Json) -> dict[str, str]:
    """Route key ("POST /v1/...") -> the logical id of the function it invokes."""
    integrations = resources(template, "AWS::ApiGatewayV2::Integration")
    out = {}
    for route in http_only(template, resources(template, "AWS::ApiGatewayV2::Route")).values():
        parts = route["Properties"]["Target"]["Fn::Join"][1]
        assert parts[0] == "integrations/"
        integration = integrations[referenced(parts[1])]
        out[route["Properties"]["RouteKey"]] = referenced(integration["Properties"]["IntegrationUri"])
    return out


def http_only(template: Json, found: dict[str, Json]) -> dict[str, Json]:
    """Those of an HTTP API's `found` routes or integrations (not the wake WebSocket API's)."""
    apis = resources(template, "AWS::ApiGatewayV2::Api")
    return {
        name: r
        for name, r in found.items()
        if apis[referenced(r["Properties"]["ApiId"])]["Properties"]["ProtocolType"] == "HTTP"
    }


def module_of(function: Json) -> str:
    """The `functions/` module a function runs (its handler is `<module>.lambda_handler`)."""
    module, entry = function["Properties"]["Handler"].split(".")
    assert entry == "lambda_handler"
    return str(module)


def role_statements(template: Json, function_id: str) -> list[Json]:
    """Every statement of every policy attached to the function's role."""
    role = referenced(template["Resources"][function_id]["Properties"]["Role"])
    statements: list[Json] = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    for inline in template["Resources"][role]["Properties"].get("Policies", []):
        statements.extend(inline["PolicyDocument"]["Statement"])
    assert not template["Resources"][role]["Properties"].get("ManagedPolicyArns"), "a managed policy"
    return statements


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def resource_suffix(resource: Any) -> tuple[str, str]:
    """(logical id, literal suffix) of an ARN written as GetAtt or Join(GetAtt, "/suffix")."""
    if "Fn::Join" in resource:
        head, tail = resource["Fn::Join"][1]
        return referenced(head), str(tail)
    return referenced(resource), ""
