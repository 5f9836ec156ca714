"""Answers and errors as botocore gives them, from what moto's handlers produce."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.awsrequest import HeadersDict
from botocore.exceptions import ClientError
from botocore.parsers import create_parser
from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionContext, ActionResult, BaseResponse
from moto.core.serialize import get_serializer_class
from moto.core.utils import get_service_model


class Wire:
    """One service's API model, response parser and modeled exceptions (from a boto3 client
    that is never called)."""

    def __init__(self, service: str, region: str) -> None:
        self.service = service
        make: Any = boto3.client
        client: Any = make(
            service, region_name=region, aws_access_key_id="local", aws_secret_access_key="local"
        )
        self.model: Any = client.meta.service_model
        self.exceptions: Any = client.exceptions
        self.parser: Any = create_parser("json")

    def output(self, operation: str) -> Any:
        return self.model.operation_model(operation).output_shape

    def parsed(self, operation: str, result: ActionResult, handler: BaseResponse) -> dict[str, Any]:
        """A handler's result through moto's serializer and botocore's parser, as through boto3."""
        service = get_service_model(self.service)
        context = ActionContext(
            service, service.operation_model(operation), get_serializer_class(self.service, "json"), handler
        )
        status, headers, body = result.execute_result(context)
        raw = body if isinstance(body, bytes) else body.encode()
        response = {"status_code": status, "headers": HeadersDict(headers), "body": raw}
        answer: dict[str, Any] = self.parser.parse(response, self.output(operation))
        answer.pop("ResponseMetadata", None)
        return answer

    def error(self, operation: str, exc: JsonRESTError) -> ClientError:
        """moto's error response parsed as botocore parses it (with the fields its model gives
        the error, as botocore's endpoint adds them), as the client's modeled exception."""
        response = {
            "status_code": exc.code,
            "headers": HeadersDict(dict(exc.get_headers())),
            "body": exc.get_body().encode(),
        }
        parsed: dict[str, Any] = self.parser.parse(response, self.output(operation))
        code = parsed.get("Error", {}).get("Code")
        shape = self.model.shape_for_error_code(code) if code else None
        if shape is not None:
            parsed.update(self.parser.parse(response, shape))
        raised: ClientError = self.exceptions.from_code(code)(parsed, operation)
        return raised

    def refusal(self, operation: str, code: str, message: str) -> ClientError:
        """An error of the service's own (not moto's)."""
        raised: ClientError = self.exceptions.from_code(code)(
            {"Error": {"Code": code, "Message": message}}, operation
        )
        return raised
