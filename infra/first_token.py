"""Mint the first admin token of a deployed stack, without any token:

    .venv/bin/python -m infra.first_token --stack Emit [--region eu-west-1] [--profile ops]

A new stack has no token, and every endpoint, minting included, wants one. This uses the
operator's AWS credentials instead (cloudformation:DescribeStacks on the stack,
dynamodb:PutItem on its table): it finds the table in the stack's outputs and stores an
admin token exactly as `POST /v1/tokens` would, through `shared.auth.Tokens`, so only a
hash of the secret is kept. The token goes to stdout, once; everything else to stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from infra import constants
from shared.clock import SystemClock
from shared.config import Config
from shared.runtime import Runtime
from shared.schema import NewToken


class NotDeployed(Exception):
    """The stack, or its table output, is not there."""


def table_name(cloudformation: Any, stack: str) -> str:
    """The table the stack's `TableName` output names."""
    try:
        found = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as error:
        raise NotDeployed(f"stack {stack}: {error.response['Error']['Message']}") from None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in found[0].get("Outputs", [])}
    if constants.TABLE_NAME_OUTPUT not in outputs:
        raise NotDeployed(f"stack {stack} has no {constants.TABLE_NAME_OUTPUT} output; is it deployed?")
    return outputs[constants.TABLE_NAME_OUTPUT]


def mint(dynamodb: Any, table: str, name: str) -> dict[str, Any]:
    """A new admin token for every space, stored in `table`; the answer holds its secret."""
    runtime = Runtime(clock=SystemClock(), dynamodb=dynamodb, s3=None, config=Config(table=table))
    return runtime.tokens.mint(NewToken(scopes=["admin"], name=name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.first_token", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--stack", default=constants.DEFAULT_STACK_NAME, help="the stack's name (default: %(default)s)"
    )
    parser.add_argument("--name", default="first admin", help="the token's name (default: %(default)s)")
    parser.add_argument("--region", help="the stack's region (default: your AWS configuration's)")
    parser.add_argument("--profile", help="the AWS profile to use (default: your AWS configuration's)")
    args = parser.parse_args(argv)
    try:
        session = boto3.Session(profile_name=args.profile, region_name=args.region)
        table = table_name(session.client("cloudformation"), args.stack)
        token = mint(session.client("dynamodb"), table, args.name)
    except (NotDeployed, BotoCoreError, ClientError) as error:
        print(f"first_token: {error}", file=sys.stderr)
        return 1
    print(token["token"])
    print(
        f"Minted admin token {token['id']} ({args.name}) in table {table}. It is shown only "
        "this once: keep it in a secret store, and mint narrower tokens with it (POST /v1/tokens).",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
