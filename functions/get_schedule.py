"""GET /v1/spaces/{space}/schedules/{id}: a schedule, with its next fire times and last run."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import render
from shared.http import authorize, entrypoint, make_app, ok, path_id
from shared.jobs import schedules
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces/<space>/schedules/<schedule_id>")
def get_schedule(space: str, schedule_id: str) -> Response:
    authorize(app, "read", space)
    return ok(render.schedule(schedules.get(runtime().context, space, path_id(schedule_id))))


lambda_handler = entrypoint(app)
