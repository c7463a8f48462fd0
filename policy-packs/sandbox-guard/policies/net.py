"""NET: where sandbox code may connect.

The checks are the targets' (``HANDLERS`` in each target folder's ``guard.py``), but SBX-NET-006
and SBX-NET-008, which read the whole stack through every registered target's egress reader.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import Severity

from sandboxkit.boundary import RESOLVER_PORTS
from sandboxkit.effective_egress import (
    EffectiveEgress,
    Grant,
    compare,
    contract_probes,
    inexpressible,
    port_runs,
)
from sandboxkit.egress_contract import EgressContract, parse_rule
from sandboxkit.guard import (
    EGRESS_READ_FAILURES,
    CheckContext,
    StackResource,
    numbers,
    target_views,
    unreadable_egress,
)
from sandboxkit.targets import TARGET_MODULES, get_target

from ._common import ResourceRule, Rule, StackRule

EGRESS_CLOSED = ResourceRule(
    Rule(
        id="SBX-NET-001",
        title="Sandbox egress is not open to the internet",
        severity=Severity.CRITICAL,
        description="Prohibits sandbox egress paths that reach the whole internet: open network "
        "policies, MicroVMs launched on INTERNET_EGRESS, wide security groups, Cloud Run egress "
        "outside the VPC firewall, session pools with egress enabled; and egress rules on ports "
        "beyond the allowed ones (network policies, Cilium and GKE FQDN policies, security "
        "groups, firewall policy rules).",
        remediation="Set sandboxkit:profile.egress.mode to deny, or to allowlist with the hosts "
        "sandboxes need on the allowed ports, and keep the kit's egress controls in place.",
        properties={
            "allowedPorts": {
                "type": "array",
                # A TCP/UDP port number (RFC 793, 768): 0, 70000 and -5 name no port.
                "items": {"type": "integer", "minimum": 1, "maximum": 65535},
                "uniqueItems": True,
                "default": [443, 80, 53],
                "description": "TCP/UDP ports sandbox egress rules may open: NetworkPolicy, "
                "CiliumNetworkPolicy and FQDNNetworkPolicy egress rules, security group egress "
                "rules and firewall policy allow rules (a connector's security group may open "
                "them to any address: the firewall behind it filters by name).",
            }
        },
    )
)

ALLOWLIST_SPECIFIC = ResourceRule(
    Rule(
        id="SBX-NET-002",
        title="Allowlist entries are specific public hosts",
        severity=Severity.HIGH,
        description="Prohibits allowlist entries that cover everything, a whole top-level "
        "domain, or a private, loopback, link-local or metadata address; and Network Firewall "
        "pass rules matching any name, a wildcard's apex (dotprefix) or every address.",
        remediation="List each public host sandboxes need as host[:port] in "
        "sandboxkit:profile.egress.allow; never a wildcard over everything or an internal "
        "address.",
    )
)

DEFAULT_DENY = ResourceRule(
    Rule(
        id="SBX-NET-003",
        title="Egress firewalls deny by default",
        severity=Severity.HIGH,
        description="Checks that egress firewalls drop what no rule allows: Network Firewall "
        "policies in strict order with aws:drop_established, stateless traffic forwarded to "
        "the stateful engine and resolved-IP validation (DROP or REJECT, no empty "
        "SourceIPRanges), domain lists as allowlists, GKE clusters with Dataplane V2 so network "
        "policies are enforced, and Cloudflare Workers running the kit's code (interceptions "
        "only for the listed hosts) with global_fetch_strictly_public.",
        remediation="Keep the kit's firewall defaults: STRICT_ORDER with aws:drop_established, "
        "aws:forward_to_sfe, resolved-IP validation in the kit's FirewallPolicyDocument, "
        "ALLOWLIST domain rule groups, ADVANCED_DATAPATH on GKE, and the kit's Worker module "
        "unchanged with compatibility flag global_fetch_strictly_public.",
    )
)

DNS_FAIL_CLOSED = ResourceRule(
    Rule(
        id="SBX-NET-004",
        title="DNS firewall fails closed",
        severity=Severity.HIGH,
        description="Checks that the Route 53 Resolver DNS Firewall in front of sandboxes "
        "blocks queries when it cannot evaluate them (firewallFailOpen DISABLED).",
        remediation="Set firewallFailOpen to DISABLED on the VPC's ResolverFirewallConfig.",
    )
)

EGRESS_ATTACHED = StackRule(
    Rule(
        id="SBX-NET-005",
        title="Every sandbox runtime has an egress control attached",
        severity=Severity.CRITICAL,
        description="Checks that every sandbox runtime in the stack has its egress control "
        "deployed with it: a NetworkPolicy selecting each SandboxTemplate's pods, the connector, "
        "Network Firewall and DNS firewall for MicroVM images, a deny-all egress rule ordered "
        "after the allow rules and a DNS response policy answering every unlisted name for "
        "Cloud Run.",
        remediation="Deploy sandboxes through the kit's target components, which create the "
        "egress controls with the runtime.",
    )
)


@dataclass(frozen=True)
class _TargetRead:
    """One registered target's egress as its reader found it in the stack: ``effective`` is
    ``None`` when the reader raised ``failure`` (one of ``guard.EGRESS_READ_FAILURES``)."""

    target: str
    effective: EffectiveEgress | None
    failure: Exception | None
    urns: Mapping[str, str]

    def unreadable(self, rule: Rule) -> tuple[str, str | None]:
        """``rule``'s finding for a target whose reader failed, on the target's component."""
        assert self.failure is not None
        return unreadable_egress(rule.id, self.target, self.failure), self.urns.get(self.target)


def _read_targets(resources: Sequence[StackResource]) -> Iterator[_TargetRead]:
    """Every registered target with a reader that found its resources in the stack, each reader
    reading the resources its component created and those outside every component
    (``guard.target_views``, as explain-egress does). A reader that
    refuses them or fails on an input of the wrong shape (``guard.EGRESS_READ_FAILURES``)
    gives a read without ``effective``, which each check reports: never a target skipped, nor
    the stack's check crashed by one target."""
    urns = {r.name: r.urn for r in resources}
    for target in TARGET_MODULES:
        try:
            effective = get_target(target).read_egress(target_views(resources, target))
        except EGRESS_READ_FAILURES as failure:
            yield _TargetRead(target, None, failure, urns)
            continue
        if effective is not None:
            yield _TargetRead(target, effective, None, urns)


