"""NET: where sandbox code may connect."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import Severity

from sandboxkit.aws.firewall_policy import RESOURCE_TYPE as FIREWALL_POLICY_DOCUMENT
from sandboxkit.aws.suricata import read_rules
from sandboxkit.cloudflare.reach import worker_code_problems
from sandboxkit.contract import EGRESS_POLICY_BINDING, EVERYWHERE, SANDBOX_POD_LABEL
from sandboxkit.contract import INTERNET_EGRESS_CONNECTOR as INTERNET_EGRESS
from sandboxkit.egress import parse_rule
from sandboxkit.gcp.cloudrun.reach import dns_tunnels, rebinding_holes
from sandboxkit.reach import ResourceView, inexpressible
from sandboxkit.targets import TARGET_MODULES, get_target

from ._common import (
    WORKERS_SCRIPT,
    Context,
    ResourceRule,
    Rule,
    StackRule,
    dig,
    items,
    non_public_overlap,
    numbers,
    plain_bindings,
    target_of,
)


def worker_egress_policy(props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The parsed ``EGRESS_POLICY`` binding of a Worker, or ``None`` if absent or unreadable."""
    text = plain_bindings(props).get(EGRESS_POLICY_BINDING)
    try:
        policy = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return policy if isinstance(policy, Mapping) else None


EGRESS_CLOSED = ResourceRule(
    Rule(
        id="SBX-NET-001",
        title="Sandbox egress is not open to the internet",
        severity=Severity.CRITICAL,
        description="Prohibits sandbox egress paths that reach the whole internet: open network "
        "policies, MicroVM images on INTERNET_EGRESS, wide security groups, Cloud Run egress "
        "outside the VPC firewall, session pools with egress enabled; and egress rules on ports "
        "beyond the allowed ones (network policies, Cilium and GKE FQDN policies, security "
        "groups, firewall policy rules).",
        remediation="Set sandboxkit:profile.egress.mode to deny, or to allowlist with the hosts "
        "sandboxes need on the allowed ports, and keep the kit's egress controls in place.",
        properties={
            "allowedPorts": {
                "type": "array",
                "items": {"type": "integer"},
                "default": [443, 80, 53],
                "description": "TCP/UDP ports sandbox egress rules may open: NetworkPolicy, "
                "CiliumNetworkPolicy and FQDNNetworkPolicy egress rules, security group egress "
                "rules and firewall policy allow rules (a connector's security group may open "
                "them to any address: the firewall behind it filters by name).",
            }
        },
    )
)

# The ports one egress rule admits: (first, last), None for every port, or a port name (a
# named port, whose number the policy cannot know).
PortSpan = tuple[int, int] | str | None


def _span(port: Any, end_port: Any = None) -> PortSpan:
    """A rule's port (a number, digits, a name; absent or 0 for every port) and end port."""
    if port is None or str(port) in ("0", "0.0"):
        return None
    if isinstance(port, str) and not port.isdigit():
        return port
    first = int(port)
    last = int(end_port) if isinstance(end_port, int | float) else first
    return first, last


def _listed_spans(ports: Any) -> list[PortSpan]:
    """Spans of a ``ports`` list of ``{protocol, port, endPort}`` (absent or empty: every
    port), as NetworkPolicy, FQDNNetworkPolicy and Cilium ``toPorts[].ports`` write them."""
    entries = [p for p in items(ports) if isinstance(p, Mapping)]
    if not entries:
        return [None]
    return [_span(p.get("port"), p.get("endPort")) for p in entries]


def _beyond(spans: Sequence[PortSpan], ctx: Context) -> list[str]:
    """The spans that reach a port outside the policy's ``allowedPorts``, as words."""
    allowed = {int(p) for p in ctx.setting("allowedPorts")}
    found = []
    for span in spans:
        if span is None:
            found.append("every port")
        elif isinstance(span, str):
            found.append(f"named port {span}")
        elif any(port not in allowed for port in range(span[0], span[1] + 1)):
            first, last = span
            found.append(f"port {first}" if first == last else f"ports {first}-{last}")
    return found


def _ports_problem(what: str, spans: Sequence[PortSpan], ctx: Context) -> Iterator[str]:
    beyond = _beyond(spans, ctx)
    if beyond:
        yield (
            f"{what} admits egress on {', '.join(beyond)}, beyond ports "
            f"{numbers(ctx.setting('allowedPorts'))}; allow only hosts on those ports in "
            "sandboxkit:profile.egress.allow, or add the port to sbx-net-001's allowedPorts "
            "in the pack config."
        )


