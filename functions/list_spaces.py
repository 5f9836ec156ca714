"""GET /v1/spaces: the spaces the caller's token may use, with their in-flight counts."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import limits, render, space_list
from shared.http import authorize_any_space, entrypoint, make_app, ok, query, query_int
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces")
def list_spaces() -> Response:
    caller = authorize_any_space(app, "read")
    limit = query_int(app, "limit", default=100, low=1, high=limits.MAX_LIST_LIMIT)
    found = space_list.page(runtime().space_store, caller.spaces, cursor=query(app, "cursor"), limit=limit)
    return ok(render.spaces(found))


lambda_handler = entrypoint(app)
