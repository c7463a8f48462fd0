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

The path is followed from the MicroVM out, over every rendered resource of these kinds, the
kit's or the project program's (``guard.target_views``): the network connectors'
``subnetIds`` and ``securityGroupIds`` (only those groups, and the egress rules attached to
them, count); each connector subnet's route table by its association, each destination by its
most specific route (a route to a VPC endpoint goes through the firewall; to a NAT or internet
gateway, or any other target, past it, where the security group is the only wall); the
firewall's ``firewallPolicyArn`` (only that policy) and its rule group references (only those
groups); the DNS Firewall rule groups associated with the connectors' VPC and their domain
lists by id. A link the reader cannot place (an id no rendered resource has, a route to a
prefix list) is refused (``ValueError``: "cannot verify"). Resolved-IP validation counts only
with ``DNSExpiryExceptionPolicy`` ``DROP``/``REJECT`` and no ``BypassDestinationValidationIPRanges``
(API reference Route53ResolvedIPValidation: an expired resolution that ``CONTINUE``s, or a
bypassed range, passes a name rule by the claimed name alone). UDP (so QUIC) out of the VPC is
refused as a grant the contract cannot hold: a security group rule opening UDP (or every
protocol) to a block outside the VPC is admitted past Network Firewall's
``aws:drop_established``, which drops established flows only (each UDP flow's first packet
passes), and the contract admits TCP only.

Where a match is the kit's own rule text, run in Suricata 7 by ``tests/aws/test_suricata_rules``,
the grant's basis is ``kit-code``; where it relies on Network Firewall or Route 53 behaviour
that cannot run here (resolved-IP validation, domain lists, DNS Firewall), ``platform-doc``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sandboxkit.aws.suricata import NameScope, PassRule, read_rules
from sandboxkit.aws.type_tokens import (
    CONNECTOR,
    DNS_ASSOCIATION,
    DNS_GROUP,
    DNS_LIST,
    DNS_RULE,
    EGRESS_RULE,
    FIREWALL,
    GROUP_RULE,
    ROUTE,
    ROUTE_ASSOCIATION,
    ROUTE_TABLE,
    RULE_GROUP,
    SECURITY_GROUP,
    SUBNET,
    VPC,
)
from sandboxkit.aws.type_tokens import FIREWALL_POLICY as PLAIN_POLICY
from sandboxkit.aws.type_tokens import FIREWALL_POLICY_DOCUMENT as POLICY_DOCUMENT
from sandboxkit.effective_egress import (
    EffectiveEgress,
    Grant,
    Ports,
    ResourceView,
    as_dict,
    as_dicts,
    as_list,
    merge_protocols,
    port_text,
)
from sandboxkit.egress_contract import ConnectionProtocol
from sandboxkit.secrets import UNKNOWN_SECRET
from sandboxkit.type_tokens import TypeToken, of_type

TARGET = "aws-microvm"
ROUTE_DOC = "VPC route tables: the most specific route that matches the destination wins"
# Route targets (pulumi-aws ec2.Route / RouteTable routes) other than a VPC endpoint, the
# firewall's: traffic routed to one of them leaves without passing the firewall.
_BYPASS_TARGETS = (
    "gatewayId",
    "natGatewayId",
    "egressOnlyGatewayId",
    "transitGatewayId",
    "networkInterfaceId",
    "vpcPeeringConnectionId",
    "carrierGatewayId",
    "localGatewayId",
    "coreNetworkArn",
    "instanceId",
)
_FIREWALL_TARGET = "vpcEndpointId"
ANYWHERE = "0.0.0.0/0"
SURICATA_TESTS = "tests/aws/test_suricata_rules.py (the rules run in Debian's Suricata 7)"
RESOLVED_IP_DOC = (
    "Network Firewall API Route53ResolvedIPValidation: the destination must be an address the "
    "VPC resolver returned; " + SURICATA_TESTS
)
BYPASS_DOC = (
    "Network Firewall API Route53ResolvedIPValidation BypassDestinationValidationIPRanges: "
    "destinations exempt from resolved-IP validation, so a name rule passes them by the name "
    "the client claims"
)
DOMAIN_LIST_DOC = (
    "Network Firewall API RulesSourceList: '.x' matches x and its subdomains; generated rules "
    "match any port"
)
SG_DOC = "EC2 security group egress rules: protocol, port range, CIDR"
DNS_DOC = "Route 53 Resolver DNS Firewall: rules by priority; domain list entries may start with *"
_DROP_DEFAULTS = ("aws:drop_established", "aws:drop_strict")
# What a pass rule matching a name in each buffer admits (Suricata 7: tls.sni is a TLS
# ClientHello's server name, http.host an HTTP request's Host).
_BUFFER_PROTOCOLS: Mapping[str, ConnectionProtocol] = {"tls.sni": "tls", "http.host": "http"}
_BLOCKING = ("DROP", "REJECT")


