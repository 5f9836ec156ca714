"""GET /v1/tokens: every token, without secrets."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers, render
from shared.http import authorize, entrypoint, make_app, ok
from shared.runtime import runtime

app = make_app()


@app.get("/v1/tokens")
def list_tokens() -> Response:
    authorize(app, "admin")
    return ok(render.answer(answers.TokenList, {"tokens": runtime().tokens.list()}))


lambda_handler = entrypoint(app)
