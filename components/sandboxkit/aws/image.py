"""The MicroVM image (the worker's code on the base image, its lifecycle hooks) with its build
role and log group, and the optional MicroVM execution role."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from sandboxkit.aws.children import Children, SourceContext, policy_document, trusted_tags
from sandboxkit.aws.connector import managed_connector_arn
from sandboxkit.aws.microvm_image import MicrovmImage
from sandboxkit.aws.plan import AwsAccess, MicrovmSandboxArgs
from sandboxkit.aws.worker.build import HOOKS_PORT

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


# The lifecycle hooks the worker serves (sandboxkit.aws.worker.main) on HOOKS_PORT. Run: the
# launcher's runHookPayload arrives only as the body of POST .../run, and a hook not ENABLED is
# never called, so without it the worker waits forever; the worker answers at once, before the
# job starts (runTimeoutInSeconds: 1 to 60, shape MicrovmHooksRunTimeoutInSecondsInteger).
# Ready: the snapshot is taken once the worker listens for /run (readyTimeoutInSeconds 1 to
# 3,600). Validate, suspend, resume and terminate: nothing to do (the idle policy never
# resumes), so they stay DISABLED and are never called.
RUN_HOOK_TIMEOUT_SECONDS = 10
READY_HOOK_TIMEOUT_SECONDS = 300
HOOKS: dict[str, Any] = {
    "port": HOOKS_PORT,
    "microvmHooks": {
        "run": "ENABLED",
        "runTimeoutInSeconds": RUN_HOOK_TIMEOUT_SECONDS,
        "resume": "DISABLED",
        "suspend": "DISABLED",
        "terminate": "DISABLED",
    },
    "microvmImageHooks": {
        "ready": "ENABLED",
        "readyTimeoutInSeconds": READY_HOOK_TIMEOUT_SECONDS,
        "validate": "DISABLED",
    },
}
# The launcher's arm64 function and the worker's image share one architecture (Architecture:
# ARM_64 is the value GetMicrovmImageBuild documents as supported).
IMAGE_ARCHITECTURE = "ARM_64"
# Build-time egress. CreateMicrovmImage.egressNetworkConnectors are "the egress network
# connectors available to the MicroVM at image build time" and RunMicrovm's are those
# "available to the MicroVM at runtime" (botocore lambda-microvms 2025-09-09 model; Lambda
# developer guide, Networking: connectors are specified when you call run-microvm). The build
# runs only the kit's generated Dockerfile (FROM a public base image, COPY, ENV) and the
# worker waiting for /run: it needs the registry, which the kit's connector (the sandbox's
# runtime wall: control plane and allowlist only) must not admit. So the build gets the
# AWS-managed INTERNET_EGRESS connector, named here so it is visible in the render, and every
# MicroVM runs with the connector the launcher passes: the kit's, the only one its role may
# pass (webhook.launcher_policy), so a RunMicrovm that falls back to the default is refused.
BUILD_EGRESS_CONNECTOR = "INTERNET_EGRESS"


def image(kit: Children, args: MicrovmSandboxArgs, access: AwsAccess) -> MicrovmImage:
    """``-image-logs`` (build and runtime output), ``-build-role``, ``-build-policy`` (read the
    worker artifact, write the image's logs) and ``-image`` (a ``MicrovmImage``: hooks set,
    run hook enabled).

    """
    logs = kit.log_group("image-logs")
    build_policy = logs.arn.apply(
        lambda arn: json.dumps(
            policy_document(
                {
                    "Sid": "ReadWorkerArtifact",
                    "Effect": "Allow",
                    "Action": "s3:GetObject",
                    "Resource": args["worker_artifact_arn"],
                },
                {
                    # A failed build leaves its output here, and nowhere else.
                    "Sid": "WriteImageLogs",
                    "Effect": "Allow",
                    "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                    "Resource": f"{arn}:*",
                },
            )
        )
    )
    build_role, grant = kit.role(
        "build", LAMBDA_PRINCIPAL, MICROVM_SOURCE, build_policy, tag_session=True
    )
    spec: dict[str, Any] = {
        "baseImageArn": args["base_image_arn"],
        "buildRoleArn": build_role.arn,
        "codeArtifact": {"uri": args["worker_artifact_uri"]},
        "description": "sandboxkit worker; run hook enabled; runs with the kit's connector",
        "egressNetworkConnectors": [managed_connector_arn(access.region, BUILD_EGRESS_CONNECTOR)],
        "hooks": HOOKS,
        "logging": {"cloudWatch": {"logGroup": logs.name}},
        "cpuConfigurations": [{"architecture": IMAGE_ARCHITECTURE}],
    }
    return MicrovmImage(
        f"{kit.name}-image",
        image=spec,
        access=access,
        tags=trusted_tags(kit.tags, args["trusted_accounts"]),
        # The build assumes the role at once: it must already read the artifact and log.
        opts=kit.after(grant, logs),
    )


def execution_role(
    kit: Children, args: MicrovmSandboxArgs, component: pulumi.Resource
) -> tuple[aws.iam.Role, aws.iam.RolePolicy] | None:
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
