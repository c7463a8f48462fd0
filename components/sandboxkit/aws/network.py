"""The kit's VPC: per zone a private (connector), a firewall and a public (NAT) subnet, the
routes through the firewall both ways, and the VPC flow log.

Path of a sandbox's traffic: MicroVM -> the kit's VPC connector ENI (private subnet, security
group) -> AWS Network Firewall endpoint (firewall subnet) -> NAT gateway (public subnet) ->
internet gateway. Replies come back through the firewall: the public route table sends the
private subnet's range to the firewall endpoint of the same zone.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any

import pulumi

# The ec2 resource modules themselves, not the package (``sdk_parts``).
from pulumi_aws.ec2.eip import Eip
from pulumi_aws.ec2.flow_log import FlowLog
from pulumi_aws.ec2.internet_gateway import InternetGateway
from pulumi_aws.ec2.nat_gateway import NatGateway
from pulumi_aws.ec2.route import Route
from pulumi_aws.ec2.route_table import RouteTable
from pulumi_aws.ec2.route_table_association import RouteTableAssociation
from pulumi_aws.ec2.subnet import Subnet
from pulumi_aws.ec2.vpc import Vpc

from sandboxkit.aws.children import Children, SourceContext, policy_document
from sandboxkit.aws.plan import MicrovmSandboxArgs

FLOW_LOGS_PRINCIPAL = "vpc-flow-logs.amazonaws.com"
# Amazon VPC user guide, "IAM role for publishing flow logs to CloudWatch Logs": the source
# account is the flow log's owner and the source ARN the flow log's ARN (a wildcard for the
# id, which is unknown until the flow log exists).
FLOW_LOGS_SOURCE = SourceContext(
    documented=True,
    source_arn="arn:aws:ec2:{region}:{account}:vpc-flow-log/*",
    source="Amazon VPC user guide, flow-logs-iam-role",
)
ANYWHERE = "0.0.0.0/0"
TIERS = ("private", "firewall", "public")


def resolver_address(vpc_cidr: str) -> str:
    """The VPC's Amazon DNS resolver: the network address plus two (``10.20.0.2``)."""
    return str(ipaddress.IPv4Network(vpc_cidr).network_address + 2)


def subnet_layout(vpc_cidr: str, zones: int) -> dict[str, list[str]]:
    """Carve ``vpc_cidr`` into 16 equal blocks: per zone a private, a firewall, a public one.

    Returns:
        ``{"private": [...], "firewall": [...], "public": [...]}``, one CIDR per zone each.
    """
    network = ipaddress.IPv4Network(vpc_cidr)
    blocks = [str(b) for b in network.subnets(new_prefix=network.prefixlen + 4)]
    return {
        "private": blocks[0:zones],
        "firewall": blocks[zones : 2 * zones],
        "public": blocks[2 * zones : 3 * zones],
    }


@dataclass(frozen=True)
class Network:
    """The VPC and, per tier (``private``, ``firewall``, ``public``), a subnet and route table
    per zone."""

    vpc: Vpc
    igw: InternetGateway
    layout: dict[str, list[str]]
    subnets: dict[str, list[Subnet]]
    tables: dict[str, list[RouteTable]]


def vpc(kit: Children, args: MicrovmSandboxArgs) -> Network:
    """``-vpc``, ``-igw`` and per tier and zone ``-<tier>-<az>`` with ``-rt`` and ``-rta``."""
    name, opts = kit.name, kit.opts
    zones = args["availability_zones"]
    layout = subnet_layout(args["vpc_cidr"], len(zones))
    network = Vpc(
        f"{name}-vpc",
        cidr_block=args["vpc_cidr"],
        enable_dns_support=True,
        enable_dns_hostnames=True,
        tags=kit.tags,
        opts=opts,
    )
    igw = InternetGateway(f"{name}-igw", vpc_id=network.id, tags=kit.tags, opts=opts)
    subnets: dict[str, list[Subnet]] = {}
    tables: dict[str, list[RouteTable]] = {}
    for tier in TIERS:
        subnets[tier], tables[tier] = [], []
        for index, zone in enumerate(zones):
            subnet = Subnet(
                f"{name}-{tier}-{index}",
                vpc_id=network.id,
                cidr_block=layout[tier][index],
                availability_zone=zone,
                map_public_ip_on_launch=False,
                tags=kit.tags,
                opts=opts,
            )
            table = RouteTable(
                f"{name}-{tier}-{index}-rt", vpc_id=network.id, tags=kit.tags, opts=opts
            )
            RouteTableAssociation(
                f"{name}-{tier}-{index}-rta",
                subnet_id=subnet.id,
                route_table_id=table.id,
                opts=opts,
            )
            subnets[tier].append(subnet)
            tables[tier].append(table)
    return Network(network, igw, layout, subnets, tables)


