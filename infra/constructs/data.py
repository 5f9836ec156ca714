"""The data: the one DynamoDB table the store uses, and the S3 bucket for values too large for it."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra import constants
from infra.nag import acknowledge
from shared.store.table import READY_INDEX, TTL_ATTRIBUTE, create_table_request

_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}


class Data(Construct):
    """The table is built from `shared.store.table.create_table_request`, the definition
    `emit dev` and the tests create locally, so the deployed table cannot drift from it.

    `throwaway` stacks drop deletion protection and are deleted with their data; every
    other stack keeps its table and bucket when the stack is deleted.
    """

    def __init__(self, scope: Construct, construct_id: str, *, throwaway: bool) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.DESTROY if throwaway else RemovalPolicy.RETAIN
        request = create_table_request("mirror")
        types = {a["AttributeName"]: _TYPES[a["AttributeType"]] for a in request["AttributeDefinitions"]}
        partition, sort = _keys(request["KeySchema"], types)
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=partition,
            sort_key=sort,
            billing_mode=dynamodb.BillingMode[request["BillingMode"]],  # on-demand: nothing to pay at rest
            stream=dynamodb.StreamViewType[request["StreamSpecification"]["StreamViewType"]],
            time_to_live_attribute=TTL_ATTRIBUTE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=not throwaway,
            removal_policy=removal,
        )
        for index in request["GlobalSecondaryIndexes"]:
            index_partition, index_sort = _keys(index["KeySchema"], types)
            projection = index["Projection"]
            self.table.add_global_secondary_index(
                index_name=index["IndexName"],
                partition_key=index_partition,
                sort_key=index_sort,
                projection_type=dynamodb.ProjectionType[projection["ProjectionType"]],
                non_key_attributes=projection.get("NonKeyAttributes"),
            )
        self.index_arn = f"{self.table.table_arn}/index/{READY_INDEX}"

        self.bucket = s3.Bucket(
            self,
            "Values",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-values",
                    expiration=Duration.days(constants.BLOB_EXPIRY_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(constants.INCOMPLETE_UPLOAD_DAYS),
                )
            ],
            removal_policy=removal,
        )
        acknowledge(
            self.bucket,
            "AwsSolutions-S1",
            "Only this stack's functions read and write the bucket, each under its own role "
            "scoped to object names; CloudTrail S3 data events are the audit trail to enable if "
            "needed. Server access logs would add a second bucket and a log object per request.",
        )


def _keys(
    schema: list[dict[str, str]], types: dict[str, dynamodb.AttributeType]
) -> tuple[dynamodb.Attribute, Any]:
    """(partition key, sort key or None) from a CreateTable KeySchema."""
    by_role = {k["KeyType"]: k["AttributeName"] for k in schema}
    partition = dynamodb.Attribute(name=by_role["HASH"], type=types[by_role["HASH"]])
    sort_name = by_role.get("RANGE")
    return partition, dynamodb.Attribute(name=sort_name, type=types[sort_name]) if sort_name else None
