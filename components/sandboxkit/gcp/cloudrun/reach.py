"""What a ``gcp-cloudrun`` render lets sandboxes reach, computed from its resources only.

For each Cloud Run service with a sandbox launcher container, the reader follows the path a
sandbox's connection takes, as Google documents each piece:

1. **Route into the VPC.** ``template.vpcAccess.egress: ALL_TRAFFIC`` sends every connection
   through the Direct VPC egress network; ``PRIVATE_RANGES_ONLY`` (or no ``vpcAccess``) sends
   public destinations straight to the internet, past every VPC control
   (https://cloud.google.com/run/docs/configuring/vpc-direct-vpc).
2. **Name resolution.** Sandboxes resolve through the metadata server, which applies the VPC's
   Cloud DNS configuration, response policy first (https://cloud.google.com/dns/docs/
   vpc-name-res-order). That Direct VPC egress traffic gets the VPC's resolution is inferred,
   not stated by Google (see docs/targets/gcp-cloudrun.md, "first deploy"): every verdict
   that depends on it says so. ``sandboxkit.gcp.cloud_dns`` models the policy.
3. **Firewall.** The network firewall policies associated with the network decide by priority,
   FQDN objects by the names' resolved addresses (``sandboxkit.gcp.cloudrun.ngfw``). The
   metadata server (169.254.169.254) is always reachable: firewall rules never apply to it
   (https://cloud.google.com/firewall/docs/firewalls "Always allowed traffic").
4. **Way out.** A public destination needs a Cloud NAT covering the service's subnet (Cloud
   Run instances have no external address); an IPv6 destination needs an IPv6 subnet
   (``stackType`` other than ``IPV4_ONLY``, the default).

Resources are linked by the values a render passes between them: the service's
``networkInterfaces[].network`` / ``subnetwork`` equal the association's ``attachmentTarget``,
the response policy's ``networks[].networkUrl``, the subnets' and the router's ``network`` and
the NAT's ``subnetworks[].name``. Not read, so never counted as narrowing: the network's own
settings (deleted default routes: the network's id is not among its inputs, so a render cannot
link it) and VPC firewall rules (the kit sets ``BEFORE_CLASSIC_FIREWALL``, so the policy decides
first).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sandboxkit.gcp.cloud_dns import Outcome, PolicyRule, answer
from sandboxkit.gcp.cloudrun.ngfw import FirewallRule, Probe, decide, read_rules


class Resource(Protocol):
    """A rendered resource as the reader reads it: type token, logical name, wire inputs."""

    @property
    def type(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def props(self) -> Mapping[str, Any]: ...


SERVICE = "gcp:cloudrunv2/service:Service"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
ASSOCIATION = "gcp:compute/networkFirewallPolicyAssociation:NetworkFirewallPolicyAssociation"
RULE = "gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule"
ROUTER = "gcp:compute/router:Router"
NAT = "gcp:compute/routerNat:RouterNat"
RESPONSE_POLICY = "gcp:dns/responsePolicy:ResponsePolicy"
RESPONSE_RULE = "gcp:dns/responsePolicyRule:ResponsePolicyRule"

METADATA_ADDRESS = ipaddress.ip_address("169.254.169.254")
# The metadata server answers HTTP (80) and DNS (53) (https://cloud.google.com/compute/docs/
# metadata/overview); firewall rules never block it.
METADATA_PORTS = frozenset({53, 80})

DNS_ASSUMED = (
    "the response policy is assumed to apply to Direct VPC egress (Google documents private "
    "zones, not response policies, for it)"
)
BY_RESOLVED_ADDRESS = "by resolved address only (Cloud NGFW FQDN object)"


@dataclass(frozen=True)
class SandboxPath:
    """What the render says about one sandbox launcher service's egress path.

    Attributes:
        service: the service's logical name.
        vpc_egress: ``ALL_TRAFFIC``, ``PRIVATE_RANGES_ONLY``, or ``None`` without VPC access.
        rules: egress rules of the firewall policies associated with the service's network.
        dns: the response policy rules bound to the network; ``None`` when no policy is bound.
        internet: a public IPv4 destination has a way out (default route and Cloud NAT).
        ipv6: a subnet of the network carries IPv6.
    """

    service: str
    vpc_egress: str | None
    rules: tuple[FirewallRule, ...]
    dns: tuple[PolicyRule, ...] | None
    internet: bool
    ipv6: bool


@dataclass(frozen=True)
class Verdict:
    """What one probe gets.

    Attributes:
        admitted: a connection to the probe's host and port opens.
        resolves: for a name, it resolves through the internet (``None`` for an address).
        how: how the decision is enforced, in words (by address, by resolved address only,
            by the platform, or why nothing leaves).
        assumptions: documented-platform or inferred behaviour the verdict rests on.
    """

    admitted: bool
    resolves: bool | None
    how: str
    assumptions: tuple[str, ...] = ()


def _interfaces(service: Resource) -> list[Mapping[str, Any]]:
    vpc = service.props.get("template", {}).get("vpcAccess") or {}
    return list(vpc.get("networkInterfaces") or [])


def _is_launcher(service: Resource) -> bool:
    containers = service.props.get("template", {}).get("containers") or []
    return any(c.get("sandboxLauncher") is True for c in containers)


def _of(resources: Iterable[Resource], type_token: str) -> list[Resource]:
    return [r for r in resources if r.type == type_token]


def _path(resources: Sequence[Resource], service: Resource) -> SandboxPath:
    vpc = service.props.get("template", {}).get("vpcAccess")
    interfaces = _interfaces(service)
    networks = {i.get("network") for i in interfaces} - {None}
    subnets = {i.get("subnetwork") for i in interfaces} - {None}
    policies = {
        a.props.get("firewallPolicy")
        for a in _of(resources, ASSOCIATION)
        if a.props.get("attachmentTarget") in networks
    }
    rules = read_rules(
        (r.name, r.props) for r in _of(resources, RULE) if r.props.get("firewallPolicy") in policies
    )
    bound = [
        p
        for p in _of(resources, RESPONSE_POLICY)
        if any(n.get("networkUrl") in networks for n in p.props.get("networks") or [])
    ]
    names = {p.props.get("responsePolicyName") for p in bound}
    dns = tuple(
        PolicyRule.from_inputs(r.props)
        for r in _of(resources, RESPONSE_RULE)
        if r.props.get("responsePolicy") in names
    )
    routers = {
        r.props.get("name") for r in _of(resources, ROUTER) if r.props.get("network") in networks
    }
    nat = any(
        n.props.get("sourceSubnetworkIpRangesToNat") == "ALL_SUBNETWORKS_ALL_IP_RANGES"
        or any(s.get("name") in subnets for s in n.props.get("subnetworks") or [])
        for n in _of(resources, NAT)
        if n.props.get("router") in routers
    )
    subnet_stacks = {
        s.props.get("stackType", "IPV4_ONLY")
        for s in _of(resources, SUBNET)
        if s.props.get("network") in networks
    }
    return SandboxPath(
        service=service.name,
        vpc_egress=None if vpc is None else str(vpc.get("egress")),
        rules=tuple(rules),
        dns=dns if bound else None,
        internet=nat,
        ipv6=bool(subnet_stacks - {"IPV4_ONLY"}),
    )


def sandbox_paths(resources: Iterable[Resource]) -> list[SandboxPath]:
    """One ``SandboxPath`` per Cloud Run service with a sandbox launcher container."""
    rendered = list(resources)
    return [_path(rendered, s) for s in _of(rendered, SERVICE) if _is_launcher(s)]


def resolves(path: SandboxPath, name: str) -> tuple[bool, tuple[str, ...]]:
    """Whether ``name`` resolves through the internet for the path's sandboxes, and what that
    rests on. Without a response policy every name does."""
    if path.vpc_egress != "ALL_TRAFFIC" or path.dns is None:
        return True, ()
    return answer(path.dns, name, "A") is Outcome.RESOLVED, (DNS_ASSUMED,)


def probe(path: SandboxPath, host: str, port: int) -> Verdict:
    """What a sandbox gets connecting to ``host`` (a name or an IP literal) on TCP ``port``."""
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(
            host.strip("[]")
        )
    except ValueError:
        address = None
    if address == METADATA_ADDRESS:
        admitted = port in METADATA_PORTS
        return Verdict(
            admitted,
            None,
            "by the platform: the metadata server is always reachable from the instance",
            ("whether sandboxes started by the sandbox CLI reach it is not documented",),
        )
    public_leaves = address is None or address.is_global
    if path.vpc_egress != "ALL_TRAFFIC" and public_leaves:
        return Verdict(
            True,
            True if address is None else None,
            f"not filtered: vpcAccess.egress {path.vpc_egress} sends public destinations "
            "straight to the internet",
        )
    if address is None:
        found, assumptions = resolves(path, host)
        if not found:
            return Verdict(
                False,
                False,
                "the name does not resolve: the response policy answers it locally",
                assumptions,
            )
    else:
        found, assumptions = False, ()
    decision = decide(path.rules, Probe(port=port, name=None if address else host, address=address))
    notes = list(assumptions)
    if decision.unknown:
        notes.append(f"rules the reader cannot model come first: {', '.join(decision.unknown)}")
    if not decision.allowed:
        return Verdict(
            False,
            found if address is None else None,
            f"denied by rule {decision.rule}",
            tuple(notes),
        )
    way_out = (address is None or address.version == 4 or path.ipv6) and path.internet
    if not way_out:
        reason = "no IPv6 on the subnet" if address and address.version == 6 else "no route or NAT"
        return Verdict(
            False, found if address is None else None, f"no way out: {reason}", tuple(notes)
        )
    rule = decision.rule or "the implied allow (no rule matched)"
    how = BY_RESOLVED_ADDRESS if decision.by_name else "by address"
    return Verdict(True, found if address is None else None, f"{how}, rule {rule}", tuple(notes))
