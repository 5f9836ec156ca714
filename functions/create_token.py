"""POST /v1/tokens: mint a token; its secret is in this answer and never again."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers, render
from shared.http import authorize, body, entrypoint, make_app, ok
from shared.runtime import runtime
from shared.schema import NewToken, parse

app = make_app()


@app.post("/v1/tokens")
def create_token() -> Response:
    authorize(app, "admin")
    minted = runtime().tokens.mint(parse(NewToken, body(app)))
    return ok(render.answer(answers.MintedToken, minted), status=201)


lambda_handler = entrypoint(app)
