"""Wake: the WebSocket API workers listen on (`shared.wake`), its functions, and who may post.

One route per entry of `shared.wake.ROUTES`, each to its function (`listen` and `$default`
share theirs; `ping`, the clients' keep-alive, is answered by the gateway itself, with
nothing). Two kinds of function take part in a hint, and each is granted only its part:

- `posted_by`: the functions that make a hint's posts (`wake_later`, always) learn
  `wakeUrl` (the management endpoint is its host and path) and may post to this API's
  connections and nothing else (`execute-api:ManageConnections` on this stage's
  `@connections`);
- `hinted_by`: the functions that hint (the stream's, the clock's, the name policy's
  writes) post nothing themselves: they hand a hint's posts to `wake_later` and put
  hints off through it (`shared.wake.LambdaSender`, `LambdaLater`), so they learn its name
  and may invoke it, without waiting, and nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import constants
from infra.constructs.access_logs import AccessLogs
from infra.constructs.functions import Functions
from infra.nag import acknowledge, logical_id
from shared.config import Config
from shared.wake import LATER_HORIZON_MS, ROUTE_SELECTION, ROUTES

STAGE = "v1"
ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "connectionId": "$context.connectionId",
    "eventType": "$context.eventType",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "integrationLatency": "$context.integrationLatency",
    "integrationStatus": "$context.integrationStatus",
    "integrationError": "$context.integrationErrorMessage",
    "error": "$context.error.message",
}
"""One JSON line per connection, message and disconnection."""
ROUTE_SIZING = {"wake_connect": (256, 10), "wake_listen": (256, 10), "wake_disconnect": (256, 10)}
"""(memory MB, timeout s): a token read and a write or two each; under the 29 s a WebSocket
integration waits."""
LATER_MEMORY_MB = 128
"""`wake_later` sleeps a second or so, then makes a hint's few calls: the smallest size."""
LATER_TIMEOUT_S = LATER_HORIZON_MS // 1000 + 15
"""Its longest sleep, then the hint's posts (at most `SEND_BUDGET_S`) and a margin."""


def function_of(functions: Functions, module: str) -> lambda_.Function:
    """The function `Functions.add` made for `functions/<module>.py`."""
    name = "".join(part.title() for part in module.split("_"))
    found = functions.node.find_child(name).node.find_child("Function")
    assert isinstance(found, lambda_.Function)
    return found


class Wake(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, functions: Functions, throwaway: bool) -> None:
        super().__init__(scope, construct_id)
        self.api = apigwv2.WebSocketApi(
            self,
            "WebSocket",
            description="emit's wake: workers listen here for hints that work is there (shared/wake.py).",
            route_selection_expression=ROUTE_SELECTION,
        )
        served: dict[str, lambda_.Function] = {}
        for route in ROUTES:
            if route.function is None:
                integration: apigwv2.WebSocketRouteIntegration = integrations.WebSocketMockIntegration(
                    "KeepAlive",
                    request_templates={"$default": '{"statusCode": 200}'},
                    template_selection_expression="\\$default",
                )
            else:
                if route.function not in served:
                    memory, timeout = ROUTE_SIZING[route.function]
                    served[route.function] = functions.add(
                        route.function, memory_mb=memory, timeout_s=timeout, description=f"wake {route.key}"
                    )
                integration = integrations.WebSocketLambdaIntegration(
                    f"{route.key.strip('$').title()}Integration", served[route.function]
                )
            added = self.api.add_route(
                route.key, integration=integration, return_response=route.key in ("listen", "$default")
            )
            acknowledge(
                added,
                "AwsSolutions-APIG4",
                "$connect's function authenticates the bearer token itself (shared/wake.py, the "
                "rules of shared/auth.py) and refuses the handshake without one; every other "
                "route is reached only on a connection $connect let in, and `listen` checks the "
                "token's spaces again. A gateway authorizer would be a second place for the rules.",
            )
        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=logs.RetentionDays[constants.LOG_RETENTION],
            removal_policy=RemovalPolicy.DESTROY if throwaway else RemovalPolicy.RETAIN,
        )
        self.stage = apigwv2.WebSocketStage(
            self,
            "Stage",
            web_socket_api=self.api,
            stage_name=STAGE,
            auto_deploy=True,
            access_log_settings=AccessLogs(access_logs, ACCESS_LOG_FORMAT),
        )
        self.access_logs = access_logs
        """One JSON line per connection, message and disconnection; the faults alarm counts
        its failed invokes (`Monitoring.count_invoke_failures`)."""
        self.url = self.stage.url
        self.later = functions.add(
            "wake_later",
            memory_mb=LATER_MEMORY_MB,
            timeout_s=LATER_TIMEOUT_S,
            description="wake: a hint put off a moment (invoked without waiting)",
        )
        self.later.configure_async_invoke(max_event_age=Duration.seconds(60), retry_attempts=1)
        self.posted_by([self.later])

    def answered_by(self, functions: Iterable[lambda_.Function]) -> None:
        """Functions whose answers carry `wakeUrl`."""
        for function in functions:
            function.add_environment(Config.env("wake_url").name, self.url)

    def posted_by(self, functions: Iterable[lambda_.Function]) -> None:
        """Functions that make a hint's posts (`Wake.post_all`): `wake_later`. They learn
        `wakeUrl`, whose host and path are the connections' management endpoint (their
        runtime builds its `ApiGatewayPoster` from it), and may post to this stage's
        connections."""
        for function in functions:
            function.add_environment(Config.env("wake_url").name, self.url)
            self.stage.grant_management_api_access(function)
            if function.role is not None:
                connections = (
                    "arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:"
                    f"<{logical_id(self.api)}>/{STAGE}/*/@connections/*"
                )
                acknowledge(
                    function.role,
                    f"AwsSolutions-IAM5[Resource::{connections}]",
                    "execute-api:ManageConnections on this WebSocket stage's `@connections/*` only: "
                    "which connection a hint goes to is known at run time (the listen records).",
                )

    def hinted_by(self, functions: Iterable[lambda_.Function]) -> None:
        """Functions that hint (`Wake.changed`, `Wake.hint`) but post nothing: the stream's,
        and any other that calls `runtime().wake.hint` (the clock's, when it hints a name
        whose delay or backoff ended). They hand a hint's posts to
        `wake_later` and put hints off by invoking it without waiting, so they learn its name
        and may invoke it; without `wakeUrl` their runtime builds no poster, so they could
        not post if they tried. Their table access (the name's listeners, its last-hinted
        item) is their entry in `infra.access.ACCESS`."""
        for function in functions:
            self.later.grant_invoke(function)
            function.add_environment(Config.env("wake_later_function").name, self.later.function_name)
            if function.role is not None:
                acknowledge(
                    function.role,
                    f"AwsSolutions-IAM5[Resource::<{logical_id(self.later)}.Arn>:*]",
                    "Lambda's invoke grant covers wake_later and its qualified versions (`:*`); the "
                    "role can invoke that one function and nothing else.",
                )
