"""DELETE /v1/spaces/{space}/schedules/{id}: delete a schedule (the jobs it made stay)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared.http import authorize, entrypoint, make_app, no_content, path_id
from shared.jobs import schedules
from shared.runtime import runtime

app = make_app()


@app.delete("/v1/spaces/<space>/schedules/<schedule_id>")
def delete_schedule(space: str, schedule_id: str) -> Response:
    authorize(app, "admin", space)
    schedules.delete(runtime().context, space, path_id(schedule_id))
    return no_content()


lambda_handler = entrypoint(app)
