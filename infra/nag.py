"""cdk-nag (v3) findings are acknowledged through CDK's own `Validations`; this keeps each
acknowledgement one readable call, with its reason, beside the resource it is about."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Accept finding `rule` (e.g. "AwsSolutions-S1", "AwsSolutions-IAM5[Resource::*]") on
    `scope` and everything under it, for `reason`."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))


def logical_id(construct: IConstruct) -> str:
    """The CloudFormation logical id of `construct`'s resource, as findings name it (`<Id.Arn>`)."""
    stack = Stack.of(construct)
    return str(stack.resolve(stack.get_logical_id(construct.node.default_child)))  # type: ignore[arg-type]