def _refers(view: ResourceView, ref: object) -> bool:
    """Whether ``ref`` (an id or ARN as the render holds it) names ``view``: the render's id is
    the logical name plus the engine's suffix, and an ARN ends in that id; a deployed
    resource's own ``id`` or ``arn`` among its props matches too."""
    text = str(ref)
    last = re.split(r"[/:]", text)[-1]
    own = {str(view.props.get(key)) for key in ("id", "arn") if view.props.get(key)}
    return last == view.name or last.startswith(f"{view.name}-") or text in own


def _placed(
    resources: Sequence[ResourceView], kinds: tuple[TypeToken, ...], ref: object, where: str
) -> ResourceView:
    """The rendered resource of ``kinds`` that ``ref`` names (the longest name that fits).

    Raises:
        ValueError: when none does: the reader cannot follow the link (``where`` says whose).
    """
    found = [v for v in of_type(resources, *kinds) if _refers(v, ref)]
    if not found:
        why = (
            "a Pulumi secret the offline render cannot read"
            if ref == UNKNOWN_SECRET
            else "the id of a resource the stack does not create (an existing one, looked up or "
            "written in), whose rules the render does not hold"
        )
        raise ValueError(
            f"{where} names {ref!r}, which no rendered {' or '.join(map(str, kinds))} is: {why}, "
            "so the reader cannot follow the path there"
        )
    return max(found, key=lambda v: len(v.name))


def _connector_config(view: ResourceView) -> dict[str, Any]:
    return as_dict(view.at("configuration.vpcEgressConfiguration"))


@dataclass(frozen=True)
class _Opening:
    """What the security group lets out: ports to one CIDR block (``None``: every port) for
    ``tcp`` or ``udp``."""

    cidr: ipaddress.IPv4Network
    ports: frozenset[int] | None
    protocol: str = "tcp"


def _connector_groups(resources: Sequence[ResourceView]) -> list[ResourceView] | None:
    """The security groups the network connectors attach (``None`` without a connector: every
    group counts)."""
    connectors = [v for v in resources if CONNECTOR.matches(v.type)]
    if not connectors:
        return None
    groups: list[ResourceView] = []
    for connector in connectors:
        where = f"{connector.type} {connector.name} securityGroupIds"
        for ref in as_list(_connector_config(connector).get("securityGroupIds")):
            groups.append(_placed(resources, (SECURITY_GROUP,), ref, where))
    return groups


