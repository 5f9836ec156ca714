"""PATCH /v1/spaces/{space}/schedules/{id}: change fields of a schedule (pause, resume...)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import render
from shared.http import authorize, body, entrypoint, make_app, ok, path_id
from shared.jobs import schedules
from shared.runtime import runtime
from shared.schema import SchedulePatch, parse

app = make_app()


@app.patch("/v1/spaces/<space>/schedules/<schedule_id>")
def update_schedule(space: str, schedule_id: str) -> Response:
    authorize(app, "admin", space)
    sid = path_id(schedule_id)
    changes = parse(SchedulePatch, body(app))
    return ok(render.schedule(schedules.patch(runtime().context, space, sid, changes)))


lambda_handler = entrypoint(app)
