"""The AWS Network Firewall between the sandboxes and NAT: its stateful rule groups, policy,
firewall and logging, and the endpoint id of each zone (for the routes)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from sandboxkit.aws.children import Children
from sandboxkit.aws.plan import EgressPlan

# Network Firewall rule-group capacity cannot change after creation: room for 500 names with
# both target types, and for 100 IP pass rules.
DOMAIN_LIST_CAPACITY = 1000
IP_RULES_CAPACITY = 100
# Strict-order priorities: IP pass rules, then the domain allowlist.
IP_RULES_PRIORITY = 100
DOMAIN_RULES_PRIORITY = 200
FIRST_SID = 1_000_001


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
    firewall: aws.networkfirewall.Firewall, subnets: list[aws.ec2.Subnet]
) -> list[pulumi.Output[str]]:
    """The firewall's endpoint id in each of ``subnets``, in order."""
    return [
        pulumi.Output.all(firewall.firewall_statuses, subnet.id).apply(
            lambda pair: endpoint_in(pair[0], pair[1])
        )
        for subnet in subnets
    ]


def network_firewall(
    kit: Children, plan: EgressPlan, vpc: aws.ec2.Vpc, subnets: list[aws.ec2.Subnet]
) -> aws.networkfirewall.Firewall:
    """``-fw-ip-rules`` (IP entries or ``open``), ``-fw-domains``, ``-fw-policy``, ``-fw`` in
    ``subnets``, ``-fw-alert-logs``, ``-fw-flow-logs`` and ``-fw-logging``."""
    name, opts = kit.name, kit.opts
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
            tags=kit.tags,
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
        tags=kit.tags,
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
