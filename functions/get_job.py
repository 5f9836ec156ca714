"""GET /v1/spaces/{space}/jobs/{id}: one job."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import render
from shared.http import authorize, entrypoint, make_app, ok
from shared.jobs import read
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces/<space>/jobs/<job_id>")
def get_job(space: str, job_id: str) -> Response:
    authorize(app, "read", space)
    return ok(render.found(read.get(runtime().context, space, job_id)))


lambda_handler = entrypoint(app)
