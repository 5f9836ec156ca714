"""PATCH /v1/spaces/{space}: change settings; creates the space if it is new."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers, render
from shared.http import authorize, body, entrypoint, make_app, ok
from shared.runtime import runtime
from shared.schema import SettingsPatch, parse

app = make_app()


@app.patch("/v1/spaces/<space>")
def update_space(space: str) -> Response:
    authorize(app, "admin", space)
    space_now = runtime().settings.patch(space, parse(SettingsPatch, body(app)))
    return ok(render.answer(answers.Space, space_now | runtime().wake.shown()))


lambda_handler = entrypoint(app)
