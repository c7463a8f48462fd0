"""The aws-microvm target's egress checks (SBX-NET-*): the connectors MicroVMs run with, the
connector's security group, the Network Firewall rule groups and policy, the DNS firewall.
``guard.py`` lists these handlers with the folder's others."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sandboxkit.aws.suricata import read_rules
from sandboxkit.aws.type_tokens import (
    CONNECTOR,
    DNS_FIREWALL_CONFIG,
    FIREWALL_POLICY,
    FIREWALL_POLICY_DOCUMENT,
    FUNCTION,
    MICROVM_IMAGES,
    RULE_GROUP,
    SECURITY_GROUP,
)
from sandboxkit.aws.type_tokens import EGRESS_RULE as SECURITY_GROUP_EGRESS_RULE
from sandboxkit.boundary import INTERNET_EGRESS_CONNECTOR as INTERNET_EGRESS
from sandboxkit.boundary import LAUNCHER_CONNECTOR_ARN
from sandboxkit.guard import (
    CheckContext,
    Handler,
    StackHandler,
    StackResource,
    dig,
    items,
    labelled_target,
    launcher_env,
    of_kind,
)
from sandboxkit.guard_checks import PortSpan, cidr_problems, entries_problems, ports_problem
from sandboxkit.policy_rules import (
    ALLOWLIST_SPECIFIC,
    DEFAULT_DENY,
    DNS_FAIL_CLOSED,
    EGRESS_ATTACHED,
    EGRESS_CLOSED,
)

# --- SBX-NET-001 -------------------------------------------------------------------------------


def _launch_connectors(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # A MicroVM's runtime egress is RunMicrovm's egressNetworkConnectors ("available to the
    # MicroVM at runtime"); an image's are its build's ("at image build time"; botocore
    # lambda-microvms 2025-09-09). So the launcher's connector is what walls a sandbox in.
    variables = launcher_env(props)
    connector = variables.get(LAUNCHER_CONNECTOR_ARN) if variables is not None else None
    if not isinstance(connector, str):
        return
    if ":aws:network-connector:" in connector or INTERNET_EGRESS in connector:
        yield (
            f"MicroVM launcher {ctx.name} runs MicroVMs with the AWS-managed connector "
            f"{connector} ({LAUNCHER_CONNECTOR_ARN}), so they reach the internet unfiltered; "
            "set it to the kit's CoreNetworkConnector."
        )


def _sg_span(rule: Mapping[str, Any], protocol_key: str) -> PortSpan:
    if str(rule.get(protocol_key, "")).lower() in ("-1", "all"):
        return None
    low, high = rule.get("fromPort"), rule.get("toPort")
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return None
    return int(low), int(high)


def _security_group_open(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if labelled_target(props) is None:
        return
    for index, rule in enumerate(items(props.get("egress"))):
        what = f"Security group {ctx.name} egress rule {index}"
        yield from ports_problem(what, [_sg_span(rule, "protocol")], ctx)


def _egress_rule_open(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if labelled_target(props) is None:
        return
    what = f"Security group egress rule {ctx.name}"
    yield from ports_problem(what, [_sg_span(props, "ipProtocol")], ctx)


def _stateful_pass_rules(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[Any]:
    text = dig(props, "ruleGroup.rulesSource.rulesString")
    if not isinstance(text, str):
        return
    try:
        yield from read_rules(text)
    except ValueError as exc:
        raise ValueError(f"Network Firewall rule group {ctx.name}: {exc}") from None


def _suricata_ports(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for rule in _stateful_pass_rules(props, ctx):
        what = f"Network Firewall rule group {ctx.name} pass rule sid {rule.sid}"
        yield from ports_problem(what, [None if rule.port is None else (rule.port, rule.port)], ctx)


# --- SBX-NET-002 -------------------------------------------------------------------------------


def _rule_group_entries(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    source = dig(props, "ruleGroup.rulesSource.rulesSourceList")
    if not isinstance(source, Mapping) or source.get("generatedRulesType") != "ALLOWLIST":
        return
    # Network Firewall writes a subdomain wildcard as a leading dot (".example.com").
    entries = [f"*{t}" if str(t).startswith(".") else str(t) for t in items(source.get("targets"))]
    yield from entries_problems("Network Firewall rule group", ctx.name, entries)


def _address_rule_problems(kind: str, name: str, rule: Any) -> Iterator[str]:
    # A pass rule without a name match admits its destination addresses whatever they serve.
    try:
        address = ipaddress.ip_address(rule.destination)
    except ValueError:
        if rule.port is None:
            return  # every address on every port: SBX-NET-001 reports it (egress open)
        yield (
            f"{kind} {name} pass rule sid {rule.sid} admits {rule.protocol} to "
            f"{rule.destination}, not one address; pass an IP entry's exact address, or match "
            "names with tls.sni / http.host."
        )
        return
    yield from cidr_problems(kind, name, f"{address}/{address.max_prefixlen}", ())


def _suricata_names(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    kind = "Network Firewall rule group"
    for rule in _stateful_pass_rules(props, ctx):
        if rule.buffer is None:
            yield from _address_rule_problems(kind, ctx.name, rule)
            continue
        if rule.scope == "exact-and-below":
            yield (
                f"{kind} {ctx.name} pass rule sid {rule.sid} matches {rule.name} itself as well "
                f"as the names below it (dotprefix); '*.{rule.name}' never includes "
                f'{rule.name}: match content:".{rule.name}"; endswith; without dotprefix.'
            )
        entry = {"exact": rule.name, "below": f"*.{rule.name}"}.get(rule.scope, "*")
        yield from entries_problems(kind, ctx.name, [str(entry)])


# --- SBX-NET-003 -------------------------------------------------------------------------------


def _policy_defaults(
    what: str, policy: Mapping[str, Any], order_key: str, stateful: str, stateless: Sequence[str]
) -> Iterator[str]:
    """Rule order and default actions of a policy document, whatever its key spelling (the
    pulumi-aws input's camel case or the API's Pascal case)."""
    order = dig(policy, order_key, "DEFAULT_ACTION_ORDER")
    if order != "STRICT_ORDER":
        yield (
            f"{what} uses rule order {order}; set {order_key} to STRICT_ORDER so the default "
            "action applies."
        )
    defaults = [str(a) for a in items(policy.get(stateful))]
    if "aws:drop_established" not in defaults:
        yield (
            f"{what} has {stateful} {defaults}; include aws:drop_established so traffic no "
            "pass rule takes is dropped (and the TLS handshake still reaches the SNI match)."
        )
    for key in stateless:
        if "aws:pass" in [str(a) for a in items(policy.get(key))]:
            yield (
                f"{what} passes stateless traffic by default ({key}), bypassing the stateful "
                "rules; set it to aws:forward_to_sfe."
            )


def _firewall_policy(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    what = f"Firewall policy {ctx.name}"
    yield from _policy_defaults(
        what,
        dig(props, "firewallPolicy", {}),
        "statefulEngineOptions.ruleOrder",
        "statefulDefaultActions",
        ("statelessDefaultActions",),
    )
    yield (
        f"{what} cannot hold resolved-IP validation (pulumi-aws has no "
        "Route53ResolvedIPValidation), so a TLS SNI or HTTP Host naming an allowed host passes "
        "to any address; use the kit's FirewallPolicyDocument."
    )


# Resolved-IP validation actions that stop a connection (ALERT only logs it).
_BLOCKING = ("DROP", "REJECT")


def _firewall_policy_document(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # The kit's dynamic resource: the policy in the Network Firewall API's own shape.
    policy = dig(props, "firewallPolicy", {})
    what = f"Firewall policy {ctx.name}"
    yield from _policy_defaults(
        what,
        policy,
        "StatefulEngineOptions.RuleOrder",
        "StatefulDefaultActions",
        ("StatelessDefaultActions", "StatelessFragmentDefaultActions"),
    )
    yield from _resolved_ip_validation(what, dig(policy, "Route53ResolvedIPValidation"))


def _resolved_ip_validation(what: str, validation: Any) -> Iterator[str]:
    if not isinstance(validation, Mapping):
        yield (
            f"{what} has no Route53ResolvedIPValidation, so a TLS SNI or HTTP Host naming an "
            "allowed host passes to any address (a DNS-over-HTTPS resolver, an attacker's "
            "server); the kit leaves it out only for sandboxkit:profile.egress.mode open: set "
            "the mode to deny or allowlist, and the kit's policy validates destinations against "
            "the DNS Firewall rule group's VPC answers."
        )
        return
    action = validation.get("Action")
    if action not in _BLOCKING:
        yield (
            f"{what} resolved-IP validation Action is {action}, which lets unresolved "
            "destinations through; set it to REJECT or DROP."
        )
    if "SourceIPRanges" in validation and not items(validation.get("SourceIPRanges")):
        yield (
            f"{what} resolved-IP validation has an empty SourceIPRanges, which validates no "
            "source; omit it so the firewall's own VPCs are validated."
        )


def _rule_group_kind(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    kind = dig(props, "ruleGroup.rulesSource.rulesSourceList.generatedRulesType")
    if kind is not None and kind != "ALLOWLIST":
        yield (
            f"Network Firewall rule group {ctx.name} is a {kind} domain list, which lets every "
            "other name through; make it an ALLOWLIST."
        )


# --- SBX-NET-004 -------------------------------------------------------------------------------


def _dns_fail_open(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    value = props.get("firewallFailOpen", "ENABLED")
    if value != "DISABLED":
        yield (
            f"DNS firewall config {ctx.name} has firewallFailOpen {value}, so names resolve "
            "unfiltered whenever the firewall is impaired; set it to DISABLED."
        )


# --- SBX-NET-005 -------------------------------------------------------------------------------


def _images_without_egress_controls(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    connectors = of_kind(resources, CONNECTOR)
    images = of_kind(resources, *MICROVM_IMAGES)
    for image in images:
        if (
            not connectors
            or not of_kind(resources, FIREWALL_POLICY, FIREWALL_POLICY_DOCUMENT)
            or not of_kind(resources, DNS_FIREWALL_CONFIG)
        ):
            yield (
                f"MicroVM image {image.name} has no CoreNetworkConnector, Network Firewall "
                "policy and DNS firewall in the stack to hold its egress; deploy them with the "
                "image (the aws-microvm target does).",
                image.urn,
            )


HANDLERS = (
    Handler(
        EGRESS_CLOSED,
        (FUNCTION,),
        _launch_connectors,
        "the launcher function: the connector its MicroVMs run with, never INTERNET_EGRESS",
    ),
    Handler(
        EGRESS_CLOSED,
        (SECURITY_GROUP,),
        _security_group_open,
        "connector security groups: egress destinations and ports",
    ),
    Handler(
        EGRESS_CLOSED,
        (SECURITY_GROUP_EGRESS_RULE,),
        _egress_rule_open,
        "security group egress rules: destination and ports",
    ),
    Handler(
        EGRESS_CLOSED,
        (RULE_GROUP,),
        _suricata_ports,
        "Network Firewall Suricata pass rules: their ports",
    ),
    Handler(
        ALLOWLIST_SPECIFIC,
        (RULE_GROUP,),
        _rule_group_entries,
        "Network Firewall domain lists: each entry a specific public host",
    ),
    Handler(
        ALLOWLIST_SPECIFIC,
        (RULE_GROUP,),
        _suricata_names,
        "Network Firewall Suricata pass rules: none matching any name, a wildcard's apex "
        "(dotprefix) or every address",
    ),
    Handler(
        DEFAULT_DENY,
        (FIREWALL_POLICY,),
        _firewall_policy,
        "pulumi-aws FirewallPolicy: reported, it cannot hold resolved-IP validation",
    ),
    Handler(
        DEFAULT_DENY,
        (FIREWALL_POLICY_DOCUMENT,),
        _firewall_policy_document,
        "the kit's FirewallPolicyDocument: STRICT_ORDER with aws:drop_established, "
        "aws:forward_to_sfe, resolved-IP validation (DROP or REJECT, no empty SourceIPRanges)",
    ),
    Handler(
        DEFAULT_DENY, (RULE_GROUP,), _rule_group_kind, "Network Firewall domain lists: ALLOWLIST"
    ),
    Handler(
        DNS_FAIL_CLOSED,
        (DNS_FIREWALL_CONFIG,),
        _dns_fail_open,
        "Route 53 Resolver DNS Firewall config: firewallFailOpen DISABLED",
    ),
    StackHandler(
        EGRESS_ATTACHED,
        _images_without_egress_controls,
        "each MicroVM image: its connector, Network Firewall and DNS Firewall",
    ),
)
