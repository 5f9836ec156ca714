"""GET /v1/spaces/{space}/metrics: each name's last hour, a point a minute."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import render
from shared.http import authorize, entrypoint, job_name, make_app, ok, query
from shared.metrics import last_hour
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces/<space>/metrics")
def get_metrics(space: str) -> Response:
    authorize(app, "read", space)
    # `name=a&name=b` reaches a function as `a,b` (no job name holds a comma).
    asked = query(app, "name")
    names = [job_name(n) for n in asked.split(",")] if asked is not None else None
    rt = runtime()
    first, series = last_hour(rt.clock, rt.space_store, rt.tallies, space, names)
    return ok(render.metrics(first, series))


lambda_handler = entrypoint(app)
