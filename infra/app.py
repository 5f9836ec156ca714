"""The CDK app: `python -m infra.app` (what `make synth` and cdk.json run).

Run by the `cdk` command line, it synthesizes where the CLI asks; run directly, into
`cdk.out/`. Either way it needs neither Docker nor the network once the dependencies
layer is cached (see infra/bundling.py), and cdk-nag's AwsSolutions checks run on it.
"""

from __future__ import annotations

import os

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks

from infra import constants
from infra.stack import EmitStack


def build(app: App) -> EmitStack:
    """The stack, configured from the app's context (`-c name=value`), checked by cdk-nag."""
    name = app.node.try_get_context(constants.STACK_NAME_CONTEXT) or constants.DEFAULT_STACK_NAME
    stack = EmitStack(
        app,
        name,
        description="emit: a serverless job queue (API Gateway, Lambda, DynamoDB)",
        throwaway=flag(app.node.try_get_context(constants.THROWAWAY_CONTEXT)),
        alarm_email=app.node.try_get_context(constants.ALARM_EMAIL_CONTEXT) or None,
        dashboard=flag(app.node.try_get_context(constants.DASHBOARD_CONTEXT)),
        failure_rate_alarm=number(app, constants.FAILURE_RATE_ALARM_CONTEXT, high=1.0),
        oldest_claimable_alarm_s=number(app, constants.OLDEST_CLAIMABLE_ALARM_CONTEXT),
    )
    check(app)
    return stack


def check(app: App) -> None:
    """Run cdk-nag's AwsSolutions rules on everything in `app` when it synthesizes; a finding
    not acknowledged in code (with its reason) fails the synthesis."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def flag(value: object) -> bool:
    """A context flag: `-c throwaway=true` arrives as the string "true"."""
    return value is True or str(value).lower() in {"true", "1", "yes"}


def number(app: App, name: str, *, high: float | None = None) -> float | None:
    """A threshold from the context (None: not given, its alarm is not made); one that is
    no number above zero, or above `high`, stops the synthesis naming the flag."""
    value = app.node.try_get_context(name)
    if value is None or value == "":
        return None
    try:
        found = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"-c {name}={value!r}: give a number") from None
    if found <= 0 or (high is not None and found > high):
        bound = f"above 0 and at most {high:g}" if high is not None else "above 0"
        raise ValueError(f"-c {name}={value!r}: give a number {bound}")
    return found


def main() -> None:
    # The CLI passes its output directory in CDK_OUTDIR; without the CLI, write cdk.out/.
    app = App(outdir=None if "CDK_OUTDIR" in os.environ else "cdk.out", analytics_reporting=False)
    build(app)
    app.synth()


if __name__ == "__main__":
    main()
