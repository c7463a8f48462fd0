"""``MicrovmSandbox``: Lambda MicroVMs behind a signed-webhook launcher, egress walled in a VPC.

Path of a sandbox's traffic: MicroVM -> the kit's VPC connector ENI (private subnet, security
group) -> AWS Network Firewall endpoint (firewall subnet) -> NAT gateway (public subnet) ->
internet gateway. Replies come back through the firewall: the public route table sends the
private subnet's range to the firewall endpoint of the same zone. Names resolve through the VPC
resolver, behind a fail-closed Route 53 Resolver DNS Firewall. See docs/targets/aws-microvm.md.

Each part lives in its own module: ``network`` (VPC, routes, flow log), ``firewall`` (Network
Firewall), ``dns_firewall``, ``connector``, ``image`` (image and execution role), ``webhook``
(secrets, launcher, HTTP API, ingress policy); ``children`` holds what they share.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from sandboxkit.aws import connector, dns_firewall, firewall, image, network, webhook
from sandboxkit.aws.children import Children
from sandboxkit.aws.dynamic_api import ASSUME_ROLE_SESSION
from sandboxkit.aws.plan import (
    MAX_DURATION_SECONDS,
    MIN_IDLE_SECONDS,
    AwsAccess,
    MicrovmSandboxArgs,
)
from sandboxkit.aws.type_tokens import COMPONENT


def provider_args(access: AwsAccess) -> dict[str, Any]:
    """The explicit ``aws.Provider``'s region and, when set, profile and role to assume: the
    same identity the dynamic resources' API calls use (``dynamic_api.session``)."""
    found: dict[str, Any] = {"region": access.region}
    if access.profile is not None:
        found["profile"] = access.profile
    if access.role_arn is not None:
        # An Args class, not a dict: the provider's nested config reaches the engine as JSON,
        # and only the class carries the wire (camel case) names.
        found["assume_roles"] = [
            aws.ProviderAssumeRoleArgs(
                role_arn=access.role_arn,
                session_name=ASSUME_ROLE_SESSION,
                external_id=access.external_id,
            )
        ]
    return found


class MicrovmSandbox(pulumi.ComponentResource):
    """The MicroVM image, its walled egress, the webhook launcher and their logs and secrets.

    Children (``<name>`` is the component name; ``<az>`` each availability zone's index):
        ``<name>-provider``; network: ``-vpc``, ``-igw``, ``-private-<az>``, ``-firewall-<az>``,
        ``-public-<az>`` subnets, each with ``-rt``, ``-rta`` and routes (``-private-<az>-default``,
        ``-firewall-<az>-default``, ``-public-<az>-default``, ``-public-<az>-return``),
        ``-nat-eip-<az>``, ``-nat-<az>``; ``-connector-sg``, ``-connector-role``,
        ``-connector-policy``, ``-connector``; firewall: ``-fw-domains``, ``-fw-ip-rules``
        (IP entries or ``open``), ``-fw-policy`` (a ``FirewallPolicyDocument``), ``-fw``,
        ``-fw-alert-logs``, ``-fw-flow-logs``, ``-fw-logging``; DNS: ``-dns-allowed``,
        ``-dns-all``, ``-dns-rules``, ``-dns-allow``, ``-dns-block`` (not ``open``),
        ``-dns-association``, ``-dns-config``; flow logs: ``-flow-logs``, ``-flow-log-role``,
        ``-flow-log-policy``, ``-flow-log``; image: ``-image-logs``, ``-build-role``,
        ``-build-policy``, ``-image`` (a ``MicrovmImage``); ``-execution-role`` and
        ``-execution-policy`` (if configured); secrets:
        ``-webhook-secret(-value)``, ``-credential-key(-value)``; launcher: ``-launcher-logs``,
        ``-launcher-role``, ``-launcher-policy``, ``-launcher``, ``-api``, ``-api-logs``,
        ``-api-integration``, ``-api-route``, ``-api-stage``, ``-api-permission``;
        ``-ingress-policy`` (``authToken``).

    Raises:
        ValueError: for a lifetime above 28,800 s, an idle timeout below 60 s, an exec timeout
            above the lifetime, or a launcher concurrency below 1.
    """

    webhook_url: pulumi.Output[str]
    launcher_function_name: pulumi.Output[str]
    image_arn: pulumi.Output[str]
    connector_arn: pulumi.Output[str]
    firewall_arn: pulumi.Output[str]
    log_group_names: pulumi.Output[list[str]]

    def __init__(
        self, name: str, args: MicrovmSandboxArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(COMPONENT.token, name, None, opts)
        if not 1 <= args["max_duration_seconds"] <= MAX_DURATION_SECONDS:
            raise ValueError(f"max_duration_seconds: from 1 to {MAX_DURATION_SECONDS}")
        if args["idle_timeout_seconds"] < MIN_IDLE_SECONDS:
            raise ValueError(f"idle_timeout_seconds: at least {MIN_IDLE_SECONDS}")
        if not 1 <= args["exec_timeout_seconds"] <= args["max_duration_seconds"]:
            raise ValueError("exec_timeout_seconds: from 1 to max_duration_seconds")
        if args["launcher_concurrency"] < 1:
            raise ValueError("launcher_concurrency: at least 1")

        provider = aws.Provider(
            f"{name}-provider",
            **provider_args(args["access"]),
            opts=pulumi.ResourceOptions(parent=self),
        )
        # The account the provider deploys into: every role's trust policy is pinned to it.
        identity = aws.get_caller_identity_output(
            opts=pulumi.InvokeOutputOptions(parent=self, provider=provider)
        )
        kit = Children(
            name=name,
            tags=dict(args["labels"]),
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
            account=identity.account_id,
            region=args["access"].region,
            log_retention_days=args["log_retention_days"],
        )
        plan = args["egress"]
        net = network.vpc(kit, args)
        # The DNS Firewall rule group first: the firewall policy validates destinations
        # against the addresses its VPC's resolver returned.
        dns_rules = dns_firewall.dns_firewall(
            kit,
            plan,
            net.vpc,
            mutation_protection=args["dns_firewall_mutation_protection"],
        )
        walls = firewall.network_firewall(
            kit, plan, net.vpc, net.subnets["firewall"], dns_rules=dns_rules, access=args["access"]
        )
        network.routes(kit, net, firewall.endpoints(walls, net.subnets["firewall"]))
        way_out = connector.connector(kit, args, net.vpc, net.subnets["private"])
        network.flow_log(kit, net.vpc)
        microvm_image = image.image(kit, args, args["access"])
        execution_role = image.execution_role(kit, args, self)
        launcher, api = webhook.launcher(kit, args, microvm_image, way_out, execution_role)
        if args["ingress"] == "authToken":
            webhook.ingress_policy(kit, args, microvm_image)

        self.webhook_url = api.api_endpoint.apply(lambda url: f"{url}/launch")
        self.launcher_function_name = launcher.name
        self.image_arn = microvm_image.arn
        self.connector_arn = way_out.arn
        self.firewall_arn = walls.arn
        self.log_group_names = pulumi.Output.all(*(g.name for g in kit.log_groups)).apply(list)
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, pulumi.Output[Any]]:
        """Stack outputs: webhookUrl, launcherFunctionName, imageArn, connectorArn, firewallArn,
        logGroupNames."""
        return {
            "webhookUrl": self.webhook_url,
            "launcherFunctionName": self.launcher_function_name,
            "imageArn": self.image_arn,
            "connectorArn": self.connector_arn,
            "firewallArn": self.firewall_arn,
            "logGroupNames": self.log_group_names,
        }
