"""The OpenAPI document: served without a token, valid OpenAPI 3.1, exactly the routes the
service has, and true of the answers it gives (every answer the tests get through
tests.support.Api is checked against it by `check_answer`; these tests check that check,
and the answers that only background work makes)."""

from __future__ import annotations

import httpx
import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator

from shared import openapi
from shared.routes import ROUTES
from shared.runtime import Runtime
from tests.support import Answer, Api, Background, EndpointAws, LocalAws, check_answer

DOC = "/v1/openapi.json"


def test_the_document_is_served_without_a_token(api: Api) -> None:
    served = api.get(DOC, token=None)
    assert served.status == 200, served
    assert served.headers["Content-Type"] == "application/json"
    assert served.body == openapi.document()
    assert api.get(DOC, token="emit_not_a_token").status == 200


def test_it_is_valid_openapi_3_1() -> None:
    document = openapi.document()
    assert document["openapi"] == "3.1.0"
    errors = [e.message for e in OpenAPIV31SpecValidator(document).iter_errors()]
    assert errors == []


def test_its_paths_and_methods_are_exactly_the_routes() -> None:
    documented = {
        (method.upper(), path) for path, item in openapi.document()["paths"].items() for method in item
    }
    assert documented == {(r.method, r.path) for r in ROUTES}
    operation_ids = [
        op["operationId"] for item in openapi.document()["paths"].values() for op in item.values()
    ]
    assert sorted(operation_ids) == sorted(r.function for r in ROUTES)


