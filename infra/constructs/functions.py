"""Every Lambda function of the service, built one way by one helper."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import bundling, constants
from infra.access import ACCESS, statements
from infra.constructs.data import Data
from infra.constructs.monitoring import Monitoring
from infra.nag import acknowledge, logical_id
from shared.config import Config
from shared.store.blobs import s3_key


class Functions(Construct):
    """Builds each function from its module in `functions/`: the same runtime, layers,
    environment and observability everywhere, and a role of its own holding only the
    access `infra.access.ACCESS` lists for that module.

    A function's code is its one module; `shared/` (the layer `Shared`) and the pinned
    third-party packages (the layer `Dependencies`) are packaged once for all of them.
    """

    RUNTIME = lambda_.Runtime.PYTHON_3_13
    """Supported until 30 Jun 2029 [2.5]; the dependencies layer is built for it."""
    ARCHITECTURE = lambda_.Architecture.ARM_64
    """A fifth cheaper per GB-second than x86 [2.6]; every dependency ships aarch64 wheels."""
    PIP_PLATFORMS = ("manylinux2014_aarch64",)
    """Wheels for glibc 2.17 and up run on Amazon Linux 2023 (glibc 2.34) [8.2]."""

    def __init__(
        self, scope: Construct, construct_id: str, *, data: Data, monitoring: Monitoring, throwaway: bool
    ) -> None:
        super().__init__(scope, construct_id)
        self._data = data
        self._monitoring = monitoring
        self._removal = RemovalPolicy.DESTROY if throwaway else RemovalPolicy.RETAIN
        python = self.RUNTIME.name.removeprefix("python")
        self.layers = [
            lambda_.LayerVersion(
                self,
                "Dependencies",
                code=lambda_.Code.from_asset(str(bundling.dependencies_layer(python, self.PIP_PLATFORMS))),
                compatible_runtimes=[self.RUNTIME],
                compatible_architectures=[self.ARCHITECTURE],
                description="Pinned third-party packages: infra/requirements-lambda.txt",
            ),
            lambda_.LayerVersion(
                self,
                "Shared",
                code=lambda_.Code.from_asset(str(bundling.shared_layer())),
                compatible_runtimes=[self.RUNTIME],
                compatible_architectures=[self.ARCHITECTURE],
                description="The shared/ package",
            ),
        ]
        self.config = Config(table=data.table.table_name, bucket=data.bucket.bucket_name)
        """The deployed settings: every field's default (`shared.config`), with the stack's names."""
        self.environment = self.config.environment() | {
            "POWERTOOLS_SERVICE_NAME": constants.SERVICE,
            "POWERTOOLS_METRICS_NAMESPACE": constants.METRICS_NAMESPACE,
        }

    def add(
        self,
        module: str,
        *,
        memory_mb: int,
        timeout_s: int,
        description: str,
        reserved_concurrency: int | None = None,
        tracing: lambda_.Tracing = lambda_.Tracing.ACTIVE,
    ) -> lambda_.Function:
        """The function serving `functions/<module>.py`, with its role and its log group,
        whose failed invocations the faults alarm counts (and, given `reserved_concurrency`,
        that much of the account's concurrency, its own and its most). Traced by X-Ray
        (Lambda's sampling: the first request each second and 5% of the rest) unless
        `tracing` says otherwise.

        Its access comes from `infra.access.ACCESS[module]`: a module without an entry
        there has no function, so nothing runs with permissions nobody wrote down.
        """
        if module not in ACCESS:
            raise KeyError(f"functions/{module}.py has no entry in infra.access.ACCESS")
        access = ACCESS[module]
        name = "".join(part.title() for part in module.split("_"))
        scope = Construct(self, name)
        log_group = logs.LogGroup(
            scope,
            "Logs",
            retention=logs.RetentionDays[constants.LOG_RETENTION],
            removal_policy=self._removal,
        )
        role = iam.Role(
            scope,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{module}: {description}",
        )
        log_group.grant_write(role)  # its own log group only: no logs:CreateLogGroup, no managed policy
        for statement in statements(
            access,
            table_arn=self._data.table.table_arn,
            index_arn=self._data.index_arn,
            bucket=self._data.bucket,
        ):
            role.add_to_policy(statement)
        function = lambda_.Function(
            scope,
            "Function",
            description=description,
            runtime=self.RUNTIME,
            architecture=self.ARCHITECTURE,
            code=lambda_.Code.from_asset(
                str(bundling.function_code(module)),
                exclude=["*", f"!{module}.py", "!dashboard", "!dashboard/*"],
            ),
            handler=f"{module}.lambda_handler",
            layers=self.layers,
            memory_size=memory_mb,
            timeout=Duration.seconds(timeout_s),
            # Untraced, Powertools' tracer stays out of X-Ray altogether (no segment to look for).
            environment=self.environment
            | ({} if tracing == lambda_.Tracing.ACTIVE else {"POWERTOOLS_TRACE_DISABLED": "true"}),
            tracing=tracing,
            role=role,
            log_group=log_group,
            reserved_concurrent_executions=reserved_concurrency,
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level "
            "permissions; the statement holds only those two actions.",
        )
        bucket = logical_id(self._data.bucket)
        for value in sorted(access.gets | access.puts | access.deletes):
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/{s3_key('*', '*', value)}*]",
                f"Objects are named <space>/<job id>/<value>[-<attempt>]: the role may touch only "
                f"`{value}` objects; which space, job and attempt arrive with each request.",
            )
        acknowledge(
            function,
            "AwsSolutions-L1",
            "python3.13 is the runtime the dependencies layer is built and pinned for; it "
            "is supported until 30 Jun 2029. Moving to python3.14 is one constant "
            "(Functions.RUNTIME) once the service is tested on it.",
        )
        self._monitoring.watch_function(module, function)
        return function
