"""The CDK app, synthesized once per test session.

One app holds two stacks: `Emit`, built exactly as `make synth` builds it (context
defaults, cdk-nag's AwsSolutions checks on the whole app), and `EmitThrowaway`, the
`-c throwaway=true -c dashboard=true -c failureRateAlarm=0.05 -c
oldestClaimableAlarmSeconds=900` variant (every option the default leaves off). The
dependencies layer comes from the build cache (see infra/bundling.py), so after the first
run this needs no network.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# jsii prints a banner about Node 20's end of life unless told not to; set before aws_cdk loads.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")

from aws_cdk import App
from aws_cdk.assertions import Template

from infra.app import build
from infra.stack import EmitStack
from tests.infra.cfn import Synthesized

STACK = "Emit"
THROWAWAY = "EmitThrowaway"


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = App(outdir=str(outdir), analytics_reporting=False)
    build(app)
    EmitStack(
        app, THROWAWAY, throwaway=True, dashboard=True, failure_rate_alarm=0.05, oldest_claimable_alarm_s=900
    )
    failure = None
    try:
        app.synth()
    except RuntimeError as error:  # cdk-nag's findings fail the synthesis (see test_compliance)
        report = outdir / "validation-report.json"
        failure = f"{error}\n{report.read_text() if report.exists() else ''}"
    templates = {
        name: json.loads((outdir / f"{name}.template.json").read_text()) for name in (STACK, THROWAWAY)
    }
    return Synthesized(Path(outdir), templates, failure)


@pytest.fixture(scope="session")
def template(synthesized: Synthesized) -> Template:
    return Template.from_json(synthesized.templates[STACK])


@pytest.fixture(scope="session")
def throwaway(synthesized: Synthesized) -> Template:
    return Template.from_json(synthesized.templates[THROWAWAY])
