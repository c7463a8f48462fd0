"""The MicroVMs' only way out: the kit's Lambda ``CoreNetworkConnector`` in the private subnets,
with its security group and an operator role limited to this connector's subnets and group."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

# The ec2 resource modules themselves, not the package (``sdk_parts``).
from pulumi_aws.ec2.security_group import SecurityGroup
from pulumi_aws.ec2.subnet import Subnet
from pulumi_aws.ec2.vpc import Vpc

from sandboxkit.aws.children import Children, SourceContext, policy_document
from sandboxkit.aws.network import ANYWHERE, resolver_address
from sandboxkit.aws.plan import EgressPlan, MicrovmSandboxArgs

if TYPE_CHECKING:
    from pulumi_aws.ec2 import SecurityGroupEgressArgsDict

CONNECTOR_PRINCIPAL = "network-connectors.lambda.amazonaws.com"
# The connector's operator role (AWSLambdaNetworkConnectorOperatorPolicy's principal): no
# confused-deputy keys are documented for it, so the account is pinned whenever one is sent.
CONNECTOR_SOURCE = SourceContext(
    documented=False,
    source_arn=None,
    source="Lambda network connectors, operator role (no source keys documented)",
)


def managed_connector_arn(region: str, kind: str) -> str:
    """The ARN of the AWS-managed network connector ``kind`` (``INTERNET_EGRESS``,
    ``HTTP_INGRESS``, ``SHELL_INGRESS``) in ``region``: they live in the pseudo-account ``aws``
    (Lambda developer guide, "Networking": ingress connectors are AWS-managed and referenced by
    ARN; AWS agent toolkit ``aws-lambda-microvms`` networking reference)."""
    return f"arn:aws:lambda:{region}:aws:network-connector:aws-network-connector:{kind}"


def security_group_egress(plan: EgressPlan, vpc_cidr: str) -> list[SecurityGroupEgressArgsDict]:
    """The connector security group's egress rules (ingress: none).

    Each name entry's port to any address (a security group cannot follow resolved addresses;
    the firewall checks the name on that port and that the address was resolved); each
    IP-literal entry's own port to that address only; DNS to the VPC resolver. No port opens
    for nothing: 443 only when a name (the control plane's, usually) uses it. With ``open``,
    all TCP.
    """
    resolver = f"{resolver_address(vpc_cidr)}/32"
    rules: list[SecurityGroupEgressArgsDict] = [
        {"protocol": "udp", "from_port": 53, "to_port": 53, "cidr_blocks": [resolver]},
        {"protocol": "tcp", "from_port": 53, "to_port": 53, "cidr_blocks": [resolver]},
    ]
    if plan.mode == "open":
        return [
            *rules,
            {"protocol": "tcp", "from_port": 0, "to_port": 65535, "cidr_blocks": [ANYWHERE]},
        ]
    for port in plan.tcp_ports:
        rules.append(
            {"protocol": "tcp", "from_port": port, "to_port": port, "cidr_blocks": [ANYWHERE]}
        )
    for rule in plan.ip_rules:
        if rule.port not in plan.tcp_ports:
            rules.append(
                {
                    "protocol": "tcp",
                    "from_port": rule.port,
                    "to_port": rule.port,
                    "cidr_blocks": [f"{rule.host}/32"],
                }
            )
    return rules


def connector(
    kit: Children, args: MicrovmSandboxArgs, vpc: Vpc, subnets: list[Subnet]
) -> aws.lambda_.CoreNetworkConnector:
    """``-connector-sg``, ``-connector-role``, ``-connector-policy`` and ``-connector`` (MicroVM
    ENIs in ``subnets``, IPv4)."""
    group = SecurityGroup(
        f"{kit.name}-connector-sg",
        vpc_id=vpc.id,
        description="sandboxkit MicroVM egress: HTTPS (the firewall checks names) and DNS",
        ingress=[],
        egress=security_group_egress(args["egress"], args["vpc_cidr"]),
        revoke_rules_on_delete=True,
        tags=kit.tags,
        opts=kit.opts,
    )
    # AWSLambdaNetworkConnectorOperatorPolicy, narrowed to this connector's subnets and
    # security group.
    policy = pulumi.Output.all(group.arn, *(s.arn for s in subnets)).apply(
        lambda arns: json.dumps(
            policy_document(
                {
                    "Sid": "CreateEniInKitSubnets",
                    "Effect": "Allow",
                    "Action": "ec2:CreateNetworkInterface",
                    "Resource": sorted(arns),
                },
                {
                    "Sid": "CreateEniWithLambdaTags",
                    "Effect": "Allow",
                    "Action": "ec2:CreateNetworkInterface",
                    "Resource": "arn:aws:ec2:*:*:network-interface/*",
                    "Condition": {
                        "ForAllValues:StringEquals": {
                            "aws:TagKeys": [
                                "aws:lambda:networkConnectorName",
                                "aws:lambda:networkConnectorId",
                            ]
                        }
                    },
                },
                {
                    "Sid": "TagEniOnCreate",
                    "Effect": "Allow",
                    "Action": "ec2:CreateTags",
                    "Resource": "arn:aws:ec2:*:*:network-interface/*",
                    "Condition": {
                        "StringEquals": {
                            "ec2:CreateAction": "CreateNetworkInterface",
                            "ec2:ManagedResourceOperator": CONNECTOR_PRINCIPAL,
                        }
                    },
                },
            )
        )
    )
    role, grant = kit.role("connector", CONNECTOR_PRINCIPAL, CONNECTOR_SOURCE, policy)
    return aws.lambda_.CoreNetworkConnector(
        f"{kit.name}-connector",
        operator_role=role.arn,
        configuration={
            "vpc_egress_configuration": {
                "associated_compute_resource_types": ["MicroVm"],
                "network_protocol": "IPv4",
                "subnet_ids": [s.id for s in subnets],
                "security_group_ids": [group.id],
            }
        },
        # The connector creates its ENIs as the operator role at once: not before it may.
        opts=kit.after(grant),
    )