def _sg_openings(resources: Sequence[ResourceView]) -> list[_Opening]:
    attached = _connector_groups(resources)
    groups = (
        [v for v in resources if SECURITY_GROUP.matches(v.type)] if attached is None else attached
    )

    def on_group(view: ResourceView) -> bool:
        ref = view.props.get("securityGroupId")
        return attached is None or any(_refers(group, ref) for group in groups)

    rules: list[Mapping[str, Any]] = []
    for group in groups:
        rules += [r for r in as_list(group.at("egress")) if isinstance(r, dict)]
    for view in resources:
        if EGRESS_RULE.matches(view.type) and on_group(view):
            props = dict(view.props)
            rules.append(
                {
                    "protocol": props.get("ipProtocol"),
                    "fromPort": props.get("fromPort"),
                    "toPort": props.get("toPort"),
                    "cidrBlocks": [props.get("cidrIpv4")] if props.get("cidrIpv4") else [],
                }
            )
        elif (
            GROUP_RULE.matches(view.type) and view.props.get("type") == "egress" and on_group(view)
        ):
            rules.append(dict(view.props))
    found: list[_Opening] = []
    for rule in rules:
        protocol = str(rule.get("protocol", "")).lower()
        protocols = _PROTOCOLS.get(protocol, ())
        low, high = rule.get("fromPort"), rule.get("toPort")
        every = protocol in ("-1", "all") or (low in (0, None) and high in (65535, None))
        ports = None if every else frozenset(range(int(low or 0), int(high or 0) + 1))
        for cidr in as_list(rule.get("cidrBlocks")):
            block = ipaddress.IPv4Network(str(cidr))
            found += [_Opening(block, ports, p) for p in protocols]
    return found


# Security group rule protocols (EC2 API IpPermission IpProtocol: a name or number, -1 all).
_PROTOCOLS: Mapping[str, tuple[str, ...]] = {
    "tcp": ("tcp",),
    "6": ("tcp",),
    "udp": ("udp",),
    "17": ("udp",),
    "-1": ("tcp", "udp"),
    "all": ("tcp", "udp"),
}


def _refuse_udp(openings: Iterable[_Opening], vpc: ipaddress.IPv4Network) -> None:
    """Raises ValueError for a UDP opening to a block outside the sandboxes' VPC."""
    for opening in openings:
        if opening.protocol == "udp" and not opening.cidr.subnet_of(vpc):
            ports = "every port" if opening.ports is None else port_text(opening.ports)
            raise ValueError(
                f"a connector security group opens UDP {ports} to {opening.cidr}: UDP (and "
                "QUIC) leaves past Network Firewall's aws:drop_established (each flow's first "
                "packet passes) and the egress contract admits TCP only"
            )


def _sg_ports(openings: Iterable[_Opening], block: ipaddress.IPv4Network) -> Ports | None:
    """The TCP ports the security group opens to every address of ``block``."""
    ports: set[int] = set()
    for opening in openings:
        if opening.protocol == "tcp" and block.subnet_of(opening.cidr):
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
    # BypassDestinationValidationIPRanges (IPv4): destinations a name rule passes unvalidated.
    bypass: tuple[ipaddress.IPv4Network, ...]
    # The rule groups the policy references (``None``: no reference list, every group counts).
    groups: tuple[ResourceView, ...] | None


def _policy_view(resources: Sequence[ResourceView]) -> ResourceView | None:
    """The firewall policy on the path: the one the firewall's ``firewallPolicyArn`` names
    (without a rendered firewall, the first policy).

    Raises:
        ValueError: when the ARN names no rendered policy, or firewalls name different
            policies (the reader cannot tell whose endpoint a route uses).
    """
    kinds = (POLICY_DOCUMENT, PLAIN_POLICY)
    # A firewall without a policy ARN is refused by the provider (a required input).
    firewalls = [
        v for v in resources if FIREWALL.matches(v.type) and v.props.get("firewallPolicyArn")
    ]
    if not firewalls:
        return next(iter(of_type(resources, *kinds)), None)
    linked = {
        _placed(resources, kinds, f.props.get("firewallPolicyArn"), f"{f.type} {f.name}")
        for f in firewalls
    }
    if len(linked) > 1:
        raise ValueError(
            f"firewalls {sorted(f.name for f in firewalls)} use different policies: the reader "
            "cannot tell which firewall endpoint a route sends the sandboxes' traffic to"
        )
    return linked.pop()