def _selects_sandboxes(selector: Any) -> bool:
    """Whether a pod/endpoint selector's matchLabels take in the kit's sandbox pods."""
    labels = dig(selector, "matchLabels", {}) or {}
    return not labels or SANDBOX_POD_LABEL in labels


@EGRESS_CLOSED.on("kubernetes:networking.k8s.io/v1:NetworkPolicy")
def _network_policy_open(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if not _selects_sandboxes(dig(props, "spec.podSelector")):
        return
    spec = dig(props, "spec", {})
    if "Egress" not in items(spec.get("policyTypes")):
        yield (
            f"NetworkPolicy {ctx.name} selects sandbox pods but does not restrict egress; "
            "add Egress to spec.policyTypes."
        )
    for index, rule in enumerate(items(spec.get("egress"))):
        # One finding per rule: a rule open to every destination needs no port finding too.
        peers = items(dig(rule, "to"))
        wide = [c for c in (dig(peer, "ipBlock.cidr") for peer in peers) if c in EVERYWHERE]
        if not peers:
            yield (
                f"NetworkPolicy {ctx.name} egress rule {index} has no 'to' and admits every "
                "destination; list the destinations or use egress mode deny."
            )
        elif wide:
            yield (
                f"NetworkPolicy {ctx.name} admits egress to {' and '.join(wide)} (egress mode "
                "open); set sandboxkit:profile.egress.mode to deny or allowlist."
            )
        else:
            what = f"NetworkPolicy {ctx.name} egress rule {index}"
            yield from _ports_problem(what, _listed_spans(dig(rule, "ports")), ctx)


@EGRESS_CLOSED.on("kubernetes:*:SandboxTemplate")
def _template_managed_policy(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    management = dig(props, "spec.networkPolicyManagement", "Managed")
    if management != "Unmanaged":
        yield (
            f"SandboxTemplate {ctx.name} has networkPolicyManagement {management}: the "
            "controller's managed policy admits the public internet and policies add up; set it "
            "to Unmanaged so the kit's NetworkPolicy alone decides."
        )


def _cilium_world(rule: Any) -> bool:
    entities = {str(e) for e in items(dig(rule, "toEntities"))}
    cidrs = {str(c) for c in items(dig(rule, "toCIDR"))}
    return bool(entities & {"world", "all"} or cidrs & set(EVERYWHERE))


@EGRESS_CLOSED.on("kubernetes:cilium.io/v2:CiliumNetworkPolicy")
def _cilium_open(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for rule in items(dig(props, "spec.egress")):
        if _cilium_world(rule):
            yield (
                f"CiliumNetworkPolicy {ctx.name} admits egress to the whole internet; "
                "allow only toFQDNs entries from the profile's allowlist."
            )


@EGRESS_CLOSED.on("kubernetes:cilium.io/v2:CiliumNetworkPolicy")
def _cilium_ports(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if not _selects_sandboxes(dig(props, "spec.endpointSelector")):
        return
    for index, rule in enumerate(items(dig(props, "spec.egress"))):
        if _cilium_world(rule):
            continue  # _cilium_open reports it; one finding per rule.
        to_ports = [t for t in items(dig(rule, "toPorts")) if isinstance(t, Mapping)]
        # A rule without toPorts (or a toPorts entry without ports) admits every port.
        spans = [s for t in to_ports for s in _listed_spans(t.get("ports"))] or [None]
        yield from _ports_problem(f"CiliumNetworkPolicy {ctx.name} egress rule {index}", spans, ctx)


@EGRESS_CLOSED.on("kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy")
def _gke_fqdn_ports(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if not _selects_sandboxes(dig(props, "spec.podSelector")):
        return
    for index, rule in enumerate(items(dig(props, "spec.egress"))):
        what = f"FQDNNetworkPolicy {ctx.name} egress rule {index}"
        yield from _ports_problem(what, _listed_spans(dig(rule, "ports")), ctx)


@EGRESS_CLOSED.on("aws:lambdamicrovms/image:Image")
def _microvm_connectors(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    connectors = items(props.get("egressNetworkConnectors"))
    if not connectors:
        yield (
            f"MicroVM image {ctx.name} sets no egressNetworkConnectors, so MicroVMs get the "
            f"default {INTERNET_EGRESS}; set them to the kit's CoreNetworkConnector only."
        )
    elif INTERNET_EGRESS in connectors:
        yield (
            f"MicroVM image {ctx.name} lists {INTERNET_EGRESS} in egressNetworkConnectors; "
            "remove it and keep only the kit's CoreNetworkConnector."
        )


def _sg_span(rule: Mapping[str, Any], protocol_key: str) -> PortSpan:
    if str(rule.get(protocol_key, "")).lower() in ("-1", "all"):
        return None
    low, high = rule.get("fromPort"), rule.get("toPort")
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return None
    return int(low), int(high)


@EGRESS_CLOSED.on("aws:ec2/securityGroup:SecurityGroup")
def _security_group_open(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if target_of(props) is None:
        return
    for index, rule in enumerate(items(props.get("egress"))):
        what = f"Security group {ctx.name} egress rule {index}"
        yield from _ports_problem(what, [_sg_span(rule, "protocol")], ctx)


@EGRESS_CLOSED.on("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
def _egress_rule_open(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if target_of(props) is None:
        return
    what = f"Security group egress rule {ctx.name}"
    yield from _ports_problem(what, [_sg_span(props, "ipProtocol")], ctx)


def _stateful_pass_rules(props: Mapping[str, Any], ctx: Context) -> Iterator[Any]:
    text = dig(props, "ruleGroup.rulesSource.rulesString")
    if not isinstance(text, str):
        return
    try:
        yield from read_rules(text)
    except ValueError as exc:
        raise ValueError(f"Network Firewall rule group {ctx.name}: {exc}") from None


@EGRESS_CLOSED.on("aws:networkfirewall/ruleGroup:RuleGroup")
def _suricata_ports(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for rule in _stateful_pass_rules(props, ctx):
        what = f"Network Firewall rule group {ctx.name} pass rule sid {rule.sid}"
        yield from _ports_problem(
            what, [None if rule.port is None else (rule.port, rule.port)], ctx
        )


@EGRESS_CLOSED.on("gcp:cloudrunv2/service:Service")
def _cloud_run_egress(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    egress = dig(props, "template.vpcAccess.egress")
    if dig(props, "template.vpcAccess") is None:
        yield (
            f"Cloud Run service {ctx.name} has no VPC access, so sandboxes launched with "
            "network on egress straight to the internet; set template.vpcAccess with Direct "
            "VPC egress ALL_TRAFFIC into the kit's VPC."
        )
    elif egress != "ALL_TRAFFIC":
        yield (
            f"Cloud Run service {ctx.name} routes only private ranges through the VPC "
            f"(vpcAccess.egress {egress}); set it to ALL_TRAFFIC so the VPC firewall policy "
            "sees every connection."
        )


def _gcp_span(port: Any) -> PortSpan:
    first, _, last = str(port).partition("-")
    if not first.isdigit() or not (last or first).isdigit():
        return str(port)
    return int(first), int(last or first)


def _gcp_spans(match: Any) -> list[PortSpan]:
    """Spans of a firewall match's ``layer4Configs`` (``ports`` such as ``"443"`` or
    ``"8000-8080"``; protocol ``all``, or no ports, admits every port)."""
    spans: list[PortSpan] = []
    for config in [c for c in items(dig(match, "layer4Configs")) if isinstance(c, Mapping)]:
        ports = items(config.get("ports"))
        if str(config.get("ipProtocol", "")).lower() == "all" or not ports:
            spans.append(None)
        else:
            spans.extend(_gcp_span(p) for p in ports)
    return spans or [None]


@EGRESS_CLOSED.on("gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule")
def _gcp_rule_open(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if props.get("direction") != "EGRESS" or props.get("action") != "allow":
        return
    wide = [c for c in items(dig(props, "match.destIpRanges")) if c in EVERYWHERE]
    if wide:
        yield (
            f"Firewall policy rule {ctx.name} allows egress to {wide[0]}; allow only the "
            "allowlisted FQDNs and let the deny-all rule take the rest."
        )
    else:
        what = f"Firewall policy rule {ctx.name}"
        yield from _ports_problem(what, _gcp_spans(props.get("match")), ctx)


@EGRESS_CLOSED.on("azure-native:app:ContainerAppsSessionPool")
def _session_pool_egress(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    status = dig(props, "sessionNetworkConfiguration.status")
    if status != "EgressDisabled":
        yield (
            f"Session pool {ctx.name} has sessionNetworkConfiguration.status {status}; set it "
            "to EgressDisabled (sandboxkit:profile.egress.mode deny): the pool cannot filter "
            "by host."
        )


@EGRESS_CLOSED.on(WORKERS_SCRIPT)
def _worker_egress(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    policy = worker_egress_policy(props)
    if policy is None:
        yield (
            f"Worker {ctx.name} has no readable {EGRESS_POLICY_BINDING} binding, and Cloudflare "
            "containers reach the internet by default; deploy the kit's Worker with its egress "
            "policy binding."
        )
    elif policy.get("mode") not in ("deny", "allowlist"):
        yield (
            f"Worker {ctx.name} lets its containers egress with mode {policy.get('mode')}; set "
            "sandboxkit:profile.egress.mode to deny or allowlist."
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


def _entry_problem(entry: str) -> str | None:
    try:
        parse_rule(entry)
    except ValueError as exc:
        return str(exc)
    return None


def _entries_problems(kind: str, name: str, entries: Sequence[str]) -> Iterator[str]:
    for entry in entries:
        problem = _entry_problem(entry)
        if problem:
            yield (
                f"{kind} {name} allows '{entry}': {problem}. Replace it with the exact "
                "public hosts sandboxes need."
            )


def _cidr_problems(kind: str, name: str, cidr: str, excepted: Sequence[str]) -> Iterator[str]:
    if cidr in EVERYWHERE:
        return  # SBX-NET-001 judges destinations that mean everything.
    reached = non_public_overlap(cidr, excepted)
    if reached:
        yield (
            f"{kind} {name} allows {cidr}, which reaches non-public range(s) "
            f"{', '.join(reached)}; allow only public host addresses."
        )


@ALLOWLIST_SPECIFIC.on("kubernetes:networking.k8s.io/v1:NetworkPolicy")
def _np_entries(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for rule in items(dig(props, "spec.egress")):
        for peer in items(dig(rule, "to")):
            cidr = dig(peer, "ipBlock.cidr")
            if isinstance(cidr, str):
                excepted = [str(c) for c in items(dig(peer, "ipBlock.except"))]
                yield from _cidr_problems("NetworkPolicy", ctx.name, cidr, excepted)


@ALLOWLIST_SPECIFIC.on("kubernetes:cilium.io/v2:CiliumNetworkPolicy")
def _cilium_entries(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    entries = [
        str(fqdn.get("matchName") or fqdn.get("matchPattern"))
        for rule in items(dig(props, "spec.egress"))
        for fqdn in items(dig(rule, "toFQDNs"))
    ]
    yield from _entries_problems("CiliumNetworkPolicy", ctx.name, entries)


@ALLOWLIST_SPECIFIC.on("kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy")
def _gke_fqdn_entries(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    entries = [
        str(match.get("name") or match.get("pattern"))
        for rule in items(dig(props, "spec.egress"))
        for match in items(dig(rule, "matches"))
    ]
    yield from _entries_problems("FQDNNetworkPolicy", ctx.name, entries)


@ALLOWLIST_SPECIFIC.on("aws:networkfirewall/ruleGroup:RuleGroup")
def _aws_rule_group_entries(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    source = dig(props, "ruleGroup.rulesSource.rulesSourceList")
    if not isinstance(source, Mapping) or source.get("generatedRulesType") != "ALLOWLIST":
        return
    # Network Firewall writes a subdomain wildcard as a leading dot (".example.com").
    entries = [f"*{t}" if str(t).startswith(".") else str(t) for t in items(source.get("targets"))]
    yield from _entries_problems("Network Firewall rule group", ctx.name, entries)


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
    yield from _cidr_problems(kind, name, f"{address}/{address.max_prefixlen}", ())


@ALLOWLIST_SPECIFIC.on("aws:networkfirewall/ruleGroup:RuleGroup")
def _suricata_names(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
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
        yield from _entries_problems(kind, ctx.name, [str(entry)])


@ALLOWLIST_SPECIFIC.on("gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule")
def _gcp_rule_entries(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if props.get("direction") != "EGRESS" or props.get("action") != "allow":
        return
    fqdns = [str(f) for f in items(dig(props, "match.destFqdns"))]
    yield from _entries_problems("Firewall policy rule", ctx.name, fqdns)
    for cidr in items(dig(props, "match.destIpRanges")):
        yield from _cidr_problems("Firewall policy rule", ctx.name, str(cidr), ())


@ALLOWLIST_SPECIFIC.on(WORKERS_SCRIPT)
def _worker_entries(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    policy = worker_egress_policy(props) or {}
    entries = [
        f"{'*.' if e.get('wildcard') else ''}{e.get('host')}:{e.get('port', 443)}"
        for e in items(policy.get("allow"))
        if isinstance(e, Mapping)
    ]
    yield from _entries_problems("Worker egress policy", ctx.name, entries)


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


@DEFAULT_DENY.on("aws:networkfirewall/firewallPolicy:FirewallPolicy")
def _firewall_policy(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
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


@DEFAULT_DENY.on(WORKERS_SCRIPT)
def _worker_code(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    # Interceptions only for the listed hosts are the kit's Worker code, not its binding.
    yield from worker_code_problems(ctx.name, props)


@DEFAULT_DENY.on(FIREWALL_POLICY_DOCUMENT)
def _firewall_policy_document(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
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
            "server); validate destinations against the DNS Firewall rule group's VPC answers."
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


@DEFAULT_DENY.on("aws:networkfirewall/ruleGroup:RuleGroup")
def _rule_group_kind(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    kind = dig(props, "ruleGroup.rulesSource.rulesSourceList.generatedRulesType")
    if kind is not None and kind != "ALLOWLIST":
        yield (
            f"Network Firewall rule group {ctx.name} is a {kind} domain list, which lets every "
            "other name through; make it an ALLOWLIST."
        )


@DEFAULT_DENY.on("gcp:container/cluster:Cluster")
def _gke_datapath(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if props.get("datapathProvider") != "ADVANCED_DATAPATH":
        yield (
            f"GKE cluster {ctx.name} does not use Dataplane V2, so sandbox network and FQDN "
            "policies are not enforced; set datapathProvider to ADVANCED_DATAPATH."
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


@DNS_FAIL_CLOSED.on("aws:route53/resolverFirewallConfig:ResolverFirewallConfig")
def _dns_fail_open(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    value = props.get("firewallFailOpen", "ENABLED")
    if value != "DISABLED":
        yield (
            f"DNS firewall config {ctx.name} has firewallFailOpen {value}, so names resolve "
            "unfiltered whenever the firewall is impaired; set it to DISABLED."
        )


def _stack_egress_controls(resources: Sequence[Any], ctx: Context) -> Iterator[tuple[str, Any]]:
    def of(suffix: str) -> list[Any]:
        return [r for r in resources if r.resource_type.endswith(suffix)]

    policies = of(":NetworkPolicy")
    for template in of(":SandboxTemplate"):
        namespace = dig(template.props, "metadata.namespace")
        pod_labels = dig(template.props, "spec.podTemplate.metadata.labels", {}) or {}
        # Same target (cluster) and namespace: two targets may use the same namespace name.
        covering = [
            p
            for p in policies
            if dig(p.props, "metadata.namespace") == namespace
            and target_of(p.props) == target_of(template.props)
            and "Egress" in items(dig(p.props, "spec.policyTypes"))
            and all(
                pod_labels.get(k) == v
                for k, v in (dig(p.props, "spec.podSelector.matchLabels", {}) or {}).items()
            )
        ]
        if not covering:
            yield (
                f"SandboxTemplate {template.name} has no NetworkPolicy restricting egress of its "
                "pods in its namespace; keep the kit's NetworkPolicy alongside it.",
                template.urn,
            )
    connectors = of("lambda/coreNetworkConnector:CoreNetworkConnector")
    for image in of("lambdamicrovms/image:Image"):
        if not connectors or not of(":FirewallPolicy") or not of(":ResolverFirewallConfig"):
            yield (
                f"MicroVM image {image.name} has no CoreNetworkConnector, Network Firewall "
                "policy and DNS firewall in the stack to hold its egress; deploy them with the "
                "image (the aws-microvm target does).",
                image.urn,
            )
    rules = of("compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule")
    egress_rules = [r for r in rules if r.props.get("direction") == "EGRESS"]
    deny_all = [
        r
        for r in egress_rules
        if r.props.get("action") == "deny"
        and set(items(dig(r.props, "match.destIpRanges"))) & set(EVERYWHERE)
    ]
    allows = [r.props.get("priority", 0) for r in egress_rules if r.props.get("action") == "allow"]
    for service in of("cloudrunv2/service:Service"):
        if not deny_all:
            yield (
                f"Cloud Run service {service.name} has no deny-all egress rule in a network "
                "firewall policy; add one (0.0.0.0/0, action deny) after the allow rules.",
                service.urn,
            )
        elif allows and min(r.props.get("priority", 0) for r in deny_all) <= max(allows):
            yield (
                f"The deny-all egress rule for Cloud Run service {service.name} is evaluated "
                "before an allow rule; give it a larger priority number than every allow rule.",
                service.urn,
            )
    services = {s.name: s.urn for s in of("cloudrunv2/service:Service")}
    views = _views(resources, "gcp:")
    for name in dns_tunnels(views):
        yield (
            f"Cloud Run service {name} lets its sandboxes resolve every name while their "
            "egress is closed (no Cloud DNS response policy answering '*.' on its network), so "
            "data leaves in DNS queries; deploy the kit's component, which binds one.",
            services.get(name),
        )
    reported: set[tuple[str, str]] = set()
    for hole in rebinding_holes(views):
        if (hole.service, hole.name) in reported:
            continue
        reported.add((hole.service, hole.name))
        yield (
            f"Firewall policy rule {hole.rule} admits {hole.name} even when it resolves to "
            f"{hole.address} (Cloud NGFW programs whatever the name resolves to), so its owner "
            f"can point Cloud Run service {hole.service}'s sandboxes at non-public addresses; "
            "deny the non-public ranges at a priority ahead of every allow rule.",
            services.get(hole.service),
        )


def _views(resources: Sequence[Any], prefix: str = "") -> list[ResourceView]:
    """The stack's resources (whose type starts with ``prefix``) as egress readers read them.

    Resources whose inputs carry an asset or archive (function code) are left out: they are
    not JSON-like, and no egress reader reads them.
    """
    views = []
    for resource in resources:
        if not resource.resource_type.startswith(prefix):
            continue
        try:
            views.append(ResourceView.of(resource.resource_type, resource.name, resource.props))
        except TypeError:
            continue
    return views


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
    ),
    _stack_egress_controls,
)


def _names_by_address(resources: Sequence[Any], ctx: Context) -> Iterator[tuple[str, Any]]:
    urns = {r.name: r.urn for r in resources}
    views = _views(resources)
    for target in TARGET_MODULES:
        try:
            effective = get_target(target).read_egress(views)
        except ValueError:
            # A reader refuses inputs no grant can express (a domain list holding "*"):
            # SBX-NET-001/002 judge those inputs themselves.
            continue
        findings = inexpressible(effective) if effective is not None else ()
        for finding in findings:
            if finding.kind != "resolved-address-only":
                continue
            grant = finding.grant
            resource = grant.resource.rpartition(" ")[2]
            yield (
                f"{target} admits {grant.host} by resolved address only ({grant.resource}): "
                "any site on that name's addresses passes, such as another customer of the "
                "same CDN; use a target that checks the name itself (TLS SNI or HTTP Host), "
                "or accept it in the pack config (sbx-net-006 advisory).",
                urns.get(resource),
            )


NAMES_BY_NAME = StackRule(
    Rule(
        id="SBX-NET-006",
        title="Egress names are matched by name, not only by resolved address",
        severity=Severity.HIGH,
        description="Prohibits egress that admits a name only by the addresses the name "
        "resolves to (Cloud NGFW FQDN objects, and any target whose egress reader says "
        "'resolved address only'): every site sharing those addresses passes.",
        remediation="Use a target that checks the allowed name itself at L7, or accept "
        "matching by resolved address in the pack config (sbx-net-006 advisory).",
    ),
    _names_by_address,
)

RULES = [
    EGRESS_CLOSED,
    ALLOWLIST_SPECIFIC,
    DEFAULT_DENY,
    DNS_FAIL_CLOSED,
    EGRESS_ATTACHED,
    NAMES_BY_NAME,
]
