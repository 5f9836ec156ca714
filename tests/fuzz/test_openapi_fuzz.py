"""Schemathesis against a real `emit dev`, from the API's own OpenAPI document.

Each operation gets Schemathesis's coverage cases (each way to break each rule of the
document) and a fixed number of generated requests, valid and invalid by the document,
derandomized, so a run is quick and the same each time. Every answer must be documented
(status code, content type, headers, body schema), none may be a server error, a
request the document calls invalid must be refused with a 4xx, and one that succeeded
must fail without its token, or with a wrong one.

The run's figures (operations, requests, seconds) are printed in the session's summary
(tests/fuzz/conftest.py).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis import Case, CheckContext, Response
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from shared import openapi
from tests.e2e.conftest import DEV_TOKEN, DevServer, start_dev

EXAMPLES = 20
"""Generated requests per operation (the coverage phase adds its own cases on top)."""

schema = schemathesis.openapi.from_dict(
    openapi.document(),
    config=schemathesis.Config.from_dict(
        {
            # The token as the document's own `bearer` scheme, not as a fixed header: a fixed
            # header counts as generated auth whenever a case also generates a header of its
            # own (`traceparent`), and `ignored_auth` then calls a valid token's 200 a failure.
            "auth": {"openapi": {"bearer": {"bearer": DEV_TOKEN}}},
            "generation": {
                "mode": "all",
                "max-examples": EXAMPLES,
                "deterministic": True,
                "database": "none",
            },
            "phases": {
                # Negative only: the positive boundary cases (1,000-job batches, claims of 1,000)
                # are the other tests' to check; here they would only slow the run down.
                # Methods the document does not name are API Gateway's to answer, not ours.
                "coverage": {"generation": {"mode": "negative"}, "unexpected-methods": []},
                "stateful": {"enabled": False},
            },
        }
    ),
)
"""The document as the code generates it; `emit dev` is checked to serve the same one."""


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[DevServer]:
    """An `emit dev` of its own. Claims never wait (a generated `waitMs` of a minute would
    stall the run), and callbacks, should a fuzzed job ever finish with one, reach nothing
    but a closed port on 127.0.0.1."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("EMIT_MAX_WAIT_MS", "0")
        for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            env.setenv(proxy, "http://127.0.0.1:9")
            env.setenv(proxy.lower(), "http://127.0.0.1:9")
        env.delenv("NO_PROXY", raising=False)
        env.delenv("no_proxy", raising=False)
        server = start_dev()
    yield server
    server.stop()


def test_emit_dev_serves_the_document_fuzzed(fuzz_server: DevServer) -> None:
    served = httpx.get(f"{fuzz_server.url}/v1/openapi.json", timeout=30)
    assert served.status_code == 200
    assert served.json() == openapi.document()


def invalid_data_refused(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """Schemathesis's `negative_data_rejection`, but for the one refusal the document
    describes that is not a 4xx: an invalid report among valid ones is answered, in a `200`,
    with its own `INVALID` rejection while the others are applied."""
    if case.operation.label == "POST /v1/spaces/{space}/jobs:report" and response.status_code == 200:
        outcomes = response.json()["outcomes"]
        if any(o.get("rejection", {}).get("reason") == "INVALID" for o in outcomes):
            return None
    return negative_data_rejection(ctx, response, case)


CHECKS: list[Any] = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    invalid_data_refused,
    ignored_auth,
]


@schema.parametrize()
def test_every_answer_keeps_to_the_document(
    case: Case, fuzz_server: DevServer, fuzz_run: Counter[str]
) -> None:
    fuzz_run["started"] = fuzz_run["started"] or time.monotonic_ns()
    try:
        case.call_and_validate(base_url=fuzz_server.url, checks=CHECKS)
    finally:
        fuzz_run[case.operation.label] += 1
        fuzz_run["ended"] = time.monotonic_ns()
