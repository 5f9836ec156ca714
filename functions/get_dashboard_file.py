"""GET /dashboard/{file}: the dashboard's script and style sheet."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import dashboard
from shared.http import entrypoint, make_app

app = make_app()
FOLDER = dashboard.directory(__file__)


@app.get("/dashboard/<file>")
def get_dashboard_file(file: str) -> Response:
    text, kind = dashboard.read(FOLDER, file)
    return Response(200, kind, text, headers=dict(dashboard.HEADERS))


lambda_handler = entrypoint(app)
