"""The HTTP API: one route per entry of `shared.routes.ROUTES`, each to its own function."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import constants
from infra.constructs.access_logs import AccessLogs
from infra.constructs.functions import Functions
from infra.nag import acknowledge
from shared.routes import ROUTES

ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "routeKey": "$context.routeKey",
    "path": "$context.path",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "integrationStatus": "$context.integrationStatus",
    "integrationError": "$context.integrationErrorMessage",
    "error": "$context.error.message",
}
"""One JSON line per request: enough to find a slow or failed request and its function's logs."""


PUBLIC_ROUTES = {
    "get_openapi": "The API's own OpenAPI document is public by design: it holds no data, and "
    "clients generate their code from it (its function has no data access).",
    "follow_job": "A follow link is its own credential: the token in its path is an HMAC, under "
    "a secret the service keeps, of one job and an expiry (shared/jobs/follow.py), checked by the "
    "function; it reads that job only, read-only, and never its payload.",
    "get_dashboard": "The dashboard's page is static files from the repository (no data access): "
    "it signs in with the user's own token, kept in the tab, and calls the API with it.",
    "get_dashboard_file": "The dashboard's script and style sheet: static files from the "
    "repository, no data access.",
}
"""Why each route without a token is open (a public route without a reason fails synth)."""


class Api(Construct):
    """Route keys are the contract's paths as they stand: API Gateway validates HTTP API
    path parts against `^(\\{[\\w.:-]+\\+?\\}|[a-zA-Z0-9.:_-]+)$` [1.5], so a static part
    such as `jobs:claim` is a legal route of its own (a part mixing a variable and a
    literal, like `{space}:claim`, would not be; the contract has none).

    Every integration waits the gateway's maximum of 30 s [1.1]; every function's
    timeout (ROUTES) is shorter, so a function always answers before the gateway gives up.
    """

    def __init__(self, scope: Construct, construct_id: str, *, functions: Functions, throwaway: bool) -> None:
        super().__init__(scope, construct_id)
        self.http_api = apigwv2.HttpApi(
            self,
            "Http",
            description="The emit job queue: see the contract in the repository's README.",
            create_default_stage=False,
        )
        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=logs.RetentionDays[constants.LOG_RETENTION],
            removal_policy=RemovalPolicy.DESTROY if throwaway else RemovalPolicy.RETAIN,
        )
        self.access_logs = access_logs
        """One JSON line per request (ACCESS_LOG_FORMAT); the faults alarm counts its failed invokes."""
        self.stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            access_log_settings=AccessLogs(access_logs, ACCESS_LOG_FORMAT),
        )
        for route in ROUTES:
            function = functions.add(
                route.function,
                memory_mb=route.memory_mb,
                timeout_s=route.timeout_s,
                description=f"{route.method} {route.path}",
            )
            (added,) = self.http_api.add_routes(
                path=route.routed_by,
                methods=[apigwv2.HttpMethod[route.method]],
                integration=integrations.HttpLambdaIntegration(
                    route.function,
                    function,
                    payload_format_version=apigwv2.PayloadFormatVersion.VERSION_2_0,
                ),
            )
            acknowledge(
                added,
                "AwsSolutions-APIG4",
                PUBLIC_ROUTES[route.function]
                if route.public
                else "Every function authenticates its caller itself: a bearer token whose hash "
                "it reads from the table, with per-space scopes (shared/auth.py). A gateway "
                "authorizer would add a second invocation and a second place for the rules.",
            )
        # CDK still checks integration timeouts against the REST API's old 29 s bound; an HTTP
        # API allows 30 s [1.1], one more second for a function ending at its 29 s timeout
        # to be answered as its own failure rather than as the gateway's.
        for child in self.http_api.node.find_all():
            if isinstance(child, apigwv2.CfnIntegration):
                child.add_property_override("TimeoutInMillis", constants.INTEGRATION_TIMEOUT_S * 1000)
        self.url = self.stage.url
