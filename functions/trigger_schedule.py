"""POST /v1/spaces/{space}/schedules/{id}:trigger: one job of the schedule, now."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers
from shared.http import authorize, entrypoint, make_app, ok, optional_body, path_id
from shared.jobs import schedules
from shared.runtime import runtime
from shared.schema import ScheduleTrigger, parse

app = make_app()


@app.post("/v1/spaces/<space>/schedules/<schedule_id>:trigger")
def trigger_schedule(space: str, schedule_id: str) -> Response:
    authorize(app, "admin", space)
    sid = path_id(schedule_id)
    sent = parse(ScheduleTrigger, optional_body(app))
    made = schedules.trigger(runtime().context, space, sid, key=sent.key)
    return ok(answers.Created(id=made.id, outcome="NEW" if made.new else "DUPLICATE").shown())


lambda_handler = entrypoint(app)
