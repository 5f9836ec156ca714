"""PUT /v1/spaces/{space}/schedules/{id}: create or replace a schedule."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import render
from shared.http import authorize, body, entrypoint, make_app, ok, path_id
from shared.jobs import schedules
from shared.runtime import runtime
from shared.schema import ScheduleBody, parse

app = make_app()


@app.put("/v1/spaces/<space>/schedules/<schedule_id>")
def put_schedule(space: str, schedule_id: str) -> Response:
    authorize(app, "admin", space)
    sid = path_id(schedule_id)
    return ok(render.schedule(schedules.put(runtime().context, space, sid, parse(ScheduleBody, body(app)))))


lambda_handler = entrypoint(app)
