"""`python -m infra.first_token`: against a stack and table served by moto."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from infra import constants, first_token
from shared.clock import SystemClock
from shared.config import Config
from shared.runtime import Runtime
from shared.store.table import create_table_request

REGION = "us-east-1"
TABLE = "emit-deployed"


@pytest.fixture
def deployed() -> Iterator[None]:
    """A stack whose TableName output names a table made from the store's own definition."""
    with mock_aws():
        boto3.client("dynamodb", region_name=REGION).create_table(**create_table_request(TABLE))
        template = {
            "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {constants.TABLE_NAME_OUTPUT: {"Value": TABLE}},
        }
        boto3.client("cloudformation", region_name=REGION).create_stack(
            StackName="Emit", TemplateBody=json.dumps(template)
        )
        yield


def test_mints_an_admin_token_the_api_accepts(deployed: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert first_token.main(["--stack", "Emit", "--region", REGION]) == 0
    printed = capsys.readouterr()
    token = printed.out.strip()
    assert token.startswith("emit_") and "\n" not in token
    assert token not in printed.err

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    runtime = Runtime(clock=SystemClock(), dynamodb=dynamodb, s3=None, config=Config(table=TABLE))
    caller = runtime.tokens.authenticate(f"Bearer {token}")
    assert caller.scopes == frozenset({"admin"}) and caller.spaces is None
    stored = dynamodb.scan(TableName=TABLE)["Items"]
    assert len(stored) == 1 and token.split("_")[2] not in json.dumps(stored), "the secret itself was stored"


def test_says_so_when_the_stack_is_not_deployed(deployed: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert first_token.main(["--stack", "Elsewhere", "--region", REGION]) == 1
    printed = capsys.readouterr()
    assert printed.out == "" and "Elsewhere" in printed.err
