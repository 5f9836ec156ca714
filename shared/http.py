"""The HTTP edge every function shares: routing, auth, bodies, and the error mapping.

Domain code raises `shared.errors`; this module alone turns them into status codes and
`{"code", "message"}` bodies. Anything unexpected is logged and answered as a bare 500,
never with exception text.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from shared.auth import Caller
from shared.errors import EmitError, InvalidArgument, ResourceExhausted
from shared.observability import logger, metrics, tracer
from shared.runtime import runtime
from shared.schema import SPACE_PATTERN

_SPACE = re.compile(SPACE_PATTERN)


class HttpApp(APIGatewayHttpResolver):
    """Powertools' HTTP API resolver, holding the current request per thread.

    Powertools keeps the current event on a class attribute shared by every resolver in
    the process. That is safe on Lambda, where an environment serves one request at a
    time, but `emit dev` serves concurrent requests (long polls among them) from threads
    of one process; a per-thread event keeps them apart.
    """

    _requests = threading.local()

    @property  # type: ignore[override]
    def current_event(self) -> APIGatewayProxyEventV2:
        event: APIGatewayProxyEventV2 = self._requests.event
        return event

    @current_event.setter
    def current_event(self, value: APIGatewayProxyEventV2) -> None:
        self._requests.event = value

    @property
    def lambda_context(self) -> Any:
        return self._requests.context

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._requests.context = value

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        self.current_event = APIGatewayProxyEventV2(dict(event), self._json_body_deserializer)
        self.lambda_context = context
        return super().resolve(event, context)


def make_app() -> HttpApp:
    app = HttpApp()

    @app.exception_handler(EmitError)
    def _emit_error(error: EmitError) -> Response:
        body: dict[str, Any] = {"code": error.code, "message": error.message}
        headers: dict[str, str] = {}
        if isinstance(error, ResourceExhausted):
            body["retryAfterMs"] = error.retry_after_ms
            headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_ms / 1000)))
        return Response(error.status, content_types.APPLICATION_JSON, json.dumps(body), headers=headers)

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response:
        logger.exception("unexpected error", extra={"action": "request"})
        body = {"code": "Internal", "message": "internal error; it has been logged"}
        return Response(500, content_types.APPLICATION_JSON, json.dumps(body))

    return app


def entrypoint(app: APIGatewayHttpResolver) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler for `app`: Powertools context, tracing and metrics around it."""

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return app.resolve(event, context)

    return lambda_handler


def authorize(app: APIGatewayHttpResolver, scope: str, space: str | None = None) -> Caller:
    """The caller, if its token may use `scope` in `space` (None: on all spaces)."""
    if space is not None and not _SPACE.match(space):
        raise InvalidArgument("space: must be 1-64 of a-z 0-9 - _")
    header = app.current_event.headers.get("authorization")
    return runtime().tokens.authorize(header, scope, space)


def body(app: APIGatewayHttpResolver) -> Any:
    raw = app.current_event.decoded_body
    if not raw:
        raise InvalidArgument("body: a JSON body is required")
    try:
        return json.loads(raw)
    except ValueError:
        raise InvalidArgument("body: must be valid JSON") from None


def query_int(app: APIGatewayHttpResolver, name: str, *, default: int, low: int, high: int) -> int:
    raw = app.current_event.get_query_string_value(name)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise InvalidArgument(f"{name}: must be an integer from {low} to {high}")
    return int(raw)


def query(app: APIGatewayHttpResolver, name: str) -> str | None:
    return app.current_event.get_query_string_value(name)


def ok(payload: Any, status: int = 200) -> Response:
    return Response(status, content_types.APPLICATION_JSON, json.dumps(payload, separators=(",", ":")))


def no_content() -> Response:
    return Response(204, content_types.APPLICATION_JSON, "")