def _policy(resources: Sequence[ResourceView]) -> _Policy | None:
    view = _policy_view(resources)
    if view is None:
        return None
    document = as_dict(view.at("firewallPolicy"))
    where = f"{view.type} {view.name}"
    if PLAIN_POLICY.matches(view.type):
        refs = _references(resources, document, "stateful", "resourceArn", where)
        return _Policy(False, _drops(document, "stateful", "stateless"), (), refs)
    validation = document.get("Route53ResolvedIPValidation")
    validated = (
        isinstance(validation, dict)
        and validation.get("Action") in _BLOCKING
        and validation.get("DNSExpiryExceptionPolicy") in _BLOCKING
        and _validates_vpc(validation.get("SourceIPRanges"), _vpc_block(resources))
    )
    bypass = tuple(
        block
        for entry in as_dicts(as_dict(validation).get("BypassDestinationValidationIPRanges"))
        if isinstance(
            block := ipaddress.ip_network(str(entry.get("AddressDefinition"))),
            ipaddress.IPv4Network,
        )
    )
    refs = _references(resources, document, "Stateful", "ResourceArn", where)
    return _Policy(validated, _drops(document, "Stateful", "Stateless"), bypass, refs)


def _references(
    resources: Sequence[ResourceView],
    document: Mapping[str, Any],
    stateful: str,
    arn: str,
    where: str,
) -> tuple[ResourceView, ...] | None:
    """The rule groups a policy document references, stateful and stateless (``None`` when
    it holds neither list).

    Raises:
        ValueError: for a reference no rendered rule group is.
    """
    stateless = "Stateless" if stateful == "Stateful" else "stateless"
    keys = [f"{stateful}RuleGroupReferences", f"{stateless}RuleGroupReferences"]
    if not any(key in document for key in keys):
        return None
    return tuple(
        _placed(resources, (RULE_GROUP,), as_dict(ref).get(arn), f"{where} {key}")
        for key in keys
        for ref in as_list(document.get(key))
    )


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
    resources: Sequence[ResourceView],
    openings: list[_Opening],
    policy: _Policy | None,
    bypass: list[tuple[ipaddress.IPv4Network, tuple[str, ...], str]],
) -> list[Grant]:
    vpc = _vpc_block(resources)
    outside = [o for o in openings if o.protocol == "tcp" and not o.cidr.subnet_of(vpc)]
    if policy is None or not policy.drops:
        # No firewall default drop: the security group is the only wall.
        return [
            Grant(str(o.cidr), "exact", o.ports or "any", "address", "platform-doc", SG_DOC)
            for o in outside
        ]
    grants = _bypass_grants(outside, bypass)
    anywhere = ipaddress.IPv4Network(ANYWHERE)
    groups = policy.groups
    if groups is None:
        groups = tuple(v for v in resources if RULE_GROUP.matches(v.type))
    for view in dict.fromkeys(groups):
        domain_list = not isinstance(view.at("ruleGroup.rulesSource.rulesString"), str)
        where = f"{view.type} {view.name}"
        for rule in _pass_rules(view):
            grants += _grant(rule, openings, policy, anywhere, where=where, domain_list=domain_list)
    return grants


def _bypass_grants(
    openings: Iterable[_Opening],
    bypass: list[tuple[ipaddress.IPv4Network, tuple[str, ...], str]],
) -> list[Grant]:
    """What the security group lets out by a route past the firewall: per route and opening,
    the smaller of the two blocks less the more specific routes inside it."""
    grants = []
    for opening in openings:
        for block, more_specific, where in bypass:
            if opening.cidr.subnet_of(block):
                inner = opening.cidr
            elif block.subnet_of(opening.cidr):
                inner = block
            else:
                continue
            if any(inner.subnet_of(ipaddress.IPv4Network(m)) for m in more_specific):
                continue
            excluded = tuple(m for m in more_specific if ipaddress.IPv4Network(m).subnet_of(inner))
            grants.append(
                Grant(
                    str(inner),
                    "exact",
                    opening.ports or "any",
                    "address",
                    "platform-doc",
                    f"{ROUTE_DOC}; {SG_DOC}",
                    where,
                    excluded,
                )
            )
    return grants


