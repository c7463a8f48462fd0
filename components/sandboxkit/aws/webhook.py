"""The webhook path: the two secrets (the webhook HMAC key and the worker-credential key, both
read by the launcher only), the launcher Lambda behind an API Gateway HTTP API
(``POST /launch``), the launcher's role, and the ingress policy for MicroVM auth tokens."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from sandboxkit.aws.children import Children, SourceContext, policy_document, trusted_tags
from sandboxkit.aws.connector import managed_connector_arn
from sandboxkit.aws.image import LAMBDA_PRINCIPAL
from sandboxkit.aws.launcher_package import launcher_package
from sandboxkit.aws.microvm_image import MicrovmImage
from sandboxkit.aws.plan import MicrovmSandboxArgs
from sandboxkit.boundary import (
    LAUNCHER_CONNECTOR_ARN,
    LAUNCHER_CONTROL_PLANE_URL,
    LAUNCHER_CREDENTIAL_KEY_SECRET_ARN,
    LAUNCHER_EXEC_TIMEOUT_SECONDS,
    LAUNCHER_EXECUTION_ROLE_ARN,
    LAUNCHER_IDLE_TIMEOUT_SECONDS,
    LAUNCHER_IMAGE_ARN,
    LAUNCHER_INGRESS_CONNECTOR_ARN,
    LAUNCHER_MAX_DURATION_SECONDS,
    LAUNCHER_REPLAY_WINDOW_SECONDS,
    LAUNCHER_WEBHOOK_SECRET_ARN,
    MAX_AGE_TAG,
)
from sandboxkit.secrets import SecretValue

# The launcher's code: launcher_package (handler ``handler.handler``, boto3 bundled).
LAUNCHER_HANDLER = "handler.handler"
# RunMicrovm's ingress connector, passed explicitly: the default one RunMicrovm would pass
# implicitly, for which the caller needs lambda:PassNetworkConnector all the same (AWS agent
# toolkit aws-lambda-microvms IAM reference: every connector passed, defaults included). The
# worker receives its job through the /run hook; the endpoint serves only what auth tokens
# (ingress authToken) open.
INGRESS_CONNECTOR = "HTTP_INGRESS"
LAUNCHER_RUNTIME = "python3.12"
# An HTTP API waits 30 s for its integration; the launcher answers well within that.
LAUNCHER_TIMEOUT_SECONDS = 25
LAUNCHER_MEMORY_MIB = 256
WEBHOOK_ROUTE = "POST /launch"
# Lambda developer guide, "Working with AWS managed policies in the execution role": when
# Lambda assumes a function's execution role, aws:SourceAccount and aws:SourceArn may be used
# in its trust policy. The source ARN's shape is not given there, so only the account is pinned.
FUNCTION_SOURCE = SourceContext(
    documented=True,
    source_arn=None,
    source="Lambda developer guide, permissions-managed-policies (execution role trust)",
)


def _secret(
    kit: Children, part: str, value: SecretValue, description: str, tags: dict[str, str]
) -> aws.secretsmanager.Secret:
    secret = aws.secretsmanager.Secret(
        f"{kit.name}-{part}",
        description=description,
        recovery_window_in_days=7,
        tags=tags,
        opts=kit.opts,
    )
    aws.secretsmanager.SecretVersion(
        f"{kit.name}-{part}-value",
        secret_id=secret.id,
        secret_string=value.output(),
        opts=kit.opts,
    )
    return secret


def launcher(
    kit: Children,
    args: MicrovmSandboxArgs,
    image: MicrovmImage,
    connector: aws.lambda_.CoreNetworkConnector,
    execution_role: tuple[aws.iam.Role, aws.iam.RolePolicy] | None,
) -> tuple[aws.lambda_.Function, aws.apigatewayv2.Api]:
    """Secrets ``-webhook-secret(-value)`` and ``-credential-key(-value)``; ``-launcher-logs``,
    ``-launcher-role``, ``-launcher-policy``, ``-launcher``; ``-api``, ``-api-integration``,
    ``-api-route``, ``-api-logs``, ``-api-stage``, ``-api-permission``.

    Returns:
        The launcher function and its HTTP API.
    """
    name, opts = kit.name, kit.opts
    webhook = _secret(
        kit, "webhook-secret", args["webhook_secret"], "sandboxkit webhook HMAC key", kit.tags
    )
    max_age = str(args["worker_credential_key_max_age_days"])
    credential_key = _secret(
        kit,
        "credential-key",
        args["worker_credential_key"],
        f"sandboxkit worker-credential signing key (launcher and platform only); "
        f"replace within {max_age} days",
        {**kit.tags, MAX_AGE_TAG: max_age},
    )
    logs = kit.log_group("launcher-logs")
    role_arn = execution_role[0].arn if execution_role is not None else None
    ingress = managed_connector_arn(kit.region, INGRESS_CONNECTOR)
    policy = pulumi.Output.all(
        image.arn, connector.arn, webhook.arn, credential_key.arn, logs.arn, role_arn
    ).apply(lambda a: json.dumps(launcher_policy(a[0], [a[1], ingress], [a[2], a[3]], a[4], a[5])))
    role, grant = kit.role("launcher", LAMBDA_PRINCIPAL, FUNCTION_SOURCE, policy)
    environment: dict[str, pulumi.Input[str]] = {
        LAUNCHER_IMAGE_ARN: image.arn,
        LAUNCHER_CONNECTOR_ARN: connector.arn,
        LAUNCHER_INGRESS_CONNECTOR_ARN: ingress,
        LAUNCHER_WEBHOOK_SECRET_ARN: webhook.arn,
        LAUNCHER_CREDENTIAL_KEY_SECRET_ARN: credential_key.arn,
        LAUNCHER_MAX_DURATION_SECONDS: str(args["max_duration_seconds"]),
        LAUNCHER_IDLE_TIMEOUT_SECONDS: str(args["idle_timeout_seconds"]),
        LAUNCHER_EXEC_TIMEOUT_SECONDS: str(args["exec_timeout_seconds"]),
        LAUNCHER_REPLAY_WINDOW_SECONDS: str(args["replay_window_seconds"]),
        LAUNCHER_CONTROL_PLANE_URL: args["control_plane_url"],
    }
    # The first webhook may come as soon as the function exists: its role's permissions
    # (and the execution role's, which a MicroVM assumes at once) must exist before it.
    ready: list[pulumi.Resource] = [logs, grant]
    if execution_role is not None:
        environment[LAUNCHER_EXECUTION_ROLE_ARN] = execution_role[0].arn
        ready.append(execution_role[1])
    function = aws.lambda_.Function(
        f"{name}-launcher",
        runtime=LAUNCHER_RUNTIME,
        handler=LAUNCHER_HANDLER,
        code=pulumi.FileArchive(str(launcher_package())),
        role=role.arn,
        architectures=["arm64"],
        timeout=LAUNCHER_TIMEOUT_SECONDS,
        memory_size=LAUNCHER_MEMORY_MIB,
        reserved_concurrent_executions=args["launcher_concurrency"],
        layers=list(args["launcher_layers"]),
        environment={"variables": environment},
        logging_config={"log_format": "JSON", "log_group": logs.name},
        tags=trusted_tags(kit.tags, args["trusted_accounts"]),
        opts=kit.after(*ready),
    )
    # An HTTP API rather than a function URL: one POST route only, stage throttling, access
    # logs, and an invoke permission scoped to this API's route instead of a public
    # "principal *" URL policy. Both deliver the payload-format-2.0 event the launcher reads.
    api = aws.apigatewayv2.Api(
        f"{name}-api",
        protocol_type="HTTP",
        description="sandboxkit launcher webhook",
        tags=kit.tags,
        opts=opts,
    )
    integration = aws.apigatewayv2.Integration(
        f"{name}-api-integration",
        api_id=api.id,
        integration_type="AWS_PROXY",
        integration_uri=function.invoke_arn,
        integration_method="POST",
        payload_format_version="2.0",
        opts=opts,
    )
    aws.apigatewayv2.Route(
        f"{name}-api-route",
        api_id=api.id,
        route_key=WEBHOOK_ROUTE,
        target=integration.id.apply(lambda i: f"integrations/{i}"),
        opts=opts,
    )
    api_logs = kit.log_group("api-logs")
    concurrency = args["launcher_concurrency"]
    aws.apigatewayv2.Stage(
        f"{name}-api-stage",
        api_id=api.id,
        name="$default",
        auto_deploy=True,
        access_log_settings={
            "destination_arn": api_logs.arn,
            "format": json.dumps(
                {
                    "requestId": "$context.requestId",
                    "ip": "$context.identity.sourceIp",
                    "time": "$context.requestTime",
                    "route": "$context.routeKey",
                    "status": "$context.status",
                    "integrationStatus": "$context.integrationStatus",
                }
            ),
        },
        default_route_settings={
            "throttling_burst_limit": concurrency,
            "throttling_rate_limit": float(concurrency),
        },
        tags=kit.tags,
        opts=opts,
    )
    aws.lambda_.Permission(
        f"{name}-api-permission",
        action="lambda:InvokeFunction",
        function=function.name,
        principal="apigateway.amazonaws.com",
        source_arn=api.execution_arn.apply(lambda arn: f"{arn}/*/POST/launch"),
        opts=opts,
    )
    return function, api


def ingress_policy(kit: Children, args: MicrovmSandboxArgs, image: MicrovmImage) -> None:
    """``-ingress-policy``: a managed policy letting its holder mint MicroVM auth tokens, and
    never shell tokens (:func:`ingress_document`)."""
    port = args["ingress_port"]
    region = args["access"].region
    aws.iam.Policy(
        f"{kit.name}-ingress-policy",
        description=(
            "sandboxkit: mint short-lived auth tokens for the MicroVMs' HTTPS endpoint; "
            f"request allowedPorts [{{port: {port}}}] only (IAM cannot enforce the port); "
            "never shell tokens"
        ),
        policy=pulumi.Output.all(kit.account, image.arn).apply(
            lambda a: json.dumps(ingress_document(region, a[0], a[1]))
        ),
        tags={**kit.tags, "sandboxkit-ingress-port": str(port)},
        opts=kit.opts,
    )


def ingress_document(region: str, account: str, image_arn: str) -> dict[str, Any]:
    """The ingress policy: ``CreateMicrovmAuthToken`` on this account's MicroVMs in ``region``
    and on this image, and an explicit Deny of ``CreateMicrovmShellAuthToken`` everywhere.

    What IAM can and cannot say here (checked 2026-12-01):

    * Actions: the ``lambda-microvms`` operations ``CreateMicrovmAuthToken`` and
      ``CreateMicrovmShellAuthToken`` (botocore 1.44.8 service model, signing name
      ``lambda``), authorized in IAM's ``lambda:`` namespace like ``RunMicrovm``.
    * Resources: ``arn:aws:lambda:<region>:<account>:microvm:*`` plus the image ARN. A
      MicroVM's ARN carries an opaque id, not its image, so the ARN alone cannot single out
      this image's MicroVMs. Listing the image ARN narrows the grant to them if the service
      authorizes these calls against the image a MicroVM runs, which public deployments report
      for ``CreateMicrovmAuthToken`` and ``GetMicrovm`` (observed from refused calls, not an
      AWS statement); the Service Authorization Reference rows for the MicroVM actions could
      not be read to confirm it. If the service checks the MicroVM ARN only, the grant covers
      every MicroVM of this account in ``region``; never anything outside them.
    * Condition keys: none. No condition key from the Service Authorization Reference's
      ``lambda`` page could be confirmed for these actions (IAM accepts unknown keys
      silently, so an unconfirmed one would look like a limit and be none). In particular
      no key for ``allowedPorts`` is known: a holder can request ``allPorts`` or any port,
      including the worker's hooks port, of any MicroVM this grant covers. The kit's other
      guards: the spec refuses ``ingressPort`` equal to the hooks port, and the worker takes
      one ``/run`` only (409 after it).
    * Shell tokens need the ``SHELL_INGRESS`` connector on the MicroVM (API reference,
      ``CreateMicrovmShellAuthToken``); the launcher may pass only the kit's egress connector
      and ``HTTP_INGRESS`` (``lambda:PassNetworkConnector`` on those alone), so no kit MicroVM
      has one. The Deny keeps
      a broader policy attached beside this one from granting shell tokens to its holder.
    """
    return policy_document(
        {
            "Sid": "MintIngressTokens",
            "Effect": "Allow",
            "Action": "lambda:CreateMicrovmAuthToken",
            "Resource": [f"arn:aws:lambda:{region}:{account}:microvm:*", image_arn],
        },
        {
            "Sid": "NoShellTokens",
            "Effect": "Deny",
            "Action": "lambda:CreateMicrovmShellAuthToken",
            "Resource": "*",
        },
    )


def launcher_policy(
    image_arn: str,
    connector_arns: list[str],
    secret_arns: list[str],
    log_group_arn: str,
    execution_role_arn: str | None,
) -> dict[str, Any]:
    """The launcher role's only policy: run this image with these connectors, read the two
    secrets, write its own logs, and pass the execution role if there is one.

    Actions are in IAM's ``lambda:`` namespace (the ``lambda-microvms`` API authorizes as
    ``lambda:RunMicrovm``; ``lambda:PassNetworkConnector`` is RunMicrovm's dependent action
    for every connector it passes, the defaults it passes implicitly included). So
    ``connector_arns`` are exactly what the launcher passes: the kit's egress connector and
    ``HTTP_INGRESS``. ``INTERNET_EGRESS`` is not among them, so a RunMicrovm that omitted its
    egress list (and fell back to that default) would be refused.
    """
    statements: list[dict[str, Any]] = [
        {
            "Sid": "RunKitImage",
            "Effect": "Allow",
            "Action": "lambda:RunMicrovm",
            "Resource": image_arn,
        },
        {
            "Sid": "PassLaunchConnectors",
            "Effect": "Allow",
            "Action": "lambda:PassNetworkConnector",
            "Resource": connector_arns,
        },
        {
            "Sid": "ReadLaunchSecrets",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": secret_arns,
        },
        {
            "Sid": "WriteOwnLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": f"{log_group_arn}:*",
        },
    ]
    if execution_role_arn is not None:
        statements.append(
            {
                "Sid": "PassExecutionRole",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": execution_role_arn,
            }
        )
    return policy_document(*statements)
