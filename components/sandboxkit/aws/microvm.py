"""``MicrovmSandbox``: Lambda MicroVMs behind a signed-webhook launcher, egress walled in a VPC.

Path of a sandbox's traffic: MicroVM -> the kit's VPC connector ENI (private subnet, security
group) -> AWS Network Firewall endpoint (firewall subnet) -> NAT gateway (public subnet) ->
internet gateway. Replies come back through the firewall: the public route table sends the
private subnet's range to the firewall endpoint of the same zone. Names resolve through the VPC
resolver, behind a fail-closed Route 53 Resolver DNS Firewall. See docs/targets/aws-microvm.md.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws

from sandboxkit.aws.plan import (
    MAX_DURATION_SECONDS,
    MIN_IDLE_SECONDS,
    EgressPlan,
    MicrovmSandboxArgs,
)
from sandboxkit.contract import (
    LAUNCHER_CONNECTOR_ARN,
    LAUNCHER_CONTROL_PLANE_URL,
    LAUNCHER_EXEC_TIMEOUT_SECONDS,
    LAUNCHER_EXECUTION_ROLE_ARN,
    LAUNCHER_IDLE_TIMEOUT_SECONDS,
    LAUNCHER_IMAGE_ARN,
    LAUNCHER_MAX_DURATION_SECONDS,
    LAUNCHER_REPLAY_WINDOW_SECONDS,
    LAUNCHER_WEBHOOK_SECRET_ARN,
    LAUNCHER_WORKER_KEY_SECRET_ARN,
    STACK_LABEL,
)
from sandboxkit.secrets import SecretValue

# The launcher's code: the folder beside this module (handler ``handler.handler``).
LAUNCHER_DIR = Path(__file__).resolve().parent / "launcher"
LAUNCHER_HANDLER = "handler.handler"
LAUNCHER_RUNTIME = "python3.12"
# An HTTP API waits 30 s for its integration; the launcher answers well within that.
LAUNCHER_TIMEOUT_SECONDS = 25
LAUNCHER_MEMORY_MIB = 256
WEBHOOK_ROUTE = "POST /launch"
# Network Firewall rule-group capacity cannot change after creation: room for 500 names with
# both target types, and for 100 IP pass rules.
DOMAIN_LIST_CAPACITY = 1000
IP_RULES_CAPACITY = 100
# Strict-order priorities: IP pass rules, then the domain allowlist.
IP_RULES_PRIORITY = 100
DOMAIN_RULES_PRIORITY = 200
# DNS Firewall: allow the listed names first, then block every other name.
DNS_ALLOW_PRIORITY = 100
DNS_BLOCK_PRIORITY = 200
DNS_ASSOCIATION_PRIORITY = 101
FIRST_SID = 1_000_001
LAMBDA_PRINCIPAL = "lambda.amazonaws.com"
CONNECTOR_PRINCIPAL = "network-connectors.lambda.amazonaws.com"
FLOW_LOGS_PRINCIPAL = "vpc-flow-logs.amazonaws.com"
ANYWHERE = "0.0.0.0/0"


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


def suricata_rules(plan: EgressPlan) -> str:
    """Stateful pass rules: one per IP-literal entry (exactly IP:port), or all TCP for ``open``."""
    if plan.mode == "open":
        return (
            'pass tcp $HOME_NET any -> $EXTERNAL_NET any (msg:"sandboxkit egress open"; '
            f"flow:to_server; sid:{FIRST_SID}; rev:1;)"
        )
    return "\n".join(
        f'pass tcp $HOME_NET any -> {rule.host} {rule.port} (msg:"sandboxkit allow {rule}"; '
        f"flow:to_server; sid:{FIRST_SID + index}; rev:1;)"
        for index, rule in enumerate(plan.ip_rules)
    )


def security_group_egress(
    plan: EgressPlan, vpc_cidr: str
) -> list[aws.ec2.SecurityGroupEgressArgsDict]:
    """The connector security group's egress rules (ingress: none).

    TCP 443 (and 80 where an entry asks for it) to any address, since the firewall checks the
    name; each IP-literal entry's own port to that address only; DNS to the VPC resolver.
    With ``open``, all TCP.
    """
    resolver = f"{resolver_address(vpc_cidr)}/32"
    rules: list[aws.ec2.SecurityGroupEgressArgsDict] = [
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


def _policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def _trust(service: str, *, tag_session: bool = False) -> str:
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    return json.dumps(
        _policy({"Effect": "Allow", "Principal": {"Service": service}, "Action": actions})
    )


def _field(value: Any, snake: str, camel: str) -> Any:
    # Typed outputs are dict subclasses keyed in snake case; untyped ones keep the wire's
    # camel case.
    return value.get(snake, value.get(camel)) if isinstance(value, dict) else None


def _endpoint_in(statuses: Any, subnet_id: str) -> str:
    """The firewall endpoint id attached to ``subnet_id`` (from ``firewall_statuses``)."""
    for status in statuses or []:
        for sync in _field(status, "sync_states", "syncStates") or []:
            for attachment in _field(sync, "attachments", "attachments") or []:
                if _field(attachment, "subnet_id", "subnetId") == subnet_id:
                    return str(_field(attachment, "endpoint_id", "endpointId"))
    raise ValueError(f"no Network Firewall endpoint in subnet {subnet_id}")


class MicrovmSandbox(pulumi.ComponentResource):
    """The MicroVM image, its walled egress, the webhook launcher and their logs and secrets.

    Children (``<name>`` is the component name; ``<az>`` each availability zone's index):
        ``<name>-provider``; network: ``-vpc``, ``-igw``, ``-private-<az>``, ``-firewall-<az>``,
        ``-public-<az>`` subnets, each with ``-rt``, ``-rta`` and routes (``-private-<az>-default``,
        ``-firewall-<az>-default``, ``-public-<az>-default``, ``-public-<az>-return``),
        ``-nat-eip-<az>``, ``-nat-<az>``; ``-connector-sg``, ``-connector-role``,
        ``-connector-policy``, ``-connector``; firewall: ``-fw-domains``, ``-fw-ip-rules``
        (IP entries or ``open``), ``-fw-policy``, ``-fw``, ``-fw-alert-logs``, ``-fw-flow-logs``,
        ``-fw-logging``; DNS: ``-dns-allowed``, ``-dns-all``, ``-dns-rules``, ``-dns-allow``,
        ``-dns-block`` (not ``open``), ``-dns-association``, ``-dns-config``; flow logs:
        ``-flow-logs``, ``-flow-log-role``, ``-flow-log-policy``, ``-flow-log``; image:
        ``-build-role``, ``-build-policy``, ``-image``; ``-execution-role`` and
        ``-execution-policy`` (if configured); secrets: ``-webhook-secret(-value)``,
        ``-worker-key(-value)``; launcher: ``-launcher-logs``, ``-launcher-role``,
        ``-launcher-policy``, ``-launcher``, ``-api``, ``-api-logs``, ``-api-integration``,
        ``-api-route``, ``-api-stage``, ``-api-permission``; ``-ingress-policy`` (``authToken``).

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
        super().__init__("sandboxkit:index:MicrovmSandbox", name, None, opts)
        if not 1 <= args["max_duration_seconds"] <= MAX_DURATION_SECONDS:
            raise ValueError(f"max_duration_seconds: from 1 to {MAX_DURATION_SECONDS}")
        if args["idle_timeout_seconds"] < MIN_IDLE_SECONDS:
            raise ValueError(f"idle_timeout_seconds: at least {MIN_IDLE_SECONDS}")
        if not 1 <= args["exec_timeout_seconds"] <= args["max_duration_seconds"]:
            raise ValueError("exec_timeout_seconds: from 1 to max_duration_seconds")
        if args["launcher_concurrency"] < 1:
            raise ValueError("launcher_concurrency: at least 1")

        self._name = name
        self._args = args
        self._tags = dict(args["labels"])
        provider = aws.Provider(
            f"{name}-provider", region=args["region"], opts=pulumi.ResourceOptions(parent=self)
        )
        self._opts = pulumi.ResourceOptions(parent=self, provider=provider)
        self._log_groups: list[aws.cloudwatch.LogGroup] = []

        vpc, private_subnets = self._network()
        connector = self._connector(vpc, private_subnets)
        self._flow_log(vpc)
        self._dns_firewall(vpc)
        image = self._image(connector)
        execution_role = self._execution_role()
        launcher, api = self._launcher(image, connector, execution_role)
        if args["ingress"] == "authToken":
            self._ingress_policy(image)

        self.webhook_url = api.api_endpoint.apply(lambda url: f"{url}/launch")
        self.launcher_function_name = launcher.name
        self.image_arn = image.arn
        self.connector_arn = connector.arn
        self.firewall_arn = self._firewall.arn
        self.log_group_names = pulumi.Output.all(*(g.name for g in self._log_groups)).apply(list)
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

    # --- helpers -------------------------------------------------------------------------------

    def _child(self, *depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
        if not depends_on:
            return self._opts
        return pulumi.ResourceOptions.merge(
            self._opts, pulumi.ResourceOptions(depends_on=list(depends_on))
        )

    def _log_group(self, part: str) -> aws.cloudwatch.LogGroup:
        group = aws.cloudwatch.LogGroup(
            f"{self._name}-{part}",
            name=f"/sandboxkit/{self._tags[STACK_LABEL]}/{self._name}/{part}",
            retention_in_days=self._args["log_retention_days"],
            tags=self._tags,
            opts=self._opts,
        )
        self._log_groups.append(group)
        return group

    def _role(
        self, part: str, service: str, policy: pulumi.Input[str], *, tag_session: bool = False
    ) -> aws.iam.Role:
        role = aws.iam.Role(
            f"{self._name}-{part}-role",
            assume_role_policy=_trust(service, tag_session=tag_session),
            tags=self._tags,
            opts=self._opts,
        )
        aws.iam.RolePolicy(
            f"{self._name}-{part}-policy", role=role.id, policy=policy, opts=self._opts
        )
        return role

    # --- network -------------------------------------------------------------------------------

    def _network(self) -> tuple[aws.ec2.Vpc, list[aws.ec2.Subnet]]:
        name, args, opts = self._name, self._args, self._opts
        zones = args["availability_zones"]
        layout = subnet_layout(args["vpc_cidr"], len(zones))
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args["vpc_cidr"],
            enable_dns_support=True,
            enable_dns_hostnames=True,
            tags=self._tags,
            opts=opts,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=self._tags, opts=opts)
        subnets: dict[str, list[aws.ec2.Subnet]] = {}
        tables: dict[str, list[aws.ec2.RouteTable]] = {}
        for tier in ("private", "firewall", "public"):
            subnets[tier], tables[tier] = [], []
            for index, zone in enumerate(zones):
                subnet = aws.ec2.Subnet(
                    f"{name}-{tier}-{index}",
                    vpc_id=vpc.id,
                    cidr_block=layout[tier][index],
                    availability_zone=zone,
                    map_public_ip_on_launch=False,
                    tags=self._tags,
                    opts=opts,
                )
                table = aws.ec2.RouteTable(
                    f"{name}-{tier}-{index}-rt", vpc_id=vpc.id, tags=self._tags, opts=opts
                )
                aws.ec2.RouteTableAssociation(
                    f"{name}-{tier}-{index}-rta",
                    subnet_id=subnet.id,
                    route_table_id=table.id,
                    opts=opts,
                )
                subnets[tier].append(subnet)
                tables[tier].append(table)

        self._firewall = self._network_firewall(vpc, subnets["firewall"])
        for index, _zone in enumerate(zones):
            endpoint = pulumi.Output.all(
                self._firewall.firewall_statuses, subnets["firewall"][index].id
            ).apply(lambda pair: _endpoint_in(pair[0], pair[1]))
            eip = aws.ec2.Eip(
                f"{name}-nat-eip-{index}", domain="vpc", tags=self._tags, opts=self._child(igw)
            )
            nat = aws.ec2.NatGateway(
                f"{name}-nat-{index}",
                allocation_id=eip.id,
                subnet_id=subnets["public"][index].id,
                connectivity_type="public",
                tags=self._tags,
                opts=opts,
            )
            # Sandbox traffic goes to the firewall, then to NAT, then out.
            aws.ec2.Route(
                f"{name}-private-{index}-default",
                route_table_id=tables["private"][index].id,
                destination_cidr_block=ANYWHERE,
                vpc_endpoint_id=endpoint,
                opts=opts,
            )
            aws.ec2.Route(
                f"{name}-firewall-{index}-default",
                route_table_id=tables["firewall"][index].id,
                destination_cidr_block=ANYWHERE,
                nat_gateway_id=nat.id,
                opts=opts,
            )
            aws.ec2.Route(
                f"{name}-public-{index}-default",
                route_table_id=tables["public"][index].id,
                destination_cidr_block=ANYWHERE,
                gateway_id=igw.id,
                opts=opts,
            )
            # Replies from NAT to the sandboxes go back through the same firewall endpoint:
            # without this the VPC's local route skips it and the stateful engine sees half a flow.
            aws.ec2.Route(
                f"{name}-public-{index}-return",
                route_table_id=tables["public"][index].id,
                destination_cidr_block=layout["private"][index],
                vpc_endpoint_id=endpoint,
                opts=opts,
            )
        return vpc, subnets["private"]

    def _network_firewall(
        self, vpc: aws.ec2.Vpc, subnets: list[aws.ec2.Subnet]
    ) -> aws.networkfirewall.Firewall:
        name, plan, opts = self._name, self._args["egress"], self._opts
        strict: aws.networkfirewall.RuleGroupRuleGroupStatefulRuleOptionsArgsDict = {
            "rule_order": "STRICT_ORDER"
        }
        references: list[
            aws.networkfirewall.FirewallPolicyFirewallPolicyStatefulRuleGroupReferenceArgsDict
        ] = []
        if plan.mode == "open" or plan.ip_rules:
            ip_rules = aws.networkfirewall.RuleGroup(
                f"{name}-fw-ip-rules",
                type="STATEFUL",
                capacity=IP_RULES_CAPACITY,
                description="sandboxkit: IP-literal allowlist entries (or all TCP when open)",
                rule_group={
                    "rules_source": {"rules_string": suricata_rules(plan)},
                    "stateful_rule_options": strict,
                },
                tags=self._tags,
                opts=opts,
            )
            references.append({"resource_arn": ip_rules.arn, "priority": IP_RULES_PRIORITY})
        domains = aws.networkfirewall.RuleGroup(
            f"{name}-fw-domains",
            type="STATEFUL",
            capacity=DOMAIN_LIST_CAPACITY,
            description="sandboxkit: control-plane hosts and the profile's allowlisted names",
            rule_group={
                "rules_source": {
                    "rules_source_list": {
                        "generated_rules_type": "ALLOWLIST",
                        "target_types": ["TLS_SNI", "HTTP_HOST"],
                        "targets": list(plan.firewall_domains),
                    }
                },
                "stateful_rule_options": strict,
            },
            tags=self._tags,
            opts=opts,
        )
        references.append({"resource_arn": domains.arn, "priority": DOMAIN_RULES_PRIORITY})
        policy = aws.networkfirewall.FirewallPolicy(
            f"{name}-fw-policy",
            firewall_policy={
                "stateless_default_actions": ["aws:forward_to_sfe"],
                "stateless_fragment_default_actions": ["aws:forward_to_sfe"],
                "stateful_engine_options": {"rule_order": "STRICT_ORDER"},
                # Drop whatever no pass rule matched once the flow is established (the TLS
                # SNI / HTTP Host is known only then), and log it.
                "stateful_default_actions": ["aws:drop_established", "aws:alert_established"],
                "stateful_rule_group_references": references,
            },
            tags=self._tags,
            opts=opts,
        )
        firewall = aws.networkfirewall.Firewall(
            f"{name}-fw",
            vpc_id=vpc.id,
            firewall_policy_arn=policy.arn,
            subnet_mappings=[{"subnet_id": s.id} for s in subnets],
            subnet_change_protection=True,
            tags=self._tags,
            opts=opts,
        )
        alert_logs = self._log_group("fw-alert-logs")
        flow_logs = self._log_group("fw-flow-logs")
        aws.networkfirewall.LoggingConfiguration(
            f"{name}-fw-logging",
            firewall_arn=firewall.arn,
            logging_configuration={
                "log_destination_configs": [
                    {
                        "log_destination": {"logGroup": group.name},
                        "log_destination_type": "CloudWatchLogs",
                        "log_type": log_type,
                    }
                    for group, log_type in ((alert_logs, "ALERT"), (flow_logs, "FLOW"))
                ]
            },
            opts=opts,
        )
        return firewall

    def _connector(
        self, vpc: aws.ec2.Vpc, subnets: list[aws.ec2.Subnet]
    ) -> aws.lambda_.CoreNetworkConnector:
        name, args = self._name, self._args
        group = aws.ec2.SecurityGroup(
            f"{name}-connector-sg",
            vpc_id=vpc.id,
            description="sandboxkit MicroVM egress: HTTPS (the firewall checks names) and DNS",
            ingress=[],
            egress=security_group_egress(args["egress"], args["vpc_cidr"]),
            revoke_rules_on_delete=True,
            tags=self._tags,
            opts=self._opts,
        )
        # AWSLambdaNetworkConnectorOperatorPolicy, narrowed to this connector's subnets and
        # security group.
        policy = pulumi.Output.all(group.arn, *(s.arn for s in subnets)).apply(
            lambda arns: json.dumps(
                _policy(
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
        role = self._role("connector", CONNECTOR_PRINCIPAL, policy)
        return aws.lambda_.CoreNetworkConnector(
            f"{name}-connector",
            operator_role=role.arn,
            configuration={
                "vpc_egress_configuration": {
                    "associated_compute_resource_types": ["MicroVm"],
                    "network_protocol": "IPv4",
                    "subnet_ids": [s.id for s in subnets],
                    "security_group_ids": [group.id],
                }
            },
            opts=self._opts,
        )

    def _flow_log(self, vpc: aws.ec2.Vpc) -> None:
        group = self._log_group("flow-logs")
        policy = group.arn.apply(
            lambda arn: json.dumps(
                _policy(
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
            )
        )
        role = self._role("flow-log", FLOW_LOGS_PRINCIPAL, policy)
        aws.ec2.FlowLog(
            f"{self._name}-flow-log",
            vpc_id=vpc.id,
            traffic_type="ALL",
            log_destination_type="cloud-watch-logs",
            log_destination=group.arn,
            iam_role_arn=role.arn,
            max_aggregation_interval=60,
            tags=self._tags,
            opts=self._opts,
        )

    def _dns_firewall(self, vpc: aws.ec2.Vpc) -> None:
        name, plan, opts = self._name, self._args["egress"], self._opts
        allowed = aws.route53.ResolverFirewallDomainList(
            f"{name}-dns-allowed", domains=list(plan.dns_names), tags=self._tags, opts=opts
        )
        everything = aws.route53.ResolverFirewallDomainList(
            f"{name}-dns-all", domains=["*"], tags=self._tags, opts=opts
        )
        group = aws.route53.ResolverFirewallRuleGroup(
            f"{name}-dns-rules", tags=self._tags, opts=opts
        )
        aws.route53.ResolverFirewallRule(
            f"{name}-dns-allow",
            firewall_rule_group_id=group.id,
            firewall_domain_list_id=allowed.id,
            action="ALLOW",
            priority=DNS_ALLOW_PRIORITY,
            opts=opts,
        )
        if plan.mode != "open":
            aws.route53.ResolverFirewallRule(
                f"{name}-dns-block",
                firewall_rule_group_id=group.id,
                firewall_domain_list_id=everything.id,
                action="BLOCK",
                block_response="NXDOMAIN",
                priority=DNS_BLOCK_PRIORITY,
                opts=opts,
            )
        aws.route53.ResolverFirewallRuleGroupAssociation(
            f"{name}-dns-association",
            vpc_id=vpc.id,
            firewall_rule_group_id=group.id,
            priority=DNS_ASSOCIATION_PRIORITY,
            mutation_protection="ENABLED",
            tags=self._tags,
            opts=opts,
        )
        # Fail closed: if the DNS Firewall cannot answer, queries fail rather than bypass it.
        aws.route53.ResolverFirewallConfig(
            f"{name}-dns-config", resource_id=vpc.id, firewall_fail_open="DISABLED", opts=opts
        )

    # --- image, roles, secrets, launcher ------------------------------------------------------

    def _image(self, connector: aws.lambda_.CoreNetworkConnector) -> aws.lambdamicrovms.Image:
        args = self._args
        build_policy = json.dumps(
            _policy(
                {
                    "Effect": "Allow",
                    "Action": "s3:GetObject",
                    "Resource": args["worker_artifact_arn"],
                }
            )
        )
        build_role = self._role("build", LAMBDA_PRINCIPAL, build_policy, tag_session=True)
        return aws.lambdamicrovms.Image(
            f"{self._name}-image",
            base_image_arn=args["base_image_arn"],
            build_role_arn=build_role.arn,
            code_artifact={"uri": args["worker_artifact_uri"]},
            # Only the kit's connector: the service default is INTERNET_EGRESS.
            egress_network_connectors=[connector.arn],
            description="sandboxkit worker; egress through the kit's VPC connector only",
            tags=self._tags,
            opts=self._opts,
        )

    def _execution_role(self) -> aws.iam.Role | None:
        document = self._args["execution_role_policy"]
        if document is None:
            return None
        pulumi.log.warn(
            f"{self._name}: a MicroVM execution role is configured; code in the sandbox can "
            "read its credentials (IMDS inside the guest). Grant only what every job may use.",
            resource=self,
        )
        return self._role("execution", LAMBDA_PRINCIPAL, json.dumps(document), tag_session=True)

    def _secret(
        self, part: str, value: SecretValue, description: str, tags: dict[str, str]
    ) -> aws.secretsmanager.Secret:
        secret = aws.secretsmanager.Secret(
            f"{self._name}-{part}",
            description=description,
            recovery_window_in_days=7,
            tags=tags,
            opts=self._opts,
        )
        aws.secretsmanager.SecretVersion(
            f"{self._name}-{part}-value",
            secret_id=secret.id,
            secret_string=value.output(),
            opts=self._opts,
        )
        return secret

    def _launcher(
        self,
        image: aws.lambdamicrovms.Image,
        connector: aws.lambda_.CoreNetworkConnector,
        execution_role: aws.iam.Role | None,
    ) -> tuple[aws.lambda_.Function, aws.apigatewayv2.Api]:
        name, args, opts = self._name, self._args, self._opts
        webhook = self._secret(
            "webhook-secret", args["webhook_secret"], "sandboxkit webhook HMAC key", self._tags
        )
        max_age = str(args["worker_key_max_age_days"])
        worker_key = self._secret(
            "worker-key",
            args["worker_key"],
            f"sandboxkit job-scoped worker key; replace within {max_age} days",
            {**self._tags, "sandboxkit-max-age-days": max_age},
        )
        logs = self._log_group("launcher-logs")
        role_arn = execution_role.arn if execution_role is not None else None
        policy = pulumi.Output.all(
            image.arn, connector.arn, webhook.arn, worker_key.arn, logs.arn, role_arn
        ).apply(lambda a: json.dumps(launcher_policy(a[0], a[1], [a[2], a[3]], a[4], a[5])))
        role = self._role("launcher", LAMBDA_PRINCIPAL, policy)
        environment: dict[str, pulumi.Input[str]] = {
            LAUNCHER_IMAGE_ARN: image.arn,
            LAUNCHER_CONNECTOR_ARN: connector.arn,
            LAUNCHER_WEBHOOK_SECRET_ARN: webhook.arn,
            LAUNCHER_WORKER_KEY_SECRET_ARN: worker_key.arn,
            LAUNCHER_MAX_DURATION_SECONDS: str(args["max_duration_seconds"]),
            LAUNCHER_IDLE_TIMEOUT_SECONDS: str(args["idle_timeout_seconds"]),
            LAUNCHER_EXEC_TIMEOUT_SECONDS: str(args["exec_timeout_seconds"]),
            LAUNCHER_REPLAY_WINDOW_SECONDS: str(args["replay_window_seconds"]),
            LAUNCHER_CONTROL_PLANE_URL: args["control_plane_url"],
        }
        if execution_role is not None:
            environment[LAUNCHER_EXECUTION_ROLE_ARN] = execution_role.arn
        function = aws.lambda_.Function(
            f"{name}-launcher",
            runtime=LAUNCHER_RUNTIME,
            handler=LAUNCHER_HANDLER,
            code=pulumi.FileArchive(str(LAUNCHER_DIR)),
            role=role.arn,
            architectures=["arm64"],
            timeout=LAUNCHER_TIMEOUT_SECONDS,
            memory_size=LAUNCHER_MEMORY_MIB,
            reserved_concurrent_executions=args["launcher_concurrency"],
            layers=list(args["launcher_layers"]),
            environment={"variables": environment},
            logging_config={"log_format": "JSON", "log_group": logs.name},
            tags=self._tags,
            opts=self._child(logs),
        )
        # An HTTP API rather than a function URL: one POST route only, stage throttling, access
        # logs, and an invoke permission scoped to this API's route instead of a public
        # "principal *" URL policy. Both deliver the payload-format-2.0 event the launcher reads.
        api = aws.apigatewayv2.Api(
            f"{name}-api",
            protocol_type="HTTP",
            description="sandboxkit launcher webhook",
            tags=self._tags,
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
        api_logs = self._log_group("api-logs")
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
            tags=self._tags,
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

    def _ingress_policy(self, image: aws.lambdamicrovms.Image) -> None:
        port = self._args["ingress_port"]
        region = self._args["region"]
        aws.iam.Policy(
            f"{self._name}-ingress-policy",
            description=(
                "sandboxkit: mint short-lived auth tokens for the MicroVMs' HTTPS endpoint; "
                f"request allowedPorts [{{port: {port}}}] only"
            ),
            policy=image.arn.apply(
                lambda arn: json.dumps(
                    _policy(
                        {
                            "Effect": "Allow",
                            "Action": "lambda:CreateMicrovmAuthToken",
                            "Resource": f"arn:aws:lambda:{region}:{arn.split(':')[4]}:microvm:*",
                        }
                    )
                )
            ),
            tags={**self._tags, "sandboxkit-ingress-port": str(port)},
            opts=self._opts,
        )


def launcher_policy(
    image_arn: str,
    connector_arn: str,
    secret_arns: list[str],
    log_group_arn: str,
    execution_role_arn: str | None,
) -> dict[str, Any]:
    """The launcher role's only policy: run this image with this connector, read the two
    secrets, write its own logs, and pass the execution role if there is one.

    Actions are in IAM's ``lambda:`` namespace (the ``lambda-microvms`` API authorizes as
    ``lambda:RunMicrovm``; ``lambda:PassNetworkConnector`` is RunMicrovm's dependent action
    for the connectors it names).
    """
    statements: list[dict[str, Any]] = [
        {
            "Sid": "RunKitImage",
            "Effect": "Allow",
            "Action": "lambda:RunMicrovm",
            "Resource": image_arn,
        },
        {
            "Sid": "PassKitConnector",
            "Effect": "Allow",
            "Action": "lambda:PassNetworkConnector",
            "Resource": connector_arn,
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
    return _policy(*statements)
