"""The aws-microvm egress reader: what the rendered resources let a MicroVM reach.

Read from the resources alone (never the profile), following each primitive's documented
semantics:

- Connector security group egress rules (``aws:ec2/securityGroup:SecurityGroup`` and
  ``aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule``): TCP ports per CIDR block, the
  L4 wall every connection passes first. A security group matches addresses only.
- Network Firewall stateful rule groups, strict order (``aws:networkfirewall/ruleGroup``):
  Suricata ``pass`` rules as ``sandboxkit.aws.suricata.read_rules`` reads them; a domain list
  (``rulesSourceList``) as its generated rules, which match any port and a ``.x`` target's
  apex (API reference RulesSourceList; developer guide "Examples of stateful rules", domain
  list rules). ``drop`` rules only narrow and are not read (the reader errs wide). Structured
  stateful rules (``statefulRules``) that pass and stateless rules with an action other than
  ``aws:drop`` / ``aws:forward_to_sfe`` are refused (``ValueError``): not modelled.
- The firewall policy (``FirewallPolicyDocument``, or a pulumi-aws ``FirewallPolicy``): without
  a drop default (``aws:drop_established`` / ``aws:drop_strict``) or with a stateless
  ``aws:pass`` default, whatever the security group allows passes. With
  ``Route53ResolvedIPValidation`` (``DROP``/``REJECT``, ``SourceIPRanges`` absent or not empty)
  a name rule's destination must be an address the VPC resolver returned (API reference
  Route53ResolvedIPValidation), so a name is matched at L7 and checked against the
  destination; without it, only the claimed name is matched (developer guide: domain
  filtering uses the SNI or Host the client sends).
- DNS Firewall rules (``aws:route53/resolverFirewallRule``) by priority: the allowed domain
  list's names resolve; a ``BLOCK`` of ``*`` without ``qType`` stops every other; without one
  every name resolves. ``*.x`` in a DNS Firewall list is read as the names below ``x`` (botocore
  ``route53resolver`` UpdateFirewallDomains: a domain "can optionally start with *"; whether
  the apex is included is not stated: assumed not, to confirm on a first deploy).

Where a match is the kit's own rule text, run in Suricata 7 by ``tests/aws/test_suricata_rules``,
the grant's basis is ``kit-code``; where it relies on Network Firewall or Route 53 behaviour
that cannot run here (resolved-IP validation, domain lists, DNS Firewall), ``platform-doc``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sandboxkit.aws.firewall_policy import RESOURCE_TYPE as POLICY_DOCUMENT
from sandboxkit.aws.suricata import NameScope, PassRule, read_rules
from sandboxkit.effective_egress import (
    EffectiveEgress,
    Grant,
    Ports,
    ResourceView,
    as_dict,
    as_list,
)

TARGET = "aws-microvm"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
RULE_GROUP = "aws:networkfirewall/ruleGroup:RuleGroup"
PLAIN_POLICY = "aws:networkfirewall/firewallPolicy:FirewallPolicy"
DNS_RULE = "aws:route53/resolverFirewallRule:ResolverFirewallRule"
DNS_LIST = "aws:route53/resolverFirewallDomainList:ResolverFirewallDomainList"
ANYWHERE = "0.0.0.0/0"
SURICATA_TESTS = "tests/aws/test_suricata_rules.py (the rules run in Debian's Suricata 7)"
RESOLVED_IP_DOC = (
    "Network Firewall API Route53ResolvedIPValidation: the destination must be an address the "
    "VPC resolver returned; " + SURICATA_TESTS
)
DOMAIN_LIST_DOC = (
    "Network Firewall API RulesSourceList: '.x' matches x and its subdomains; generated rules "
    "match any port"
)
SG_DOC = "EC2 security group egress rules: protocol, port range, CIDR"
DNS_DOC = "Route 53 Resolver DNS Firewall: rules by priority; domain list entries may start with *"
_DROP_DEFAULTS = ("aws:drop_established", "aws:drop_strict")
_BLOCKING = ("DROP", "REJECT")


@dataclass(frozen=True)
class _Opening:
    """What the security group lets out: TCP ports to one CIDR block (``None``: every port)."""

    cidr: ipaddress.IPv4Network
    ports: frozenset[int] | None


def _sg_openings(resources: Sequence[ResourceView]) -> list[_Opening]:
    rules: list[Mapping[str, Any]] = []
    for view in resources:
        if view.type == SECURITY_GROUP:
            rules += [r for r in as_list(view.at("egress")) if isinstance(r, dict)]
        elif view.type == EGRESS_RULE:
            props = dict(view.props)
            rules.append(
                {
                    "protocol": props.get("ipProtocol"),
                    "fromPort": props.get("fromPort"),
                    "toPort": props.get("toPort"),
                    "cidrBlocks": [props.get("cidrIpv4")] if props.get("cidrIpv4") else [],
                }
            )
    found: list[_Opening] = []
    for rule in rules:
        protocol = str(rule.get("protocol", "")).lower()
        if protocol not in ("tcp", "6", "-1", "all"):
            continue
        low, high = rule.get("fromPort"), rule.get("toPort")
        every = protocol in ("-1", "all") or (low in (0, None) and high in (65535, None))
        ports = None if every else frozenset(range(int(low or 0), int(high or 0) + 1))
        for cidr in as_list(rule.get("cidrBlocks")):
            found.append(_Opening(ipaddress.IPv4Network(str(cidr)), ports))
    return found


def _sg_ports(openings: Iterable[_Opening], block: ipaddress.IPv4Network) -> Ports | None:
    """The TCP ports the security group opens to every address of ``block``."""
    ports: set[int] = set()
    for opening in openings:
        if block.subnet_of(opening.cidr):
            if opening.ports is None:
                return "any"
            ports |= opening.ports
    return frozenset(ports) or None


def _narrow(rule_port: int | None, sg: Ports | None) -> Ports | None:
    if sg is None:
        return None
    if rule_port is None:
        return sg
    return frozenset({rule_port}) if sg == "any" or rule_port in sg else None


@dataclass(frozen=True)
class _Policy:
    validated: bool
    drops: bool
    bypass: tuple[str, ...]


def _policy(resources: Sequence[ResourceView]) -> _Policy | None:
    for view in resources:
        if view.type == POLICY_DOCUMENT:
            document = view.at("firewallPolicy")
            document = document if isinstance(document, dict) else {}
            validation = document.get("Route53ResolvedIPValidation")
            validated = (
                isinstance(validation, dict)
                and validation.get("Action") in _BLOCKING
                and _validates_vpc(validation.get("SourceIPRanges"), _vpc_block(resources))
            )
            bypass = (
                tuple(
                    str(a.get("AddressDefinition"))
                    for a in as_list(validation.get("BypassDestinationValidationIPRanges"))
                    if isinstance(a, dict)
                )
                if isinstance(validation, dict)
                else ()
            )
            return _Policy(validated, _drops(document, "Stateful", "Stateless"), bypass)
        if view.type == PLAIN_POLICY:
            document = view.at("firewallPolicy")
            document = document if isinstance(document, dict) else {}
            return _Policy(False, _drops(document, "stateful", "stateless"), ())
    return None


def _validates_vpc(sources: Any, vpc: ipaddress.IPv4Network) -> bool:
    """Whether resolved-IP validation applies to the sandboxes' VPC: ``SourceIPRanges`` absent
    (every source) or one of its ranges holding the whole VPC block (API reference
    Route53ResolvedIPValidation SourceIPRanges: the sources validation applies to)."""
    if sources is None:
        return True
    for entry in as_list(sources):
        try:
            held = ipaddress.ip_network(str(as_dict(entry).get("AddressDefinition")), strict=False)
        except ValueError:
            continue
        if isinstance(held, ipaddress.IPv4Network) and vpc.subnet_of(held):
            return True
    return False


def _drops(document: Mapping[str, Any], stateful: str, stateless: str) -> bool:
    defaults = [str(a) for a in as_list(document.get(f"{stateful}DefaultActions"))]
    passes = "aws:pass" in [str(a) for a in as_list(document.get(f"{stateless}DefaultActions"))]
    return any(a in _DROP_DEFAULTS for a in defaults) and not passes


# Actions of stateless rules that leave a packet to the stateful engine or drop it (API
# reference StatelessRule RuleDefinition Actions); aws:pass lets it out past the stateful rules.
_STATELESS_NARROWING = ("aws:drop", "aws:forward_to_sfe")


def _pass_rules(view: ResourceView) -> list[PassRule]:
    """The pass rules a rule group holds.

    Raises:
        ValueError: for rules that may pass what the reader does not model: a stateless rule
            with an action other than ``aws:drop`` and ``aws:forward_to_sfe`` (``aws:pass``
            skips the stateful engine), or a structured stateful rule (``statefulRules``) with
            action ``PASS``.
    """
    where = f"rule group {view.name}"
    stateless = view.at("ruleGroup.rulesSource.statelessRulesAndCustomActions.statelessRules")
    for rule in as_list(stateless):
        actions = as_list(as_dict(as_dict(rule).get("ruleDefinition")).get("actions"))
        if any(str(a) not in _STATELESS_NARROWING for a in actions):
            raise ValueError(
                f"{where}: a stateless rule with actions {[str(a) for a in actions]}, which "
                "the reader does not model (aws:pass lets traffic past the stateful rules)"
            )
    for rule in as_list(view.at("ruleGroup.rulesSource.statefulRules")):
        if str(as_dict(rule).get("action", "")).upper() not in ("DROP", "REJECT", "ALERT"):
            raise ValueError(
                f"{where}: a structured stateful rule with action {as_dict(rule).get('action')!r}, "
                "which the reader does not model (only Suricata rule strings and domain lists)"
            )
    text = view.at("ruleGroup.rulesSource.rulesString")
    if isinstance(text, str):
        return read_rules(text)
    source = view.at("ruleGroup.rulesSource.rulesSourceList")
    if not isinstance(source, dict) or source.get("generatedRulesType") != "ALLOWLIST":
        return []
    found = []
    for target in as_list(source.get("targets")):
        name = str(target)
        scope: NameScope = "exact-and-below" if name.startswith(".") else "exact"
        for buffer in ("tls.sni", "http.host"):
            protocol = buffer.split(".")[0]
            found.append(
                PassRule(protocol, "$EXTERNAL_NET", (), None, buffer, name.lstrip("."), scope, None)
            )
    return found


def _connect_grants(
    resources: Sequence[ResourceView], openings: list[_Opening], policy: _Policy | None
) -> list[Grant]:
    anywhere = ipaddress.IPv4Network(ANYWHERE)
    if policy is None or not policy.drops:
        # No firewall default drop: the security group is the only wall.
        return [
            Grant(str(o.cidr), "exact", o.ports or "any", "address", "platform-doc", SG_DOC)
            for o in openings
            if not o.cidr.subnet_of(_vpc_block(resources))
        ]
    grants: list[Grant] = []
    for view in resources:
        if view.type != RULE_GROUP:
            continue
        domain_list = not isinstance(view.at("ruleGroup.rulesSource.rulesString"), str)
        where = f"{view.type} {view.name}"
        for rule in _pass_rules(view):
            grants += _grant(rule, openings, policy, anywhere, where=where, domain_list=domain_list)
    return grants


def _vpc_block(resources: Sequence[ResourceView]) -> ipaddress.IPv4Network:
    # Openings inside the VPC (DNS to the resolver) are not egress to the internet.
    for view in resources:
        if view.type == "aws:ec2/vpc:Vpc" and isinstance(view.at("cidrBlock"), str):
            return ipaddress.IPv4Network(str(view.at("cidrBlock")))
    return ipaddress.IPv4Network("255.255.255.255/32")


def _grant(
    rule: PassRule,
    openings: list[_Opening],
    policy: _Policy,
    anywhere: ipaddress.IPv4Network,
    *,
    where: str,
    domain_list: bool,
) -> list[Grant]:
    if rule.buffer is None:
        try:
            block = ipaddress.IPv4Network(rule.destination)
            excluded: tuple[str, ...] = ()
        except ValueError:
            block = anywhere
            excluded = tuple(str(ipaddress.IPv4Network(t)) for t in rule.excluded if _is_network(t))
        ports = _narrow(rule.port, _sg_ports(openings, block))
        if ports is None:
            return []
        return [
            Grant(
                str(block), "exact", ports, "address", "kit-code", SURICATA_TESTS, where, excluded
            )
        ]
    ports = _narrow(rule.port, _sg_ports(openings, anywhere))
    if ports is None:
        return []
    host = "*" if rule.scope == "any" else str(rule.name)
    if domain_list:
        enforced, basis, source = "claimed-name", "platform-doc", DOMAIN_LIST_DOC
    elif policy.validated:
        enforced, basis, source = "name-l7", "platform-doc", RESOLVED_IP_DOC
    else:
        enforced, basis, source = "claimed-name", "kit-code", SURICATA_TESTS
    if domain_list and policy.validated:
        enforced, source = "name-l7", f"{DOMAIN_LIST_DOC}; {RESOLVED_IP_DOC}"
    return [Grant(host, rule.scope, ports, enforced, basis, source, where)]  # type: ignore[arg-type]


def _is_network(text: str) -> bool:
    try:
        ipaddress.IPv4Network(text)
    except ValueError:
        return False
    return True


def _resolve_grants(resources: Sequence[ResourceView]) -> list[Grant]:
    lists = {v.name: v for v in resources if v.type == DNS_LIST}
    rules = sorted(
        (v for v in resources if v.type == DNS_RULE),
        key=lambda v: int(str(v.props.get("priority") or 0)),
    )
    if not rules and not lists:
        return [Grant("*", "any", "any", "query-name", "platform-doc", DNS_DOC)]
    grants: list[Grant] = []
    for rule in rules:
        domains = _domains(lists, str(rule.props.get("firewallDomainListId", "")))
        # A rule with a qType evaluates that query type only (pulumi-aws ResolverFirewallRule
        # q_type): other types (TXT, AAAA) of every name still resolve.
        if rule.props.get("action") == "BLOCK" and "*" in domains and not rule.props.get("qType"):
            return grants
        if rule.props.get("action") in ("ALLOW", "ALERT"):
            where = f"{rule.type} {rule.name}"
            grants += [_dns_grant(domain, where) for domain in domains]
    # No rule blocks every other name: the resolver answers them.
    return [*grants, Grant("*", "any", "any", "query-name", "platform-doc", DNS_DOC)]


def _domains(lists: Mapping[str, ResourceView], list_id: str) -> list[str]:
    # The rendered id is the list's name plus the engine's suffix (a real id is rslvr-fdl-...).
    for name, view in sorted(lists.items(), key=lambda item: -len(item[0])):
        if list_id.startswith(f"{name}-") or list_id == name:
            return [str(d) for d in as_list(view.at("domains"))]
    return ["*"]


def _dns_grant(domain: str, where: str) -> Grant:
    if domain == "*":
        return Grant("*", "any", "any", "query-name", "platform-doc", DNS_DOC, where)
    if domain.startswith("*."):
        return Grant(domain[2:], "below", "any", "query-name", "platform-doc", DNS_DOC, where)
    return Grant(domain, "exact", "any", "query-name", "platform-doc", DNS_DOC, where)


def read_egress(resources: Sequence[ResourceView]) -> EffectiveEgress:
    """The effective egress of an aws-microvm render (see the module docstring).

    Args:
        resources: the target's rendered resources as ``ResourceView``s.

    Returns:
        Connection grants (names at L7 or by claimed name, addresses) and resolution grants.

    Raises:
        ValueError: for a rule group whose rules string holds a line that is not a rule.
    """
    openings = _sg_openings(resources)
    policy = _policy(resources)
    return EffectiveEgress(
        TARGET,
        # A name's TLS SNI and HTTP Host rules give one grant each: the same grant, once.
        tuple(dict.fromkeys(_connect_grants(resources, openings, policy))),
        tuple(dict.fromkeys(_resolve_grants(resources))),
    )
