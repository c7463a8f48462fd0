"""The AWS Network Firewall between the sandboxes and NAT: its stateful rule groups, policy,
firewall and logging, and the endpoint id of each zone (for the routes)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

# The ec2 resource modules themselves, not the package (``sdk_parts``).
from pulumi_aws.ec2.subnet import Subnet
from pulumi_aws.ec2.vpc import Vpc

from sandboxkit.aws.children import Children
from sandboxkit.aws.firewall_policy import FirewallPolicyDocument, kit_document
from sandboxkit.aws.plan import MAX_IP_ENTRIES, MAX_NAME_ENTRIES, AwsAccess, EgressPlan
from sandboxkit.aws.suricata import FIRST_SID, ip_rules, name_rules, open_rule, syn_data_rule

# Rule-group capacity cannot change after creation (see plan.MAX_NAME_ENTRIES).
NAME_RULES_CAPACITY = 2 * MAX_NAME_ENTRIES
IP_RULES_CAPACITY = MAX_IP_ENTRIES
# Strict-order priorities: IP pass rules, then the name rules.
IP_RULES_PRIORITY = 100
NAME_RULES_PRIORITY = 200


def _field(value: Any, snake: str, camel: str) -> Any:
    # Typed outputs are dict subclasses keyed in snake case; untyped ones keep the wire's
    # camel case.
    return value.get(snake, value.get(camel)) if isinstance(value, dict) else None


def endpoint_in(statuses: Any, subnet_id: str) -> str:
    """The firewall endpoint id attached to ``subnet_id`` (from ``firewall_statuses``)."""
    for status in statuses or []:
        for sync in _field(status, "sync_states", "syncStates") or []:
            for attachment in _field(sync, "attachments", "attachments") or []:
                if _field(attachment, "subnet_id", "subnetId") == subnet_id:
                    return str(_field(attachment, "endpoint_id", "endpointId"))
    raise ValueError(f"no Network Firewall endpoint in subnet {subnet_id}")


def endpoints(
    firewall: aws.networkfirewall.Firewall, subnets: list[Subnet]
) -> list[pulumi.Output[str]]:
    """The firewall's endpoint id in each of ``subnets``, in order."""
    return [
        pulumi.Output.all(firewall.firewall_statuses, subnet.id).apply(
            lambda pair: endpoint_in(pair[0], pair[1])
        )
        for subnet in subnets
    ]


def _rule_group(
    kit: Children, part: str, capacity: int, description: str, lines: list[str]
) -> aws.networkfirewall.RuleGroup:
    # A stateful group of Suricata rules in strict order (the policy's order must match).
    return aws.networkfirewall.RuleGroup(
        f"{kit.name}-{part}",
        type="STATEFUL",
        capacity=capacity,
        description=description,
        rule_group={
            "rules_source": {"rules_string": "\n".join(lines)},
            "stateful_rule_options": {"rule_order": "STRICT_ORDER"},
        },
        tags=kit.tags,
        opts=kit.opts,
    )


def network_firewall(
    kit: Children,
    plan: EgressPlan,
    vpc: Vpc,
    subnets: list[Subnet],
    *,
    dns_rules: aws.route53.ResolverFirewallRuleGroup,
    access: AwsAccess,
) -> aws.networkfirewall.Firewall:
    """``-fw-ip-rules`` (IP entries or ``open``), ``-fw-domains`` (name rules), ``-fw-policy``
    (the whole policy document, resolved-IP validation against ``dns_rules`` included, written
    through the API as ``access``), ``-fw`` in ``subnets``, ``-fw-alert-logs``,
    ``-fw-flow-logs`` and ``-fw-logging``.

    Both rule groups hold Suricata pass rules from ``sandboxkit.aws.suricata`` (no domain list:
    its rules match any port and a ``.x`` target matches ``x`` too).
    """
    name, opts = kit.name, kit.opts
    references: list[tuple[pulumi.Output[str], int]] = []
    if plan.mode == "open" or plan.ip_rules:
        lines = (
            [open_rule(FIRST_SID)] if plan.mode == "open" else ip_rules(plan.ip_rules, FIRST_SID)
        )
        ip_group = _rule_group(
            kit,
            "fw-ip-rules",
            IP_RULES_CAPACITY,
            "sandboxkit: IP-literal allowlist entries (or all TCP when open)",
            lines,
        )
        references.append((ip_group.arn, IP_RULES_PRIORITY))
    domains = _rule_group(
        kit,
        "fw-domains",
        NAME_RULES_CAPACITY,
        "sandboxkit: TLS SNI and HTTP Host of the control-plane hosts and the profile's names, "
        "each on its own port",
        [
            # Before every name rule: the SYN that carries data, which no later rule sees.
            syn_data_rule(FIRST_SID - 1),
            *name_rules(
                plan.names,
                FIRST_SID + len(plan.ip_rules),
                excluded=plan.ip_rules,
                resolved_domain=plan.mode != "open",
            ),
        ],
    )
    references.append((domains.arn, NAME_RULES_PRIORITY))
    # Resolved-IP validation: a destination must be an address the VPC resolver returned (for
    # an allowed name: the DNS Firewall answers no other); IP entries are exempt. Not with
    # open, where any address is allowed.
    policy = FirewallPolicyDocument(
        f"{name}-fw-policy",
        document=kit_document(
            references,
            None if plan.mode == "open" else dns_rules.id,
            [rule.cidr for rule in plan.ip_rules],
        ),
        access=access,
        description="sandboxkit: strict order, drop established, resolved-IP validation",
        tags=kit.tags,
        opts=opts,
    )
    firewall = aws.networkfirewall.Firewall(
        f"{name}-fw",
        vpc_id=vpc.id,
        firewall_policy_arn=policy.arn,
        subnet_mappings=[{"subnet_id": s.id} for s in subnets],
        subnet_change_protection=True,
        tags=kit.tags,
        opts=opts,
    )
    alert_logs = kit.log_group("fw-alert-logs")
    flow_logs = kit.log_group("fw-flow-logs")
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