def routes(kit: Children, network: Network, endpoints: list[pulumi.Output[str]]) -> None:
    """Per zone ``-nat-eip-<az>``, ``-nat-<az>`` and the routes through the firewall endpoint
    ``endpoints[az]``: ``-private-<az>-default``, ``-firewall-<az>-default``,
    ``-public-<az>-default``, ``-public-<az>-return``."""
    name, opts, tables = kit.name, kit.opts, network.tables
    for index, endpoint in enumerate(endpoints):
        eip = Eip(
            f"{name}-nat-eip-{index}", domain="vpc", tags=kit.tags, opts=kit.after(network.igw)
        )
        nat = NatGateway(
            f"{name}-nat-{index}",
            allocation_id=eip.id,
            subnet_id=network.subnets["public"][index].id,
            connectivity_type="public",
            tags=kit.tags,
            opts=opts,
        )
        # Sandbox traffic goes to the firewall, then to NAT, then out.
        Route(
            f"{name}-private-{index}-default",
            route_table_id=tables["private"][index].id,
            destination_cidr_block=ANYWHERE,
            vpc_endpoint_id=endpoint,
            opts=opts,
        )
        Route(
            f"{name}-firewall-{index}-default",
            route_table_id=tables["firewall"][index].id,
            destination_cidr_block=ANYWHERE,
            nat_gateway_id=nat.id,
            opts=opts,
        )
        Route(
            f"{name}-public-{index}-default",
            route_table_id=tables["public"][index].id,
            destination_cidr_block=ANYWHERE,
            gateway_id=network.igw.id,
            opts=opts,
        )
        # Replies from NAT to the sandboxes go back through the same firewall endpoint:
        # without this the VPC's local route skips it and the stateful engine sees half a flow.
        Route(
            f"{name}-public-{index}-return",
            route_table_id=tables["public"][index].id,
            destination_cidr_block=network.layout["private"][index],
            vpc_endpoint_id=endpoint,
            opts=opts,
        )


def flow_log(kit: Children, network: Vpc) -> None:
    """``-flow-logs``, ``-flow-log-role``, ``-flow-log-policy`` and ``-flow-log`` (all traffic)."""
    group = kit.log_group("flow-logs")
    policy = group.arn.apply(lambda arn: json.dumps(_flow_log_policy(arn)))
    role, grant = kit.role("flow-log", FLOW_LOGS_PRINCIPAL, FLOW_LOGS_SOURCE, policy)
    FlowLog(
        f"{kit.name}-flow-log",
        vpc_id=network.id,
        traffic_type="ALL",
        log_destination_type="cloud-watch-logs",
        log_destination=group.arn,
        iam_role_arn=role.arn,
        max_aggregation_interval=60,
        tags=kit.tags,
        # EC2 checks that it may pass the role; the first delivery needs its permissions.
        opts=kit.after(grant),
    )


def _flow_log_policy(arn: str) -> dict[str, Any]:
    return policy_document(
        {
            "Effect": "Allow",
            "Action": [
                "logs:CreateLogStream",
                "logs:PutLogEvents",
                "logs:DescribeLogStreams",
            ],
            "Resource": [arn, f"{arn}:*"],
        }
    )