def _routes(
    resources: Sequence[ResourceView],
) -> list[tuple[ipaddress.IPv4Network, tuple[str, ...], str]]:
    """The routes of the connector subnets' tables that leave past the firewall, each with
    the more specific routes of its table (``(block, more specific blocks, route)``).

    Raises:
        ValueError: for a connector subnet, table or route the reader cannot place: a subnet
            no rendered subnet is or without a rendered association (the VPC's main table is
            not modelled), a route to a prefix list or to a target it does not know.
    """
    found = []
    for connector in (v for v in resources if CONNECTOR.matches(v.type)):
        where = f"{connector.type} {connector.name} subnetIds"
        for ref in as_list(_connector_config(connector).get("subnetIds")):
            subnet = _placed(resources, (SUBNET,), ref, where)
            tables = [
                _placed(resources, (ROUTE_TABLE,), a.props.get("routeTableId"), a.name)
                for a in resources
                if ROUTE_ASSOCIATION.matches(a.type) and _refers(subnet, a.props.get("subnetId"))
            ]
            if not tables:
                raise ValueError(
                    f"connector subnet {subnet.name} has no rendered route table association: "
                    "it uses the VPC's main route table, which the reader does not model"
                )
            for table in tables:
                found += _table_bypass(resources, table)
    return found


def _table_bypass(
    resources: Sequence[ResourceView], table: ResourceView
) -> list[tuple[ipaddress.IPv4Network, tuple[str, ...], str]]:
    routes = [(f"{table.type} {table.name}", dict(r)) for r in as_dicts(table.at("routes"))]
    routes += [
        (f"{v.type} {v.name}", dict(v.props))
        for v in resources
        if ROUTE.matches(v.type) and _refers(table, v.props.get("routeTableId"))
    ]
    read: list[tuple[ipaddress.IPv4Network, bool, str]] = []
    for where, route in routes:
        if route.get("destinationPrefixListId"):
            raise ValueError(f"{where}: a route to a prefix list, which the reader does not model")
        destination = route.get("destinationCidrBlock") or route.get("cidrBlock")
        if destination is None:
            continue  # an IPv6 route: the connector's networkProtocol is IPv4
        if route.get(_FIREWALL_TARGET):
            past = False
        elif any(route.get(key) for key in _BYPASS_TARGETS):
            past = True
        else:
            raise ValueError(f"{where}: a route to {destination} with no target the reader knows")
        read.append((ipaddress.IPv4Network(str(destination)), past, where))
    return [
        (
            block,
            tuple(str(b) for b, _, _ in read if b != block and b.subnet_of(block)),
            where,
        )
        for block, past, where in read
        if past
    ]


def _vpc_block(resources: Sequence[ResourceView]) -> ipaddress.IPv4Network:
    """The sandboxes' VPC block (the connector subnets' VPC; without a connector, the first
    VPC): openings inside it (DNS to the resolver) are not egress to the internet."""
    vpc = _sandbox_vpc(resources)
    if vpc is not None and isinstance(vpc.at("cidrBlock"), str):
        return ipaddress.IPv4Network(str(vpc.at("cidrBlock")))
    return ipaddress.IPv4Network("255.255.255.255/32")


