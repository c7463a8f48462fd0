"""How a global network firewall policy decides an egress connection, read from its rules.

The readers' model of Cloud NGFW, written from Google's documentation and not from what the
kit renders (``CloudRunSandbox`` decides that; the two meet only in tests):

- Rules are evaluated from priority 0 (first) upwards; the first rule whose direction, layer 4
  and destination match decides with its action, ``allow`` or ``deny``; a ``disabled`` rule
  behaves "as if it did not exist" (pulumi-gcp 10.2 ``compute.NetworkFirewallPolicyRule``
  ``priority`` / ``action`` / ``disabled``, from the Compute API's FirewallPolicyRule). Egress
  rules apply to new connections whose source is the target
  (https://cloud.google.com/vpc/docs/firewall-policies-rule-details).
- A matching ``goto_next`` rule ends this policy's evaluation and hands the connection to the
  next step of the evaluation order: no later rule of the policy applies (every policy ends
  in predefined lowest-priority ``goto_next`` rules for ``0.0.0.0/0`` and ``::/0``,
  https://cloud.google.com/firewall/docs/pre-defined-rules; the steps:
  https://cloud.google.com/firewall/docs/firewall-policies-rule-eval-order). The kit's network
  has no later network firewall policy and the readers count no VPC firewall rule as narrowing,
  so the model reads ``goto_next`` as an allow (the implied allow admits what reaches it).
- ``layer4Configs[].ipProtocol`` is a protocol name or an IP protocol number (6 is TCP, 17
  UDP). A ``disabled`` or ``direction`` the model cannot read (a secret, a text) is read the
  way that admits more: an allow stays, a deny is dropped.
- A connection no rule decides falls to the VPC's implied rules, which allow all egress
  (https://cloud.google.com/firewall/docs/firewalls "Implied rules").
- An FQDN object is programmed as the addresses the name resolves to
  (https://cloud.google.com/firewall/docs/fqdn-objects-overview): a destination name matches a
  rule listing that name, and so does any other name on the same addresses. The model matches
  a probe name against the listed names exactly and says the match is "by resolved address".
- Destination ranges match the addresses they contain. A probe name is taken to resolve to
  public addresses only, so it matches a range only when the range holds the whole address
  space of its family (``0.0.0.0/0``, ``::/0``); narrower ranges depend on what the name
  resolves to and are not counted.
- Match fields the model does not know (address groups, region codes, threat intelligence
  lists, network contexts, source filters) and rules aimed at some targets only make the
  rule's reach unknown: ``FirewallRule.unmodelled`` names them, ``decide`` reports them, and
  ``allowed`` refuses such an allow rule (``ValueError``) rather than guess what it admits.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# (first, last) port of a layer 4 config, or None for every port.
PortRange = tuple[int, int] | None

# Match and rule fields the model understands; any other set field makes a rule unmodelled.
_KNOWN_MATCH = frozenset({"destIpRanges", "destFqdns", "layer4Configs"})
_TARGET_FIELDS = ("targetServiceAccounts", "targetSecureTags", "targetForwardingRules")
_EVERYTHING = {4: ipaddress.ip_network("0.0.0.0/0"), 6: ipaddress.ip_network("::/0")}


@dataclass(frozen=True)
class Layer4:
    """One ``layer4Configs`` entry: ``protocol`` (``all``, ``tcp``, ``udp`` ...) and its ports."""

    protocol: str
    ports: tuple[PortRange, ...]

    def admits(self, protocol: str, port: int) -> bool:
        """Whether ``protocol``/``port`` falls in this entry (no ports: every port)."""
        if self.protocol not in ("all", protocol):
            return False
        if self.protocol == "all" or not self.ports:
            return True
        return any(span is None or span[0] <= port <= span[1] for span in self.ports)


# The rule actions the model reads (``apply_security_profile_group`` and any other: unknown).
_ACTIONS = ("allow", "deny", "goto_next")
# IP protocol numbers the model names (IANA assigned numbers): ``ipProtocol`` takes either.
_PROTOCOL_NUMBERS = {"6": "tcp", "17": "udp", "1": "icmp", "132": "sctp"}


def _protocol(value: Any) -> str:
    text = str(value if value is not None else "").strip().lower()
    return _PROTOCOL_NUMBERS.get(text, text)


def _port_range(text: Any) -> PortRange:
    first, _, last = str(text).partition("-")
    return int(first), int(last or first)


@dataclass(frozen=True)
class FirewallRule:
    """An egress rule as rendered.

    Attributes:
        name: the rule's name (``ruleName``, else the resource name).
        resource: the rule's resource (logical) name.
        priority: 0 (first) to 2147483647.
        action: ``allow``, ``deny``, ``goto_next`` or ``apply_security_profile_group``.
        ranges: ``match.destIpRanges``.
        fqdns: ``match.destFqdns``, lower case without a trailing dot.
        layer4: ``match.layer4Configs``.
        unmodelled: the set fields the model does not know, e.g. ``match.destAddressGroups``.
    """

    name: str
    resource: str
    priority: int
    action: str
    ranges: tuple[IPNetwork, ...]
    fqdns: tuple[str, ...]
    layer4: tuple[Layer4, ...]
    unmodelled: tuple[str, ...]

    @classmethod
    def from_inputs(cls, name: str, inputs: Mapping[str, Any]) -> FirewallRule | None:
        """Read a ``gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule``'s
        wire-form inputs; ``None`` for an ingress or disabled rule, which never decides egress.
        """
        action = str(inputs.get("action", ""))
        disabled, direction = inputs.get("disabled"), inputs.get("direction")
        if direction == "INGRESS" or disabled is True:
            return None
        # Unreadable (a secret, a text): an allow may be enabled and egress, a deny may not.
        if action == "deny" and (disabled not in (None, False) or direction != "EGRESS"):
            return None
        match = inputs.get("match") or {}
        unmodelled = [f"match.{key}" for key in sorted(match) if key not in _KNOWN_MATCH]
        unmodelled += [key for key in _TARGET_FIELDS if inputs.get(key)]
        return cls(
            name=str(inputs.get("ruleName") or name),
            resource=name,
            priority=int(inputs["priority"]),
            action=action,
            ranges=tuple(
                ipaddress.ip_network(r, strict=False) for r in match.get("destIpRanges") or ()
            ),
            fqdns=tuple(str(f).lower().removesuffix(".") for f in match.get("destFqdns") or ()),
            layer4=tuple(
                Layer4(
                    _protocol(c.get("ipProtocol")),
                    tuple(_port_range(p) for p in c.get("ports") or ()),
                )
                for c in match.get("layer4Configs") or ()
            ),
            unmodelled=tuple(unmodelled),
        )


@dataclass(frozen=True)
class Probe:
    """A connection to decide: a ``name``, an ``address`` or both (a name and the address it
    resolves to, e.g. a private one when its owner rebinds it), a port and a protocol."""

    port: int
    name: str | None = None
    address: IPAddress | None = None
    protocol: str = "tcp"


@dataclass(frozen=True)
class Decision:
    """What the policy does with a probe.

    Attributes:
        allowed: the connection may open.
        rule: the deciding rule's name, or ``None`` when the implied allow decides.
        by_name: the deciding rule matched the probe's name (an FQDN object, programmed as the
            name's resolved addresses), not an address range.
        unknown: names of earlier rules whose reach the model cannot tell (see
            ``FirewallRule.unmodelled``); when not empty, the decision may be wrong.
    """

    allowed: bool
    rule: str | None
    by_name: bool
    unknown: tuple[str, ...]


def _destination_match(rule: FirewallRule, probe: Probe) -> tuple[bool, bool]:
    """(matches, by name) for the probe's destination.

    A name matches a rule listing it; the address it resolves to (``probe.address``, when the
    probe gives one) matches the rule's ranges; a name given without an address matches only
    ranges covering a whole address family.
    """
    if probe.name is not None and probe.name.lower().removesuffix(".") in rule.fqdns:
        return True, True
    if probe.address is None:
        return any(r in _EVERYTHING.values() for r in rule.ranges), False
    return any(probe.address in r for r in rule.ranges), False


def decide(rules: Sequence[FirewallRule], probe: Probe) -> Decision:
    """The first deciding rule, by priority, for ``probe``; the implied allow if none."""
    unknown: list[str] = []
    for rule in sorted(rules, key=lambda r: r.priority):
        if rule.unmodelled:
            unknown.append(rule.name)
            continue
        if not any(l4.admits(probe.protocol, probe.port) for l4 in rule.layer4):
            continue
        matched, by_name = _destination_match(rule, probe)
        if not matched:
            continue
        if rule.action not in _ACTIONS:
            unknown.append(rule.name)
            continue
        # goto_next leaves the policy for the implied allow (the module docstring).
        return Decision(rule.action != "deny", rule.name, by_name, tuple(unknown))
    return Decision(True, None, False, tuple(unknown))


def read_rules(rendered: Iterable[tuple[str, Mapping[str, Any]]]) -> list[FirewallRule]:
    """The egress rules among ``(name, inputs)`` pairs of rendered firewall policy rules."""
    return [r for name, inputs in rendered if (r := FirewallRule.from_inputs(name, inputs))]


TcpPorts = frozenset[int] | Literal["any"]


def tcp_ports(rule: FirewallRule, protocol: str = "tcp") -> TcpPorts | None:
    """The ``protocol`` (``tcp`` or ``udp``) ports a rule's layer 4 configs take: ``"any"``, a
    set, or ``None`` (none of that protocol)."""
    found: set[int] = set()
    for config in rule.layer4:
        if config.protocol not in ("all", protocol):
            continue
        if config.protocol == "all" or not config.ports:
            return "any"
        for span in config.ports:
            if span is None:
                return "any"
            found.update(range(span[0], span[1] + 1))
    return frozenset(found) if found else None


@dataclass(frozen=True)
class Allowed:
    """What one destination of an allow rule still admits, on TCP (or UDP: ``allowed``'s
    protocol), after every rule before it.

    Attributes:
        rule: the allow rule's resource name; ``None`` for the VPC's implied allow.
        ports: the ports it opens, ``"any"`` or a set (empty: nothing left).
        fqdn: the name it admits (an FQDN object: by the name's resolved addresses), or
        block: the address range it admits, less ``excluded``.
        excluded: blocks inside ``block`` that earlier denies take out.
    """

    rule: str | None
    ports: TcpPorts
    fqdn: str | None = None
    block: IPNetwork | None = None
    excluded: tuple[IPNetwork, ...] = ()


def _covers_ports(deny: TcpPorts, allow: TcpPorts) -> bool:
    return deny == "any" or (allow != "any" and allow <= deny)


def _ports_left(deny: TcpPorts, allow: TcpPorts) -> TcpPorts:
    """The allow's ports a deny on the same destinations leaves (``"any"`` less a set is kept
    whole: wider, never narrower, than the truth)."""
    if deny == "any":
        return frozenset()
    return allow if allow == "any" else allow - deny


def allowed(
    rules: Sequence[FirewallRule], name_families: frozenset[int], protocol: str = "tcp"
) -> list[Allowed]:
    """What every allow rule's destinations still admit on ``protocol`` (``tcp`` or ``udp``,
    ``tcp_ports``), by priority, then the implied allow's (``0.0.0.0/0`` and ``::/0``, every
    port); destinations with no port left are dropped.

    A deny before an allow takes out of a name the ports it covers when it lists the name, or
    when it denies the whole address space of every family in ``name_families`` (the families
    names resolve to and leave through). It takes out of a range the ports it covers when one
    of its ranges holds the whole range; a block inside the range is excluded when the deny
    covers every port of the allow. A deny on some ports of an allow on every port takes
    nothing out, so the result is never narrower than the policy. ``goto_next`` counts as an
    allow (it leaves the policy for the implied allow). A deny the model cannot read
    (``FirewallRule.unmodelled``) is skipped, which leaves the result wider, never narrower.

    Raises:
        ValueError: for a rule that may admit what the model cannot tell: an allow rule with
            fields it does not model (a source filter, address groups, target service
            accounts), or an action other than allow, deny and goto_next.
    """
    denies: list[tuple[FirewallRule, TcpPorts]] = []
    found: list[Allowed] = []
    for rule in sorted(rules, key=lambda r: r.priority):
        if rule.action not in _ACTIONS:
            raise ValueError(
                f"firewall policy rule {rule.resource}: action {rule.action!r} is none of "
                "allow, deny and goto_next, so what it admits is unknown"
            )
        if rule.action != "deny" and rule.unmodelled:
            raise ValueError(
                f"firewall policy rule {rule.resource}: allows with "
                f"{', '.join(rule.unmodelled)}, which the model does not read, so what it "
                "admits is unknown"
            )
        ports = tcp_ports(rule, protocol)
        if rule.unmodelled or ports is None:
            continue
        if rule.action == "deny":
            denies.append((rule, ports))
            continue
        found += [_for_name(rule.resource, ports, f, denies, name_families) for f in rule.fqdns]
        found += [_for_block(rule.resource, ports, b, denies) for b in rule.ranges]
    found += [_for_block(None, "any", b, denies) for b in _EVERYTHING.values()]
    return [a for a in found if a.ports]


def _for_name(
    rule: str,
    ports: TcpPorts,
    fqdn: str,
    denies: Sequence[tuple[FirewallRule, TcpPorts]],
    families: frozenset[int],
) -> Allowed:
    left = ports
    for deny, deny_ports in denies:
        whole = {r.version for r in deny.ranges if r.prefixlen == 0}
        if fqdn in deny.fqdns or families <= whole:
            left = _ports_left(deny_ports, left)
    return Allowed(rule, left, fqdn=fqdn)


def _for_block(
    rule: str | None,
    ports: TcpPorts,
    block: IPNetwork,
    denies: Sequence[tuple[FirewallRule, TcpPorts]],
) -> Allowed:
    left, holes = ports, set()
    for deny, deny_ports in denies:
        for shut in (r for r in deny.ranges if r.version == block.version):
            if block.subnet_of(shut):  # type: ignore[arg-type]
                left = _ports_left(deny_ports, left)
            elif shut.subnet_of(block) and _covers_ports(deny_ports, ports):  # type: ignore[arg-type]
                holes.add(shut)
    excluded = tuple(sorted(holes, key=lambda n: (int(n.network_address), n.prefixlen)))
    return Allowed(rule, left, block=block, excluded=excluded)
