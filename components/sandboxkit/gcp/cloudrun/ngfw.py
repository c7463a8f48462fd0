"""How a global network firewall policy decides an egress connection, read from its rules.

The readers' model of Cloud NGFW, written from Google's documentation and not from what the
kit renders (``CloudRunSandbox`` decides that; the two meet only in tests):

- Rules are evaluated from priority 0 (first) upwards; the first rule whose direction, layer 4
  and destination match decides with its action, ``allow`` or ``deny``; ``goto_next`` passes
  on; a ``disabled`` rule behaves "as if it did not exist" (pulumi-gcp 10.2
  ``compute.NetworkFirewallPolicyRule`` ``priority`` / ``action`` / ``disabled``, from the
  Compute API's FirewallPolicyRule). Egress rules apply to new connections whose source is the
  target (https://cloud.google.com/vpc/docs/firewall-policies-rule-details).
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
  rule's reach unknown: ``FirewallRule.unmodelled`` names them and ``decide`` reports them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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


def _port_range(text: Any) -> PortRange:
    first, _, last = str(text).partition("-")
    return int(first), int(last or first)


@dataclass(frozen=True)
class FirewallRule:
    """An egress rule as rendered.

    Attributes:
        name: the rule's name (``ruleName``, else the resource name).
        priority: 0 (first) to 2147483647.
        action: ``allow``, ``deny``, ``goto_next`` or ``apply_security_profile_group``.
        ranges: ``match.destIpRanges``.
        fqdns: ``match.destFqdns``, lower case without a trailing dot.
        layer4: ``match.layer4Configs``.
        unmodelled: the set fields the model does not know, e.g. ``match.destAddressGroups``.
    """

    name: str
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
        if inputs.get("direction") != "EGRESS" or inputs.get("disabled") is True:
            return None
        match = inputs.get("match") or {}
        unmodelled = [f"match.{key}" for key in sorted(match) if key not in _KNOWN_MATCH]
        unmodelled += [key for key in _TARGET_FIELDS if inputs.get(key)]
        return cls(
            name=str(inputs.get("ruleName") or name),
            priority=int(inputs["priority"]),
            action=str(inputs.get("action", "")),
            ranges=tuple(
                ipaddress.ip_network(r, strict=False) for r in match.get("destIpRanges") or ()
            ),
            fqdns=tuple(str(f).lower().removesuffix(".") for f in match.get("destFqdns") or ()),
            layer4=tuple(
                Layer4(
                    str(c.get("ipProtocol", "")).lower(),
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
        if not matched or rule.action == "goto_next":
            continue
        if rule.action not in ("allow", "deny"):
            unknown.append(rule.name)
            continue
        return Decision(rule.action == "allow", rule.name, by_name, tuple(unknown))
    return Decision(True, None, False, tuple(unknown))


def read_rules(rendered: Iterable[tuple[str, Mapping[str, Any]]]) -> list[FirewallRule]:
    """The egress rules among ``(name, inputs)`` pairs of rendered firewall policy rules."""
    return [r for name, inputs in rendered if (r := FirewallRule.from_inputs(name, inputs))]
