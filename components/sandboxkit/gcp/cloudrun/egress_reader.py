"""What a ``gcp-cloudrun`` render lets sandboxes reach, computed from its resources only.

``read_egress(resources)`` returns the target's ``EffectiveEgress``. For each Cloud Run service
with a sandbox launcher container it follows the path a sandbox's connection takes, as Google
documents each piece; every grant is documented platform behaviour (``platform-doc``): Google
Cloud enforces it, nothing of the kit runs at that point.

1. **Route into the VPC.** ``template.vpcAccess.egress: ALL_TRAFFIC`` sends every connection
   through the Direct VPC egress network; ``PRIVATE_RANGES_ONLY`` (or no ``vpcAccess``) sends
   public destinations straight to the internet, past every VPC control (``VPC_EGRESS_DOC``).
2. **Name resolution.** The container resolves through the metadata server, which applies the
   network's Cloud DNS configuration, its response policy first (``RESOLUTION_DOC``). That
   Direct VPC egress traffic gets the network's resolution is inferred, not stated by Google,
   and which resolver a sandbox started with ``--allow-egress`` uses is not documented: the
   resolution grants cite ``DNS_ASSUMPTION`` (docs/targets/gcp-cloudrun.md says how a first
   deploy confirms it). ``sandboxkit.gcp.cloud_dns`` is the model of the rules.
3. **Firewall.** The network firewall policies associated with the network decide by priority
   (``sandboxkit.gcp.cloudrun.ngfw``): FQDN objects by the names' resolved addresses
   (``FQDN_DOC``), ranges by address, and what no rule decides by the VPC's implied allow.
4. **Way out.** A public IPv4 destination needs a Cloud NAT covering the service's subnet
   (instances have no external address); an IPv6 destination needs a subnet that carries IPv6
   (``stackType`` other than ``IPV4_ONLY``, the default). Without a way out a grant keeps only
   its non-public parts, which the subnet routes reach.
5. **UDP** (so QUIC): the same path read for the rules' ``udp`` and ``all`` layer 4 configs
   (grants of protocol ``udp``); the kit's deny-all rules take every protocol.
6. **The metadata server.** Firewall rules never apply to it, but sandboxes "don't have access
   to ... the Google Cloud metadata server" (``SANDBOX_DOC``): no grant.

Resources are linked by the values a render passes between them: the service's
``networkInterfaces[].network`` / ``subnetwork`` equal the association's ``attachmentTarget``,
the response policy's ``networks[].networkUrl``, the subnets' and the router's ``network`` and
the NAT's ``subnetworks[].name``. Firewall rules are read by the policy they belong to: an
association's ``firewallPolicy`` names a rendered policy (by name or by its
``projects/<p>/global/firewallPolicies/<name>`` id, ``policy_key``), a
``NetworkFirewallPolicy`` whose ``NetworkFirewallPolicyRule``s name it in their
``firewallPolicy``, or a ``NetworkFirewallPolicyWithRules`` holding its rules inline; only the
rules of the policies associated with the sandboxes' network count, whoever declares them (a
component or the project's program). An association of a policy the render does not create is
"cannot verify" (``ValueError``: its rules cannot be seen); a rule whose ``firewallPolicy`` is a
secret the render cannot read counts on every path unless it denies. Not read, so never
counted as narrowing: the network's own settings (deleted default routes: a render does not
link the network resource to its id), VPC firewall rules (the kit sets
``BEFORE_CLASSIC_FIREWALL``, so the policy decides first) and regional network firewall
policies (evaluated after the global one, whose deny-all rules decide first).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from sandboxkit.addresses import non_public_reach
from sandboxkit.boundary import NON_PUBLIC_IPV4, NON_PUBLIC_IPV6
from sandboxkit.effective_egress import (
    EffectiveEgress,
    Grant,
    ResourceView,
    Scope,
    as_dicts,
    udp_grants,
)
from sandboxkit.gcp.cloud_dns import PolicyRule
from sandboxkit.gcp.cloudrun.ngfw import (
    Allowed,
    FirewallRule,
    Probe,
    allowed,
    decide,
    read_rules,
)
from sandboxkit.gcp.type_tokens import (
    ASSOCIATION,
    FIREWALL_POLICY,
    FIREWALL_POLICY_WITH_RULES,
    NAT,
    RESPONSE_POLICY,
    RESPONSE_RULE,
    ROUTER,
    SERVICE,
    SUBNET,
)
from sandboxkit.gcp.type_tokens import FIREWALL_RULE as RULE
from sandboxkit.secrets import UNKNOWN_SECRET
from sandboxkit.type_tokens import of_type

TARGET = "gcp-cloudrun"

VPC_EGRESS_DOC: Final = (
    "https://cloud.google.com/run/docs/configuring/vpc-direct-vpc: vpcAccess.egress "
    "PRIVATE_RANGES_ONLY (or no VPC access) sends public destinations to the internet directly"
)
FQDN_DOC: Final = (
    "https://cloud.google.com/firewall/docs/fqdn-objects-overview: FQDN objects are programmed "
    "as the addresses the name resolves to"
)
RANGE_DOC: Final = (
    "https://cloud.google.com/vpc/docs/firewall-policies-rule-details: egress rule "
    "destIpRanges, first matching rule by priority"
)
IMPLIED_DOC: Final = (
    "https://cloud.google.com/firewall/docs/firewalls#default_firewall_rules: the implied rule "
    "allows all egress no firewall rule decides"
)
RESOLUTION_DOC: Final = (
    "https://cloud.google.com/dns/docs/vpc-name-res-order and "
    "https://cloud.google.com/dns/docs/reference/rest/v1/responsePolicyRules: the response "
    "policy answers first, longest matching suffix, bypass rules resolve normally"
)
DNS_ASSUMPTION: Final = (
    "assumed: the response policy applies to Direct VPC egress (Google documents private zones "
    "for it) and to the sandboxes' resolver (not documented); docs/targets/gcp-cloudrun.md"
)
SANDBOX_DOC: Final = (
    "https://cloud.google.com/run/docs/code-execution: sandboxes don't have access to the "
    "metadata server"
)


@dataclass(frozen=True)
class SandboxPath:
    """What the render says about one sandbox launcher service's egress path.

    Attributes:
        service: the service's logical name.
        vpc_egress: ``ALL_TRAFFIC``, ``PRIVATE_RANGES_ONLY``, or ``None`` without VPC access.
        rules: egress rules of the firewall policies associated with the service's network.
        dns: the response policy rules bound to the network; ``None`` when no policy is bound.
        internet: a public IPv4 destination has a way out (a Cloud NAT for the subnet).
        ipv6: a subnet of the network carries IPv6.
    """

    service: str
    vpc_egress: str | None
    rules: tuple[FirewallRule, ...]
    dns: tuple[PolicyRule, ...] | None
    internet: bool
    ipv6: bool


def _is_launcher(service: ResourceView) -> bool:
    return any(
        c.get("sandboxLauncher") is True for c in as_dicts(service.at("template.containers"))
    )


def policy_key(reference: object) -> str:
    """The policy name a firewall policy reference names: the name itself, or the last
    segment of ``projects/<p>/global/firewallPolicies/<name>`` (the id Google's API and
    pulumi-gcp accept for ``firewallPolicy``), a self link included."""
    text = str(reference)
    marker = "/firewallPolicies/"
    return text.rsplit(marker, 1)[-1] if marker in text else text


def _in(rule: ResourceView, policies: Container[object]) -> bool:
    """Whether a firewall policy rule is one of ``policies``' (names, ``policy_key``); a rule
    whose policy is a secret the render cannot read may be, so it counts unless it denies
    (wider, never narrower)."""
    policy = rule.props.get("firewallPolicy")
    return policy_key(policy) in policies or (
        policy == UNKNOWN_SECRET and rule.props.get("action") != "deny"
    )


def _associated_policies(resources: Sequence[ResourceView], networks: set[object]) -> set[str]:
    """The names of the firewall policies associated with ``networks``, each one a policy the
    render creates (its rules are then all in the render: separate rule resources, or inline).

    Raises:
        ValueError: for an association of a policy no rendered policy is (an existing policy
            by id, a secret the render cannot read): its rules cannot be seen.
    """
    rendered = {
        policy_key(p.props.get("name", p.name))
        for p in of_type(resources, FIREWALL_POLICY, FIREWALL_POLICY_WITH_RULES)
    }
    found: set[str] = set()
    for association in of_type(resources, ASSOCIATION):
        if association.props.get("attachmentTarget") not in networks:
            continue
        reference = association.props.get("firewallPolicy")
        if policy_key(reference) not in rendered:
            raise ValueError(
                f"{ASSOCIATION} {association.name} attaches firewall policy {reference!r} to the "
                "sandboxes' network, and no rendered NetworkFirewallPolicy is that policy (one "
                "the stack does not create, or a secret the render cannot read): its rules "
                "cannot be seen, so what they admit is unknown"
            )
        found.add(policy_key(reference))
    return found


def _inline_rules(
    resources: Sequence[ResourceView], policies: Container[str]
) -> list[FirewallRule]:
    """The egress rules a ``NetworkFirewallPolicyWithRules`` of ``policies`` holds inline, each
    named ``<policy resource>.rules[<index>]``."""
    return read_rules(
        (f"{view.name}.rules[{index}]", rule)
        for view in of_type(resources, FIREWALL_POLICY_WITH_RULES)
        if policy_key(view.props.get("name", view.name)) in policies
        for index, rule in enumerate(as_dicts(view.props.get("rules")))
    )


def _path(resources: Sequence[ResourceView], service: ResourceView) -> SandboxPath:
    vpc = service.at("template.vpcAccess")
    interfaces = as_dicts(service.at("template.vpcAccess.networkInterfaces"))
    networks = {i.get("network") for i in interfaces} - {None}
    subnets = {i.get("subnetwork") for i in interfaces} - {None}
    policies = _associated_policies(resources, networks)
    rules = read_rules((r.name, r.props) for r in of_type(resources, RULE) if _in(r, policies))
    rules += _inline_rules(resources, policies)
    bound = {
        p.props.get("responsePolicyName")
        for p in of_type(resources, RESPONSE_POLICY)
        if any(n.get("networkUrl") in networks for n in as_dicts(p.props.get("networks")))
    }
    dns = tuple(
        PolicyRule.from_inputs(r.props)
        for r in of_type(resources, RESPONSE_RULE)
        if r.props.get("responsePolicy") in bound
    )
    routers = {
        r.props.get("name")
        for r in of_type(resources, ROUTER)
        if r.props.get("network") in networks
    }
    nat = any(
        n.props.get("sourceSubnetworkIpRangesToNat") == "ALL_SUBNETWORKS_ALL_IP_RANGES"
        or any(s.get("name") in subnets for s in as_dicts(n.props.get("subnetworks")))
        for n in of_type(resources, NAT)
        if n.props.get("router") in routers
    )
    stacks = {
        s.props.get("stackType", "IPV4_ONLY")
        for s in of_type(resources, SUBNET)
        if s.props.get("network") in networks
    }
    return SandboxPath(
        service=service.name,
        vpc_egress=None if not isinstance(vpc, dict) else str(vpc.get("egress")),
        rules=tuple(rules),
        dns=dns if bound else None,
        internet=nat,
        ipv6=bool(stacks - {"IPV4_ONLY"}),
    )


def sandbox_paths(resources: Iterable[ResourceView]) -> list[SandboxPath]:
    """One ``SandboxPath`` per Cloud Run service with a sandbox launcher container."""
    rendered = list(resources)
    return [_path(rendered, s) for s in of_type(rendered, SERVICE) if _is_launcher(s)]


def _resolution(path: SandboxPath) -> list[Grant]:
    """The names whose queries leave Cloud DNS for the internet."""
    resource = f"{RESPONSE_POLICY} bound to {path.service}'s network"
    catch_all = [r for r in path.dns or () if r.dns_name == "*." and not r.bypass]
    if path.vpc_egress != "ALL_TRAFFIC" or not catch_all:
        source = VPC_EGRESS_DOC if path.vpc_egress != "ALL_TRAFFIC" else RESOLUTION_DOC
        return [Grant("*", "any", "any", "query-name", "platform-doc", source, resource)]
    source = f"{RESOLUTION_DOC}; {DNS_ASSUMPTION}"
    grants = []
    for rule in path.dns or ():
        if not rule.bypass:
            continue
        if rule.dns_name == "*.":
            return [Grant("*", "any", "any", "query-name", "platform-doc", source, resource)]
        wildcard = rule.dns_name.startswith("*.")
        host = rule.dns_name.removeprefix("*.").removesuffix(".")
        scope: Scope = "below" if wildcard else "exact"
        grants.append(Grant(host, scope, "any", "query-name", "platform-doc", source, resource))
    return grants


def _connections(path: SandboxPath, protocol: str = "tcp") -> list[Grant]:
    """What the path admits on ``protocol`` (``tcp``; ``udp``: Cloud NAT translates UDP as
    well, https://cloud.google.com/nat/docs/overview)."""
    if path.vpc_egress != "ALL_TRAFFIC":
        resource = f"{SERVICE} {path.service}"
        return [
            Grant(everything, "exact", "any", "address", "platform-doc", VPC_EGRESS_DOC, resource)
            for everything in ("0.0.0.0/0", "::/0")
        ]
    families = frozenset({4, 6} if path.ipv6 else {4})
    grants: list[Grant] = []
    for item in allowed(path.rules, families, protocol):
        resource = f"{RULE} {item.rule}" if item.rule else "the VPC's implied egress rule"
        if item.fqdn is not None:
            if path.internet:
                grants.append(
                    Grant(
                        item.fqdn,
                        "exact",
                        item.ports,
                        "resolved-address",
                        "platform-doc",
                        FQDN_DOC,
                        resource,
                    )
                )
        else:
            grants += _block_grants(path, item, resource)
    return grants


def _block_grants(path: SandboxPath, item: Allowed, resource: str) -> list[Grant]:
    """A range's grant, or only its non-public parts where the path has no way out."""
    assert item.block is not None
    source = RANGE_DOC if item.rule else IMPLIED_DOC
    way_out = path.internet and (item.block.version == 4 or path.ipv6)
    if way_out:
        excluded = tuple(str(b) for b in item.excluded)
        return [
            Grant(
                str(item.block),
                "exact",
                item.ports,
                "address",
                "platform-doc",
                source,
                resource,
                excluded,
            )
        ]
    return [
        Grant(str(part.network), "exact", item.ports, "address", "platform-doc", source, resource)
        for part in non_public_reach(item.block, item.excluded)
    ]


def path_egress(path: SandboxPath) -> EffectiveEgress:
    """One launcher service's effective egress (UDP by the same rules' ``udp`` and ``all``
    layer 4 configs)."""
    connect = [*_connections(path), *udp_grants(_connections(path, "udp"))]
    return EffectiveEgress(TARGET, tuple(connect), tuple(_resolution(path)))


def read_egress(resources: Iterable[ResourceView]) -> EffectiveEgress:
    """The sandboxes' effective egress in a render: the union over every launcher service."""
    found = [path_egress(path) for path in sandbox_paths(resources)]
    connect = dict.fromkeys(g for egress in found for g in egress.connect)
    resolve = dict.fromkeys(g for egress in found for g in egress.resolve)
    return EffectiveEgress(TARGET, tuple(connect), tuple(resolve))


def dns_tunnels(resources: Iterable[ResourceView]) -> list[str]:
    """The launcher services whose sandboxes resolve every name although their connections
    are not open to every address: data can leave in DNS queries (``<data>.attacker.example``)
    past a closed firewall. The policy gate reports each (SBX-NET-005)."""
    found = []
    for path in sandbox_paths(resources):
        egress = path_egress(path)
        if any(g.scope == "any" for g in egress.resolve) and not any(
            g.opens_every_open_address() for g in egress.connect
        ):
            found.append(path.service)
    return found


@dataclass(frozen=True)
class RebindingHole:
    """An allowed name that reaches a non-public address when its owner makes it resolve there.

    Attributes:
        service: the launcher service's logical name.
        rule: the allow rule's resource name.
        name: the allowed name.
        address: a non-public address the rule then admits.
    """

    service: str
    rule: str
    name: str
    address: str


def _inside(block: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    network = ipaddress.ip_network(block)
    return network.network_address + (1 if network.num_addresses > 1 else 0)


def rebinding_holes(resources: Iterable[ResourceView]) -> list[RebindingHole]:
    """Allowed names whose FQDN objects would admit a non-public address (one inside each
    block of ``boundary.NON_PUBLIC_IPV4`` / ``NON_PUBLIC_IPV6``) if the name resolved to it:
    Cloud NGFW programs whatever the name resolves to (``FQDN_DOC``), so only a deny of those
    ranges ahead of the allow stops DNS rebinding. The policy gate reports each (SBX-NET-005).
    """
    holes = []
    for path in sandbox_paths(resources):
        if path.vpc_egress != "ALL_TRAFFIC":
            continue
        for item in allowed(path.rules, frozenset({4, 6})):
            if item.fqdn is None or item.rule is None:
                continue
            port = 443 if item.ports == "any" or 443 in item.ports else min(item.ports)
            for block in (*NON_PUBLIC_IPV4, *NON_PUBLIC_IPV6):
                address = _inside(block)
                probe = Probe(port=port, name=item.fqdn, address=address)
                if decide(path.rules, probe).allowed:
                    holes.append(RebindingHole(path.service, item.rule, item.fqdn, str(address)))
    return holes
