"""GET /v1/spaces/{space}/jobs: newest first, filtered by status and name, a page at a time."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import limits, render
from shared.errors import InvalidArgument
from shared.http import authorize, entrypoint, job_name, make_app, ok, query, query_int
from shared.job import JobStatus
from shared.jobs import read
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces/<space>/jobs")
def list_jobs(space: str) -> Response:
    authorize(app, "read", space)
    status = query(app, "status")
    if status is not None and status not in JobStatus.__members__:
        raise InvalidArgument(f"status: must be one of {', '.join(JobStatus.__members__)}")
    name = query(app, "name")
    if name is not None:
        name = job_name(name)
    page = read.page(
        runtime().context,
        space,
        status=JobStatus(status) if status else None,
        name=name,
        limit=query_int(app, "limit", default=100, low=1, high=limits.MAX_LIST_LIMIT),
        cursor=query(app, "cursor"),
    )
    return ok(render.page(page))


lambda_handler = entrypoint(app)