def _sandbox_vpc(resources: Sequence[ResourceView]) -> ResourceView | None:
    for connector in (v for v in resources if CONNECTOR.matches(v.type)):
        for ref in as_list(_connector_config(connector).get("subnetIds")):
            subnet = _placed(resources, (SUBNET,), ref, f"{connector.name} subnetIds")
            return _placed(resources, (VPC,), subnet.props.get("vpcId"), subnet.name)
    return next((v for v in resources if VPC.matches(v.type)), None)


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
    # A tls.sni rule passes TLS naming the host, an http.host rule HTTP naming it: neither
    # passes plain TCP, which the policy's default drop then drops once established.
    protocols = frozenset({_BUFFER_PROTOCOLS[rule.buffer]})
    grants = [
        Grant(host, rule.scope, ports, enforced, basis, source, where, protocols=protocols)  # type: ignore[arg-type]
    ]
    if policy.validated:
        # A destination in a bypass range is never validated: unless the rule's destination
        # takes it out, the name rule passes a connection there by the name the client claims.
        shut = [ipaddress.IPv4Network(t) for t in rule.excluded if _is_network(t)]
        for block in policy.bypass:
            if any(block.subnet_of(taken) for taken in shut):
                continue  # the rule's destination takes the range out
            bypassed = _narrow(rule.port, _sg_ports(openings, block))
            if bypassed is not None:
                grants.append(
                    Grant(
                        str(block), "exact", bypassed, "address", "platform-doc", BYPASS_DOC, where
                    )
                )
    return grants


def _is_network(text: str) -> bool:
    try:
        ipaddress.IPv4Network(text)
    except ValueError:
        return False
    return True


def _resolve_grants(resources: Sequence[ResourceView]) -> list[Grant]:
    rules = _dns_rules(resources)
    if not rules:
        return [Grant("*", "any", "any", "query-name", "platform-doc", DNS_DOC)]
    grants: list[Grant] = []
    for rule in rules:
        where = f"{rule.type} {rule.name}"
        listed = _placed(resources, (DNS_LIST,), rule.props.get("firewallDomainListId"), where)
        domains = [str(d) for d in as_list(listed.at("domains"))]
        # A rule with a qType evaluates that query type only (pulumi-aws ResolverFirewallRule
        # q_type): other types (TXT, AAAA) of every name still resolve.
        if rule.props.get("action") == "BLOCK" and "*" in domains and not rule.props.get("qType"):
            return grants
        if rule.props.get("action") in ("ALLOW", "ALERT"):
            grants += [_dns_grant(domain, where) for domain in domains]
    # No rule blocks every other name: the resolver answers them.
    return [*grants, Grant("*", "any", "any", "query-name", "platform-doc", DNS_DOC)]


def _dns_rules(resources: Sequence[ResourceView]) -> list[ResourceView]:
    """The DNS Firewall rules the sandboxes' VPC evaluates, in order: the rule groups
    associated with it by association priority, each group's rules by priority (Route 53
    Resolver DNS Firewall). Without a rendered association, every rule by priority.

    Raises:
        ValueError: for an association whose rule group no rendered group is.
    """
    rules = [v for v in resources if DNS_RULE.matches(v.type)]
    associations = [v for v in resources if DNS_ASSOCIATION.matches(v.type)]
    if not associations:
        return sorted(rules, key=lambda v: _number(v.props.get("priority")))
    vpc = _sandbox_vpc(resources)
    ordered: list[ResourceView] = []
    for association in sorted(associations, key=lambda v: _number(v.props.get("priority"))):
        if vpc is None or not _refers(vpc, association.props.get("vpcId")):
            continue
        group = _placed(
            resources,
            (DNS_GROUP,),
            association.props.get("firewallRuleGroupId"),
            f"{association.type} {association.name}",
        )
        members = [r for r in rules if _refers(group, r.props.get("firewallRuleGroupId"))]
        ordered += sorted(members, key=lambda v: _number(v.props.get("priority")))
    return ordered


def _number(value: object) -> int:
    return int(str(value or 0))


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
        ValueError: for a rule group whose rules string holds a line that is not a rule, a
            link on the path the reader cannot place, or UDP out of the VPC ("cannot verify").
    """
    openings = _sg_openings(resources)
    _refuse_udp(openings, _vpc_block(resources))
    policy = _policy(resources)
    bypass = _routes(resources)
    return EffectiveEgress(
        TARGET,
        # A name's TLS SNI and HTTP Host rules give one grant each: one grant for both.
        merge_protocols(_connect_grants(resources, openings, policy, bypass)),
        tuple(dict.fromkeys(_resolve_grants(resources))),
    )
