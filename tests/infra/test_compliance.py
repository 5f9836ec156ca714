"""cdk-nag's AwsSolutions checks and cfn-lint, on the templates the session synthesized."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_sqs as sqs
from cfnlint.api import ManualArgs, lint

from infra.app import check
from tests.infra.cfn import Synthesized

LINT_REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-2"]
"""Regions to check resource types and properties in: the template is region-agnostic."""

ACCEPTED_WARNINGS = {
    "W3005": "CDK makes each function DependsOn its role as well as the role's policy, so the "
    "policy exists before the function can run; the role dependency is redundant, not wrong.",
}


def test_cdk_nag_finds_nothing_unacknowledged(synthesized: Synthesized) -> None:
    assert synthesized.failure is None, synthesized.failure


def test_cdk_nag_is_watching() -> None:
    """The same checks fail a stack with a finding nobody acknowledged (here a queue
    without a dead-letter queue or TLS enforcement)."""
    app = App(analytics_reporting=False)
    sqs.Queue(Stack(app, "Careless"), "Queue")
    check(app)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()


def test_every_acknowledgement_gives_its_reason(synthesized: Synthesized) -> None:
    metadata = json.loads((synthesized.outdir / "Emit.metadata.json").read_text())
    acknowledged = {
        (path, rule): reason
        for path, entries in metadata.items()
        for entry in entries
        if entry["type"] == "aws:cdk:acknowledged-rules"
        for rule, reason in entry["data"].items()
    }
    assert acknowledged, "no acknowledgement was recorded"
    for (path, rule), reason in acknowledged.items():
        assert len(reason) >= 40, f"{path} {rule}: say why"


@pytest.mark.parametrize("stack", ["Emit", "EmitThrowaway"])
def test_cfn_lint_finds_no_errors(synthesized: Synthesized, stack: str) -> None:
    matches = lint(json.dumps(synthesized.templates[stack]), config=ManualArgs(regions=LINT_REGIONS))
    unexpected = [m for m in matches if m.rule.id not in ACCEPTED_WARNINGS]
    assert not unexpected, "\n".join(str(m) for m in unexpected)
    assert all(m.rule.id.startswith("W") for m in matches)
