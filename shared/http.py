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
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, CORSConfig, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from shared import wire
from shared.answers import Error, Exhausted
from shared.auth import Caller
from shared.errors import EmitError, InvalidArgument, PermissionDenied, ResourceExhausted
from shared.observability import logger, metrics, tracer
from shared.runtime import runtime
from shared.schema import NAME_PATTERN, NAME_RULE, SPACE_PATTERN, SPACE_RULE

_SPACE = re.compile(SPACE_PATTERN)
_NAME = re.compile(NAME_PATTERN)


class HttpApp(APIGatewayHttpResolver):
    """Powertools' HTTP API resolver, holding the current request per thread.

    Powertools keeps the current event on a class attribute shared by every resolver in
    the process, and a request's route arguments in the resolver's `context` dict. That is
    safe on Lambda, where an environment serves one request at a time, but `emit dev`
    serves concurrent requests (long polls among them, and a browser's dozen dashboard
    files at once) from threads of one process: a per-thread event and context keep them
    apart. A route also builds its middleware stack on its first request; two first
    requests at once would wrap it twice (every later request then fails in
    `next_middleware(**route_args)`), so the stacks are built under a lock, once.
    """

    _requests = threading.local()
    _building = threading.Lock()
    _built = False

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

    @property
    def context(self) -> dict[str, Any]:
        found: dict[str, Any] | None = getattr(self._requests, "extra", None)
        if found is None:
            found = self._requests.extra = {}
        return found

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self._requests.extra = value

    def _build_stacks(self) -> None:
        with self._building:
            if self._built:
                return
            for route in self._static_routes + self._dynamic_routes:
                if not route._middleware_stack_built:
                    route._build_middleware_stack(router_middlewares=self._router_middlewares, app=self)
            self._built = True

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        if not self._built:
            self._build_stacks()
        self.current_event = APIGatewayProxyEventV2(dict(event), self._json_body_deserializer)
        self.lambda_context = context
        return super().resolve(event, context)


def make_app(cors: CORSConfig | None = None) -> HttpApp:
    """The resolver every function uses; `cors` only where a route is open to any page."""
    app = HttpApp(cors=cors)

    @app.exception_handler(EmitError)
    def _emit_error(error: EmitError) -> Response:
        body: dict[str, Any] = {"code": error.code, "message": error.message}
        headers: dict[str, str] = {}
        if isinstance(error, ResourceExhausted):
            body = Exhausted.model_validate({**body, "retryAfterMs": error.retry_after_ms}).shown()
            headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_ms / 1000)))
        else:
            body = Error.model_validate(body).shown()
        return Response(error.status, content_types.APPLICATION_JSON, wire.text(body), headers=headers)

    @app.not_found
    def _no_route(_: NotFoundError) -> Response:
        # The gateway matched a route whose path part Powertools' own route pattern does not
        # take (a quote, a backslash, a raw non-ASCII character): no such resource, as the
        # gateway answers any path no route takes, never a fault (the catch-all below).
        body = Error(code="NotFound", message="no such resource").shown()
        return Response(404, content_types.APPLICATION_JSON, wire.text(body))

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response:
        logger.exception("unexpected error", extra={"action": "request"})
        body = Error(code="Internal", message="internal error; it has been logged").shown()
        return Response(500, content_types.APPLICATION_JSON, wire.text(body))

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
    tokens = runtime().tokens
    caller = tokens.authenticate(app.current_event.headers.get("authorization"))
    if space is not None and not _SPACE.fullmatch(space):
        raise InvalidArgument(f"space: {SPACE_RULE}")
    return tokens.permit(caller, scope, space)


def authorize_any_space(app: APIGatewayHttpResolver, scope: str) -> Caller:
    """The caller, if its token may use `scope` in at least one space (a listing of spaces
    answers only those it may use)."""
    tokens = runtime().tokens
    caller = tokens.authenticate(app.current_event.headers.get("authorization"))
    if scope not in caller.scopes and "admin" not in caller.scopes:
        raise PermissionDenied(f"the token may not {scope}")
    return caller


def path_name(raw: str) -> str:
    """A job name from a path part, URL-decoded."""
    return job_name(unquote(raw))


def path_id(raw: str) -> str:
    """A schedule's id from a path part, URL-decoded: spelled as a job name."""
    value = unquote(raw)
    if not _NAME.fullmatch(value):
        raise InvalidArgument(f"id: {NAME_RULE}")
    return value


def job_name(name: str) -> str:
    """`name` if it is a job name (1-128 of A-Z a-z 0-9 . _ : -), whole: a path part or a query."""
    if not _NAME.fullmatch(name):
        raise InvalidArgument(f"name: {NAME_RULE}")
    return name


def body(app: APIGatewayHttpResolver) -> Any:
    """The request's JSON: strict JSON only (no NaN or Infinity), valid Unicode throughout."""
    try:
        raw = app.current_event.decoded_body
    except UnicodeDecodeError:
        raise InvalidArgument("body: must be UTF-8 JSON") from None
    if not raw:
        raise InvalidArgument("body: a JSON body is required")
    try:
        data = json.loads(raw, parse_constant=_not_json, parse_float=_finite)
    except RecursionError:
        raise InvalidArgument("body: is nested too deeply") from None
    except ValueError as exc:
        raise InvalidArgument(f"body: must be valid JSON ({exc})") from None
    if "\\ud" in raw.lower():  # an escaped surrogate may stand alone, which no UTF-8 can hold
        try:
            json.dumps(data, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise InvalidArgument("body: has a \\u escape that is not a valid character") from None
        except RecursionError:
            raise InvalidArgument("body: is nested too deeply") from None
    return data


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def query_int(app: APIGatewayHttpResolver, name: str, *, default: int, low: int, high: int) -> int:
    raw = app.current_event.get_query_string_value(name)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:
        raise InvalidArgument(f"{name}: must be an integer from {low} to {high}")
    return int(raw)


def query(app: APIGatewayHttpResolver, name: str) -> str | None:
    return app.current_event.get_query_string_value(name)


def optional_body(app: APIGatewayHttpResolver) -> Any:
    """The request's JSON (as `body`), or an empty object when it has none."""
    return body(app) if app.current_event.decoded_body else {}


def ok(payload: Any, status: int = 200) -> Response:
    """A JSON answer, serialized as `shared.wire` sends it (and measures it)."""
    return Response(status, content_types.APPLICATION_JSON, wire.text(payload))


def no_content() -> Response:
    return Response(204, content_types.APPLICATION_JSON, "")