def test_every_route_but_the_document_the_dashboard_and_follow_links_needs_a_bearer_token() -> None:
    """A follow link carries its own capability in its path (`shared.jobs.follow`); the dashboard
    is static files (it signs in with a token of its own, through the API)."""
    document = openapi.document()
    assert document["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert document["security"] == [{"bearer": []}]
    for route in ROUTES:
        operation = document["paths"][route.path][route.method.lower()]
        if route.path in (DOC, "/", "/dashboard/{file}"):
            assert operation["security"] == []
            assert set(operation["responses"]) <= {"200", "404", "500"}
        elif route.path == "/v1/follow/{token}":
            assert operation["security"] == []
            assert set(operation["responses"]) == {"200", "400", "401", "404", "500"}
        else:
            assert "security" not in operation, route
            assert {"401", "403", "500"} <= set(operation["responses"]), route


def test_each_schema_is_named_as_its_model() -> None:
    """Two models of one name, one read in requests and one written in answers, pydantic
    names `X-Input` and `X-Output`, both titled `X`: a generated client names its models by
    title, keeps one, and drops the other with every schema that refers to it (it was
    `JobDefaults`, and openapi-python-client dropped `Space` and the settings' answers)."""
    schemas = openapi.document()["components"]["schemas"]
    assert {
        name: schema.get("title") for name, schema in schemas.items() if schema.get("title") != name
    } == {}


def test_every_reference_names_a_schema() -> None:
    schemas = openapi.document()["components"]["schemas"]
    found: list[str] = []

    def walk(part: object) -> None:
        if isinstance(part, dict):
            if isinstance(part.get("$ref"), str):
                found.append(part["$ref"])
            for value in part.values():
                walk(value)
        elif isinstance(part, list):
            for value in part:
                walk(value)

    walk(openapi.document())
    assert found
    assert {ref for ref in found if ref.removeprefix("#/components/schemas/") not in schemas} == set()


def test_every_error_is_documented_with_its_body() -> None:
    document = openapi.document()
    schemas = document["components"]["schemas"]
    assert schemas["Error"]["required"] == ["code", "message"]
    assert schemas["Exhausted"]["required"] == ["code", "message", "retryAfterMs"]
    full = document["paths"]["/v1/spaces/{space}/jobs"]["post"]["responses"]["429"]
    assert full["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Exhausted"}
    assert full["headers"]["Retry-After"]["required"] is True
    for item in document["paths"].values():
        for operation in item.values():
            for status, answer in operation["responses"].items():
                if status.startswith(("4", "5")):
                    assert answer["content"]["application/json"]["schema"]["$ref"].endswith(
                        ("/Error", "/Exhausted")
                    )


def test_request_bodies_come_from_the_models_that_validate_them() -> None:
    document = openapi.document()
    schemas = document["components"]["schemas"]
    claim = document["paths"]["/v1/spaces/{space}/jobs:claim"]["post"]["requestBody"]
    assert claim["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ClaimRequest"}
    assert schemas["ClaimRequest"]["properties"]["count"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 1000,
    }
    assert schemas["NewJob"]["additionalProperties"] is False
    create = document["paths"]["/v1/spaces/{space}/jobs"]["post"]["requestBody"]["content"]
    forms = create["application/json"]["schema"]["anyOf"]
    assert forms[0] == {"$ref": "#/components/schemas/NewJob"}
    assert forms[1]["items"] == {"$ref": "#/components/schemas/NewJob"}
    assert forms[2] == {"$ref": "#/components/schemas/JobBatch"}


# -- the check every answer in tests/api goes through ----------------------------------------


def test_the_check_refuses_an_answer_the_document_does_not_describe() -> None:
    tokens = "/v1/tokens"
    check_answer("GET", tokens, Answer(200, {"Content-Type": "application/json"}, {"tokens": []}))
    with pytest.raises(AssertionError, match="is not documented"):
        check_answer("GET", tokens, Answer(404, {"Content-Type": "application/json"}, None))
    with pytest.raises(AssertionError, match="Additional properties"):
        check_answer("GET", tokens, Answer(200, {"Content-Type": "application/json"}, {"tokens": [], "x": 1}))
    with pytest.raises(AssertionError, match="content type"):
        check_answer("GET", tokens, Answer(200, {"Content-Type": "text/plain"}, {"tokens": []}))
    exhausted = {"code": "ResourceExhausted", "message": "full", "retryAfterMs": 1000}
    with pytest.raises(AssertionError, match="Retry-After"):
        check_answer(
            "POST", "/v1/spaces/{space}/jobs", Answer(429, {"Content-Type": "application/json"}, exhausted)
        )


def test_the_tests_check_every_answer(api: Api) -> None:
    assert Api.check_answers and api.check_answers


def test_a_finished_job_with_its_callback_delivery_matches_the_document(
    api: Api, rt: Runtime, local_aws: LocalAws | EndpointAws
) -> None:
    """Delivery states are made by the stream and the clock, not by a request."""
    answers = iter([httpx.Response(500), httpx.Response(204)])
    rt.dispatcher.transport = httpx.MockTransport(lambda _: next(answers))
    bg = Background(rt, streams_client=local_aws.streams)
    jobs = "/v1/spaces/hooks/jobs"
    hook = {"url": "https://example.com/hook", "headers": {"X-Key": "secret"}}
    job_id = api.post(jobs, {"name": "n", "callback": hook}).body["id"]
    api.post(f"{jobs}:claim", {"count": 1})
    api.post(
        f"{jobs}:report",
        {
            "id": job_id,
            "attempt": 1,
            "progress": {"percent": 50, "message": None},
            "event": {"e": 1},
            "lines": [{"level": "INFO", "message": "m", "source": "s", "metadata": {"k": [1]}}],
        },
    )
    api.post(f"{jobs}:report", {"id": job_id, "attempt": 1, "complete": {"result": [1, "two"]}})
    before = api.get(f"{jobs}/{job_id}").body["callback"]["delivery"]
    assert before == {"state": "PENDING", "attempts": 0}
    bg.stream()  # the first try: 500
    pending = api.get(f"{jobs}/{job_id}").body
    assert pending["callback"]["delivery"]["state"] == "PENDING"
    assert pending["callback"]["delivery"]["lastStatus"] == 500
    assert pending["progress"] == {"percent": 50, "message": None}
    rt.clock.advance(60_000)  # type: ignore[attr-defined]
    bg.tick()
    delivered = api.get(f"{jobs}/{job_id}").body
    assert delivered["callback"] == {
        "url": hook["url"],
        "headers": {"X-Key": ""},
        "delivery": {
            "state": "DELIVERED",
            "attempts": 2,
            "lastStatus": 204,
            "lastAttemptAtMs": delivered["callback"]["delivery"]["lastAttemptAtMs"],
            "deliveredAtMs": delivered["callback"]["delivery"]["deliveredAtMs"],
        },
    }
    assert api.get(f"{jobs}/{job_id}/lines").body["lines"][0]["metadata"] == {"k": [1]}
    assert api.get(f"{jobs}/{job_id}/events").body["events"][0]["event"] == {"e": 1}
