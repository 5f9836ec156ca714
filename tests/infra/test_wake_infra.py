"""Wake in the stack: the WebSocket API and its routes, the stage, who may post to its
connections and put hints off, and each wake function's access, exactly what it calls."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devserver.background import Background
from devserver.gateway import LambdaContext
from devserver.wake import event, invoke
from infra.access import ACCESS, TOKEN_PARTITION
from infra.constants import WAKE_URL_OUTPUT
from infra.constructs.wake import STAGE
from infra.stream_filters import matches
from shared.clock import ManualClock
from shared.routes import ROUTES as HTTP_ROUTES
from shared.runtime import Runtime
from shared.wake import HINT_EVERY_MS, ROUTE_SELECTION, ROUTES, Gone
from tests.infra.cfn import Json, Synthesized, module_of, referenced, resources, role_statements
from tests.infra.conftest import STACK
from tests.infra.test_access import Calls, calls  # noqa: F401 - the fixture, shared
from tests.support import Api, EndpointAws, LocalAws

BY_KEY = {route.key: route for route in ROUTES}


def _emit(synthesized: Synthesized) -> Json:
    return synthesized.templates[STACK]


def _websocket(emit: Json) -> str:
    (api,) = [
        n
        for n, a in resources(emit, "AWS::ApiGatewayV2::Api").items()
        if a["Properties"]["ProtocolType"] == "WEBSOCKET"
    ]
    return api


def test_the_websocket_api_routes_each_key_to_its_function(synthesized: Synthesized) -> None:
    emit = _emit(synthesized)
    api = _websocket(emit)
    assert emit["Resources"][api]["Properties"]["RouteSelectionExpression"] == ROUTE_SELECTION
    integrations = resources(emit, "AWS::ApiGatewayV2::Integration")
    routes = {
        r["Properties"]["RouteKey"]: r
        for r in resources(emit, "AWS::ApiGatewayV2::Route").values()
        if referenced(r["Properties"]["ApiId"]) == api
    }
    assert set(routes) == {route.key for route in ROUTES}
    for route in ROUTES:
        target = routes[route.key]["Properties"]["Target"]["Fn::Join"][1][1]
        integration = integrations[referenced(target)]["Properties"]
        if route.function is None:  # the keep-alive: the gateway answers it, no function runs
            assert integration["IntegrationType"] == "MOCK"
            continue
        assert integration["IntegrationType"] == "AWS_PROXY"
        function = integration["IntegrationUri"]["Fn::Join"][1][5]["Fn::GetAtt"][0]
        assert module_of(emit["Resources"][function]) == route.function
    answered = {
        referenced(r["Properties"]["RouteId"])
        for r in resources(emit, "AWS::ApiGatewayV2::RouteResponse").values()
    }
    named = {key for key in routes if _route_id(emit, api, key) in answered}
    assert named == {"listen", "$default"}, "a listen is answered on the connection"


def _route_id(emit: Json, api: str, key: str) -> str:
    return next(
        name
        for name, r in resources(emit, "AWS::ApiGatewayV2::Route").items()
        if referenced(r["Properties"]["ApiId"]) == api and r["Properties"]["RouteKey"] == key
    )


def test_the_stage_deploys_itself_logs_and_is_the_wake_url(synthesized: Synthesized) -> None:
    emit = _emit(synthesized)
    api = _websocket(emit)
    (stage,) = [
        s
        for s in resources(emit, "AWS::ApiGatewayV2::Stage").values()
        if referenced(s["Properties"]["ApiId"]) == api
    ]
    props = stage["Properties"]
    assert (props["StageName"], props["AutoDeploy"]) == (STAGE, True)
    assert "connectionId" in props["AccessLogSettings"]["Format"]
    url = emit["Outputs"][WAKE_URL_OUTPUT]["Value"]["Fn::Join"][1]
    assert url[0] == "wss://" and url[1] == {"Ref": api} and url[-1] == f"/{STAGE}"
    for function in resources(emit, "AWS::Lambda::Function").values():
        variables = function["Properties"]["Environment"]["Variables"]
        if "EMIT_WAKE_URL" in variables:
            assert variables["EMIT_WAKE_URL"] == emit["Outputs"][WAKE_URL_OUTPUT]["Value"]
    answering = {
        module_of(f)
        for f in resources(emit, "AWS::Lambda::Function").values()
        if "EMIT_WAKE_URL" in f["Properties"]["Environment"]["Variables"]
    }
    assert {"get_space", "update_space", "claim_jobs"} <= answering
    assert answering <= {r.function for r in HTTP_ROUTES} | {"wake_later"}


def test_only_wake_later_posts_only_to_this_stage_and_the_hinters_only_invoke_it(
    synthesized: Synthesized,
) -> None:
    """The stream, the clock and the name policy's writes hint but post nothing themselves
    (`LambdaSender`, `LambdaLater`): they may invoke wake_later, not post to the
    connections; wake_later posts, and invokes nothing."""
    emit = _emit(synthesized)
    api = _websocket(emit)
    (later,) = [
        n for n, f in resources(emit, "AWS::Lambda::Function").items() if module_of(f) == "wake_later"
    ]
    posting, invoking = set(), set()
    for function_id, function in resources(emit, "AWS::Lambda::Function").items():
        for statement in role_statements(emit, function_id):
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(a.startswith("execute-api:") for a in actions):
                assert actions == ["execute-api:ManageConnections"]
                parts = statement["Resource"]["Fn::Join"][1]
                assert {"Ref": api} in parts and parts[-1] == f"/{STAGE}/*/@connections/*"
                posting.add(module_of(function))
            if any(a.startswith("lambda:") for a in actions):
                assert actions == ["lambda:InvokeFunction"]
                assert {
                    referenced(r) if "Fn::Join" not in r else referenced(r["Fn::Join"][1][0])
                    for r in statement["Resource"]
                } == {later}
                invoking.add(module_of(function))
    assert posting == {"wake_later"}
    assert invoking == {"stream_handler", "clock_handler", "update_name_policy", "reset_name_policy"}


class GoneFor:
    def __init__(self, gone: set[str]) -> None:
        self.gone = gone
        self.sent: list[str] = []

    def post(self, connection_id: str, data: bytes) -> None:
        if connection_id in self.gone:
            raise Gone(connection_id)
        self.sent.append(connection_id)


def test_each_wake_access_entry_is_exactly_what_its_function_calls(
    api: Api,
    calls: Calls,  # noqa: F811 - the fixture imported above
    rt: Runtime,
    clock: ManualClock,
    admin_token: str,
) -> None:
    def run(module: str, route: str | None, cid: str, **fields: Any) -> dict[str, Any]:
        calls.module = module
        try:
            if route is None:
                handler: Any = __import__(f"functions.{module}", fromlist=["lambda_handler"])
                return dict(handler.lambda_handler(fields["body"], LambdaContext(module, 30, 128)))
            return invoke(BY_KEY[route], event(BY_KEY[route], cid, **fields))
        finally:
            calls.module = None

    bearer = {"Authorization": f"Bearer {admin_token}"}
    for cid in ("c1", "c2"):
        assert run("wake_connect", "$connect", cid, headers=bearer)["statusCode"] == 200
        listen = json.dumps({"action": "listen", "space": "wk", "names": ["a", "b"]})
        assert '"listening"' in run("wake_listen", "listen", cid, body=listen)["body"]
    run("wake_listen", "$default", "c1", body="hello")
    poster = GoneFor({"c2"})
    rt.wake.poster = poster
    hint = {"space": "wk", "name": "a", "atMs": clock.now_ms() + 500, "trailing": False}
    run("wake_later", None, "", body=hint)  # sleeps (the test's clock), hints; c2 is gone
    assert poster.sent == ["c1"]
    assert run("wake_disconnect", "$disconnect", "c1")["statusCode"] == 200
    for module in ("wake_connect", "wake_listen", "wake_disconnect", "wake_later"):
        used, granted = calls.access(module), ACCESS[module]
        assert used == granted, f"{module} calls {used}\nbut ACCESS grants {granted}"
        assert TOKEN_PARTITION not in calls.writes_to[module], module


# -- the stream's filters let through what a hint needs ----------------------------------------


def _stream_patterns(emit: Json) -> list[Json]:
    stream = next(
        f for f, fn in resources(emit, "AWS::Lambda::Function").items() if module_of(fn) == "stream_handler"
    )
    (mapping,) = (
        m
        for m in resources(emit, "AWS::Lambda::EventSourceMapping").values()
        if referenced(m["Properties"]["FunctionName"]) == stream
    )
    return [json.loads(f["Pattern"]) for f in mapping["Properties"]["FilterCriteria"]["Filters"]]


@pytest.mark.parametrize("limit", ["concurrency", "perKeyConcurrency"])
def test_the_streams_filters_let_through_each_record_that_hints(
    synthesized: Synthesized,
    api: Api,
    rt: Runtime,
    clock: ManualClock,
    admin_token: str,
    local_aws: LocalAws | EndpointAws,
    limit: str,
) -> None:
    """The tests of tests/wake hand the handler every record; Lambda hands it only those its
    filters match. Here only those: each way a limited name's slot is let go (a finish
    without a callback too) still hints, and the claim's own record is filtered out."""
    patterns = _stream_patterns(_emit(synthesized))
    bg = Background(rt, streams_client=local_aws.streams)
    poster = GoneFor(set())
    rt.wake.poster = poster
    space = "/v1/spaces/wk"
    keyed: dict[str, Any] = {"concurrencyKey": "k"} if limit == "perKeyConcurrency" else {}
    if limit == "concurrency":
        assert api.patch(f"{space}/names/a/policy", {"concurrency": 1}).status == 200

    def filtered() -> list[dict[str, Any]]:
        records = bg.records()
        passed = [r for r in records if any(matches(p, r) for p in patterns)]
        bg.stream(passed)
        return passed

    def hinted_after(report: dict[str, Any]) -> bool:
        clock.advance(HINT_EVERY_MS)
        before = len(poster.sent)
        assert api.post(f"{space}/jobs:report", report).status == 200
        filtered()
        return len(poster.sent) > before

    bearer = {"Authorization": f"Bearer {admin_token}"}
    assert invoke(BY_KEY["$connect"], event(BY_KEY["$connect"], "c1", headers=bearer))["statusCode"] == 200
    body = json.dumps({"action": "listen", "space": "wk", "names": ["a"]})
    invoke(BY_KEY["listen"], event(BY_KEY["listen"], "c1", body=body))
    jobs = [api.post(f"{space}/jobs", {"name": "a", "backoffMs": 3_600_000, **keyed}) for _ in range(4)]
    assert filtered() and poster.sent == ["c1"], "a created job hints"
    assert len(jobs) == 4
    for ending in ({"release": {}}, {"fail": {"error": "x"}}, {"complete": {}}):
        clock.advance(HINT_EVERY_MS)
        (job,) = api.post(f"{space}/jobs:claim", {"count": 4}).body["jobs"]
        before = len(poster.sent)
        claimed = filtered()  # let through for the counts (shared/counts.py)
        assert [r["dynamodb"]["NewImage"]["status"]["S"] for r in claimed] == ["RUNNING"]
        assert len(poster.sent) == before, "a claim's record is no hint's"
        assert hinted_after({"id": job["id"], "attempt": job["attempt"], **ending}), ending
