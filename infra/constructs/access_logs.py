"""An API Gateway stage's access log: one JSON line per request (or WebSocket event) in a
log group, its fields given by the API that writes it (`api.ACCESS_LOG_FORMAT`,
`wake.ACCESS_LOG_FORMAT`). Both logs carry `integrationStatus`, which the faults alarm reads
(`Monitoring.count_invoke_failures`)."""

from __future__ import annotations

import json
from collections.abc import Mapping

import jsii
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_logs as logs


@jsii.implements(apigwv2.IAccessLogSettings)
class AccessLogs:
    def __init__(self, group: logs.ILogGroup, fields: Mapping[str, str]) -> None:
        self._group = group
        self._fields = dict(fields)

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return apigwv2.LogGroupLogDestination(self._group)

    @property
    def format(self) -> apigateway.AccessLogFormat:
        return apigateway.AccessLogFormat.custom(json.dumps(self._fields, separators=(",", ":")))
