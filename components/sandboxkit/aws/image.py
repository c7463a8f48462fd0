"""The MicroVM image (the worker's code on the base image, egress through the kit's connector
only) with its build role, and the optional MicroVM execution role."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from sandboxkit.aws.children import Children, SourceContext, policy_document, trusted_tags
from sandboxkit.aws.plan import MicrovmSandboxArgs

LAMBDA_PRINCIPAL = "lambda.amazonaws.com"
# The image's build role and the MicroVMs' execution role trust lambda.amazonaws.com (Lambda
# MicroVMs developer guide, "Security and permissions", "Trust policies"); that page names no
# confused-deputy keys for them, so the account is pinned whenever Lambda sends one.
MICROVM_SOURCE = SourceContext(
    documented=False,
    source_arn=None,
    source="Lambda MicroVMs developer guide, Security and permissions: trust policies "
    "(no source keys documented)",
)


def image(
    kit: Children, args: MicrovmSandboxArgs, connector: aws.lambda_.CoreNetworkConnector
) -> aws.lambdamicrovms.Image:
    """``-build-role``, ``-build-policy`` (read the worker artifact only) and ``-image``."""
    build_policy = json.dumps(
        policy_document(
            {
                "Effect": "Allow",
                "Action": "s3:GetObject",
                "Resource": args["worker_artifact_arn"],
            }
        )
    )
    build_role = kit.role("build", LAMBDA_PRINCIPAL, MICROVM_SOURCE, build_policy, tag_session=True)
    return aws.lambdamicrovms.Image(
        f"{kit.name}-image",
        base_image_arn=args["base_image_arn"],
        build_role_arn=build_role.arn,
        code_artifact={"uri": args["worker_artifact_uri"]},
        # Only the kit's connector: the service default is INTERNET_EGRESS.
        egress_network_connectors=[connector.arn],
        description="sandboxkit worker; egress through the kit's VPC connector only",
        tags=trusted_tags(kit.tags, args["trusted_accounts"]),
        opts=kit.opts,
    )


def execution_role(
    kit: Children, args: MicrovmSandboxArgs, component: pulumi.Resource
) -> aws.iam.Role | None:
    """``-execution-role`` and ``-execution-policy`` when a policy is configured (with a
    warning on ``component``: the guest can read the role's credentials), else ``None``."""
    document = args["execution_role_policy"]
    if document is None:
        return None
    pulumi.log.warn(
        f"{kit.name}: a MicroVM execution role is configured; code in the sandbox can "
        "read its credentials (IMDS inside the guest). Grant only what every job may use.",
        resource=component,
    )
    return kit.role(
        "execution", LAMBDA_PRINCIPAL, MICROVM_SOURCE, json.dumps(document), tag_session=True
    )