def _urn_of(grant: Grant, urns: Mapping[str, str]) -> str | None:
    # A grant names its resource as "<kind> <name>".
    return urns.get(grant.resource.rpartition(" ")[2])


def _names_by_address(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    # A grant a reader marks 'resolved address only' admits any site on that name's addresses.
    for read in _read_targets(resources):
        target, effective, urns = read.target, read.effective, read.urns
        if effective is None:
            yield read.unreadable(NAMES_BY_NAME.rule)
            continue
        for finding in inexpressible(effective):
            if finding.kind != "resolved-address-only":
                continue
            grant = finding.grant
            yield (
                f"{target} admits {grant.host} by resolved address only ({grant.resource}): "
                "any site on that name's addresses passes, such as another customer of the "
                "same CDN; use a target that checks the name itself (TLS SNI or HTTP Host), "
                "or accept it in the pack config (sbx-net-006 advisory).",
                _urn_of(grant, urns),
            )


NAMES_BY_NAME = StackRule(
    Rule(
        id="SBX-NET-006",
        title="Egress names are matched by name, not only by resolved address",
        severity=Severity.HIGH,
        description="Prohibits egress that admits a name only by the addresses the name "
        "resolves to (Cloud NGFW FQDN objects, and any target whose egress reader says "
        "'resolved address only'): every site sharing those addresses passes. A target whose "
        "reader refuses its resources is reported as not verifiable.",
        remediation="Use a target that checks the allowed name itself at L7, or accept "
        "matching by resolved address in the pack config (sbx-net-006 advisory).",
    ),
    every_stack=_names_by_address,
)

SANDBOX_DNS_FILTERED = StackRule(
    Rule(
        id="SBX-NET-007",
        title="Sandbox DNS answers only the names the allowlist lets resolve",
        severity=Severity.HIGH,
        description="Prohibits DNS paths that let sandbox pods resolve any name (a DNS "
        "tunnel): a Cilium DNS rule matching every name, sandbox DNS to kube-dns or to every "
        "pod, an L4-only rule on port 53 that voids a Cilium L7 DNS rule, and a kit resolver "
        "that forwards every name upstream.",
        remediation="Send sandbox DNS only to the kit's resolver, through the Cilium policy's "
        "DNS rule listing the allowlisted names (the kubernetes and gcp-gke targets do).",
    )
)


def _declared_contract(declared: Mapping[str, Any]) -> EgressContract:
    return EgressContract(
        declared["mode"],
        tuple(parse_rule(str(entry)) for entry in declared["allow"]),
        tuple(parse_rule(str(entry)) for entry in declared["controlPlane"]),
    )


def _contract_differences(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    contracts = ctx.setting("contracts")
    for read in _read_targets(resources):
        target, effective, urns = read.target, read.effective, read.urns
        if effective is None:
            yield read.unreadable(MATCHES_CONTRACT.rule)
            continue
        declared = contracts.get(target)
        # Open admits every public address on every port: a grant no contract expresses widens
        # nothing there, and the probes below still find a non-public address it admits.
        weak = () if declared and declared["mode"] == "open" else inexpressible(effective)
        for finding in weak:
            if finding.kind == "resolved-address-only":
                continue  # SBX-NET-006's
            yield (
                f"{target} grants what no egress contract expresses: {finding}; deploy the "
                "target's component unchanged, which renders only what the contract says.",
                _urn_of(finding.grant, urns),
            )
        if declared is None:
            if not target_views(resources, target):
                continue  # a reader answers for a target the stack does not list
            # The Pulumi CLI run with the plain config/<environment>.json: nothing to compare
            # with, which must never read as a pass (mandatory in prod).
            yield (
                f"{target} has no egress contract in the pack config, so its egress cannot be "
                "compared with the stack's profile; run the pack with the config `sandboxkit "
                "pack-config --stack <stack> --out <file>` writes (pulumi preview/up "
                "--policy-pack-config <file>), which holds every target's contract.",
                None,
            )
            continue
        contract = _declared_contract(declared)
        yield from (
            (message, urns.get(target)) for message in _control_plane_ports(target, contract, ctx)
        )
        differences = compare(effective, contract, contract_probes(contract, effective))
        # One report per run of consecutive ports: a grant on a port range is one finding.
        for difference, last_port in port_runs(differences):
            # A wider answer is on the resource granting it; a narrower one on the component.
            grants = difference.verdict.grants
            yield (
                f"{target} differs from the stack's egress contract: "
                f"{difference.describe(last_port)}; deploy the "
                "target's component unchanged for this profile (sandboxkit preview "
                "--explain-egress shows every probe).",
                (_urn_of(grants[0], urns) if grants else None) or urns.get(target),
            )


def _control_plane_ports(target: str, contract: EgressContract, ctx: CheckContext) -> Iterator[str]:
    """A sentence for each control-plane entry on a resolver port (in every mode: a DNS channel
    to anywhere) and, with egress ``deny``, on a port outside ``controlPlanePorts`` (the only
    egress a deny stack has is its control plane's own API)."""
    allowed = {int(p) for p in ctx.setting("controlPlanePorts")}
    for rule in contract.control_plane:
        if rule.port in RESOLVER_PORTS:
            yield (
                f"{target} grants control-plane host {rule} on resolver port {rule.port}: a host "
                "reached on a DNS port is a DNS channel to any name, whatever it is called; "
                f"remove it from sandboxkit:{target}.controlPlaneHosts (sandboxes resolve names "
                "only through their target's own resolver)."
            )
        elif contract.mode == "deny" and rule.port not in allowed:
            yield (
                f"{target} grants control-plane host {rule} on port {rule.port} with egress deny, "
                f"where a control plane is reached on port {numbers(sorted(allowed))} only; "
                f"write the host without a port in sandboxkit:{target}.controlPlaneHosts, or add "
                "the port to sbx-net-008's controlPlanePorts in the pack config once reviewed."
            )


MATCHES_CONTRACT = StackRule(
    Rule(
        id="SBX-NET-008",
        title="Every target's egress is the stack's egress contract",
        severity=Severity.CRITICAL,
        description="Checks, with each target's egress reader over the resources its component "
        "created and those the project's program adds outside every component, that no "
        "target grants what the egress contract cannot express (a wildcard "
        "admitting its apex or one label only, a name on every port, a name matched only as "
        "the client claims it) and, for the contracts in the policy's config (sandboxkit "
        "check fills them from the stack's profile), that every probe derived from the "
        "entries (the name, one and two labels below, the apex, another port, the metadata "
        "address and its NAT64 form) is admitted exactly when the contract admits it. A target "
        "whose reader refuses its resources is reported as not verifiable, never skipped. "
        "Prohibits control-plane entries on a resolver port (53, 853: a DNS channel) and, with "
        "egress deny, on a port beyond controlPlanePorts.",
        remediation="Deploy each target's component unchanged for the stack's profile; "
        "sandboxkit preview --explain-egress shows each target's answer per probe.",
        properties={
            "contracts": {
                "type": "object",
                "default": {},
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "mode": {"enum": ["deny", "allowlist", "open"]},
                        "allow": {"type": "array", "items": {"type": "string"}},
                        "controlPlane": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["mode", "allow", "controlPlane"],
                    "additionalProperties": False,
                },
                "description": "Each target's egress contract, by target name: the profile's "
                "egress mode and allow entries, and the target's control-plane entries "
                "(host:port). sandboxkit check sets it from the stack, and sandboxkit pack-config "
                "writes it for the Pulumi CLI; a target without one is a finding (run "
                "pack-config), never a pass.",
            },
            "controlPlanePorts": {
                "type": "array",
                "items": {"type": "integer"},
                "default": [443],
                "description": "Ports a deny stack's control-plane hosts may be reached on: "
                "HTTPS, what an agent platform's API serves. A control-plane entry on another "
                "port is reported; one on a resolver port (53, 853) is reported in every mode.",
            },
        },
    ),
    every_stack=_contract_differences,
)

CONTROL_PLANE_BOUNDED = ResourceRule(
    Rule(
        id="SBX-NET-009",
        title="The cluster's control plane faces a bounded set of networks",
        severity=Severity.HIGH,
        description="Checks that a GKE cluster's control plane has no public endpoint unless "
        "the stack acknowledges it with a reason (sandboxkit:gcp-gke.publicEndpointReason), "
        "that its master authorized networks number at most GKE's 50 (GKE API v1 "
        "MasterAuthorizedNetworksConfig.cidr_blocks) and that their union, not each entry, "
        "holds at most the configured number of public addresses: splitting a wide block "
        "into many narrow ones passes a per-entry cap.",
        remediation="Keep sandboxkit:gcp-gke.privateEndpoint true (or give "
        "publicEndpointReason) and list only the few networks that administer the cluster in "
        "masterAuthorizedNetworks.",
        properties={
            "maxAuthorizedIpv4Addresses": {
                "type": "integer",
                "default": 16777216,
                "description": "Most public IPv4 addresses the union of a cluster's authorized "
                "networks may hold: 2^24, one /8, the widest single entry the kit's config "
                "takes. Private-use (RFC 1918) blocks are not counted.",
            },
            "minAuthorizedIpv6Prefix": {
                "type": "integer",
                "default": 32,
                "description": "The union of a cluster's IPv6 authorized networks may hold at "
                "most as many addresses as one block of this prefix length (32: a /32, the "
                "widest single IPv6 entry the kit's config takes).",
            },
        },
    )
)

RULES = [
    EGRESS_CLOSED,
    ALLOWLIST_SPECIFIC,
    DEFAULT_DENY,
    DNS_FAIL_CLOSED,
    EGRESS_ATTACHED,
    NAMES_BY_NAME,
    SANDBOX_DNS_FILTERED,
    MATCHES_CONTRACT,
    CONTROL_PLANE_BOUNDED,
]
