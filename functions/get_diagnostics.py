"""GET /v1/spaces/{space}/diagnostics: each name's pending work, its policy, and why it waits."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import render
from shared.http import authorize, entrypoint, make_app, ok
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces/<space>/diagnostics")
def get_diagnostics(space: str) -> Response:
    authorize(app, "read", space)
    return ok(render.diagnostics(runtime().diagnostics.describe(space)))


lambda_handler = entrypoint(app)
