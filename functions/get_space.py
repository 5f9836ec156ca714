"""GET /v1/spaces/{space}: the space's settings (the webhook secret only as set or not)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers, render
from shared.http import authorize, entrypoint, make_app, ok
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces/<space>")
def get_space(space: str) -> Response:
    authorize(app, "admin", space)
    rt = runtime()
    return ok(render.answer(answers.Space, rt.settings.describe(space) | rt.wake.shown()))


lambda_handler = entrypoint(app)
