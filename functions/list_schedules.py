"""GET /v1/spaces/{space}/schedules: a space's schedules by id, a page at a time."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import limits, render
from shared.http import authorize, entrypoint, make_app, ok, query, query_int
from shared.jobs import schedules
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces/<space>/schedules")
def list_schedules(space: str) -> Response:
    authorize(app, "read", space)
    limit = query_int(app, "limit", default=50, low=1, high=limits.MAX_SCHEDULES_PER_PAGE)
    found, cursor = schedules.page(runtime().context, space, cursor=query(app, "cursor"), limit=limit)
    return ok(render.schedules(found, cursor))


lambda_handler = entrypoint(app)
