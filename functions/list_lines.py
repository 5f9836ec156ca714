"""GET /v1/spaces/{space}/jobs/{id}/lines: log lines in order, a page at a time."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import limits, render
from shared.http import authorize, entrypoint, make_app, ok, query, query_int
from shared.jobs import read
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces/<space>/jobs/<job_id>/lines")
def list_lines(space: str, job_id: str) -> Response:
    authorize(app, "read", space)
    limit = query_int(app, "limit", default=100, low=1, high=limits.MAX_LIST_LIMIT)
    page = read.lines(runtime().context, space, job_id, cursor=query(app, "cursor"), limit=limit)
    return ok(render.lines(page))


lambda_handler = entrypoint(app)
