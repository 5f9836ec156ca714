"""GET /v1/openapi.json: the API's OpenAPI 3.1 document; no token needed."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import openapi
from shared.http import entrypoint, make_app, ok

app = make_app()


@app.get("/v1/openapi.json")
def get_openapi() -> Response:
    return ok(openapi.document())


lambda_handler = entrypoint(app)
