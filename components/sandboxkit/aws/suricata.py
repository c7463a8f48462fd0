"""Suricata-format stateful rules that admit exactly the kit's egress contract on Network Firewall.

A Network Firewall domain list (``RulesSourceList``) is broader than the contract: its generated
rules match any destination port, and a leading-dot target (``.x``) matches ``x`` itself
("``.example.com`` matches ``example.com`` and matches all subdomains", API reference
``RulesSourceList``; the generated rules in the developer guide's "Examples of stateful rules",
section "domain list rules", have destination port ``any`` and ``dotprefix``). The rules here
replace the domain list. Per name entry ``host:port``:

- a ``tls`` pass rule on that destination port whose ``tls.sni`` is the name, and
- an ``http`` pass rule on that destination port whose ``http.host`` is the name.

An exact name matches the whole buffer (``startswith`` + ``endswith``); ``*.x`` matches a buffer
ending ``.x`` (no ``dotprefix``), so every name below ``x`` at any depth and never ``x``. TLS SNI
matches ignore case (DNS names do); ``http.host`` is Suricata's normalised, lower-cased Host
(``nocase`` is a signature error there). Each IP-literal entry gets a TCP pass rule for exactly
that address and port, with no ``flow`` keyword: an IP-only rule, which Suricata
evaluates on the first packet of each direction, so the SYN passes the whole flow (Network Firewall
"Limitations and caveats for stateful rules"; its examples write ``pass tcp ... 22 (msg; sid)``).
With ``flow:to_server``, Suricata 7.0.10 passes only the client's packets and the replies meet
the default drop (measured; see tests/aws/test_suricata_rules.py). Name rules exclude the IP
entries' addresses, which the firewall policy exempts from resolved-IP validation. ``open`` is
one such rule for all TCP.

Every rule is a ``pass``: with the policy's ``STRICT_ORDER`` and ``aws:drop_established`` default,
the TCP handshake passes, and the first data packet (the ClientHello or the HTTP request) is
dropped unless a rule here matches it ("Drop established ... allows the layer 3 and 4 connection
establishment packets", developer guide, "Managing evaluation order for Suricata compatible rules",
strict evaluation order). Keywords: Suricata 7.0 rules documentation (``tls.sni``, ``http.host``,
``ssl_state``, ``content``/``nocase``/``startswith``/``endswith``, ``flow``); Network Firewall
"supports Suricata version 7.0".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sandboxkit.egress import EgressRule

# Suricata signature ids are unsigned 32-bit; the kit's start clear of common community sets.
FIRST_SID = 1_000_001
# Names reach rule text unquoted inside content:"..."; parse_rule already limits them to this.
_SAFE_HOST = re.compile(r"^[a-z0-9.-]+$")
_SAFE_ADDRESS = re.compile(r"^[0-9.]+$")
_TAIL = "rev:1;"


def _host(rule: EgressRule) -> str:
    if not _SAFE_HOST.fullmatch(rule.host):
        raise ValueError(f"{rule}: a DNS name of letters, digits, dots and hyphens")
    return rule.host


def _match(rule: EgressRule, *, ignore_case: bool) -> str:
    case = " nocase;" if ignore_case else ""
    if rule.kind == "wildcard":
        return f'content:".{_host(rule)}";{case} endswith;'
    return f'content:"{_host(rule)}";{case} startswith; endswith;'


def _destination(excluded: Sequence[EgressRule]) -> str:
    if not excluded:
        return "$EXTERNAL_NET"
    return "[$EXTERNAL_NET," + ",".join(f"!{rule.host}" for rule in excluded) + "]"


def name_rules(
    rules: Sequence[EgressRule], first_sid: int, excluded: Sequence[EgressRule] = ()
) -> list[str]:
    """Two pass rules per name or wildcard entry: TLS SNI, then HTTP Host, on its port only.

    Args:
        rules: ``name`` and ``wildcard`` entries, in the order to emit.
        first_sid: the first signature id; each rule takes the next one.
        excluded: IP-literal entries whose addresses no name rule may reach.

    Returns:
        Suricata rule lines, ``2 * len(rules)`` of them.

    Raises:
        ValueError: for an ``ip`` entry, or a host with characters outside ``[a-z0-9.-]``.
    """
    destination = _destination(excluded)
    lines: list[str] = []
    for rule in rules:
        if rule.kind == "ip":
            raise ValueError(f"{rule} is an IP entry; it takes an ip_rules line")
        sid = first_sid + len(lines)
        lines.append(
            f"pass tls $HOME_NET any -> {destination} {rule.port} "
            f'(msg:"sandboxkit allow {rule} tls.sni"; flow:to_server, established; '
            f"ssl_state:client_hello; tls.sni; {_match(rule, ignore_case=True)} "
            f"sid:{sid}; {_TAIL})"
        )
        lines.append(
            f"pass http $HOME_NET any -> {destination} {rule.port} "
            f'(msg:"sandboxkit allow {rule} http.host"; flow:to_server, established; '
            f"http.host; {_match(rule, ignore_case=False)} sid:{sid + 1}; {_TAIL})"
        )
    return lines


def ip_rules(rules: Sequence[EgressRule], first_sid: int) -> list[str]:
    """One TCP pass rule per IPv4-literal entry: exactly that address and port.

    Raises:
        ValueError: for a name, wildcard or IPv6 entry.
    """
    lines: list[str] = []
    for index, rule in enumerate(rules):
        if rule.kind != "ip" or not _SAFE_ADDRESS.fullmatch(rule.host):
            raise ValueError(f"{rule}: an IPv4 address entry")
        lines.append(
            f"pass tcp $HOME_NET any -> {rule.host} {rule.port} "
            f'(msg:"sandboxkit allow {rule}"; sid:{first_sid + index}; {_TAIL})'
        )
    return lines


def open_rule(sid: int) -> str:
    """The ``open`` mode's one rule: every TCP flow from the VPC to outside it."""
    return (
        'pass tcp $HOME_NET any -> $EXTERNAL_NET any (msg:"sandboxkit egress open"; '
        f"sid:{sid}; {_TAIL})"
    )


def egress_rules(mode: str, names: Sequence[EgressRule], ips: Sequence[EgressRule]) -> str:
    """The whole rules string of the kit's stateful rule group for ``mode``.

    Args:
        mode: ``deny``, ``allowlist`` or ``open``.
        names: name and wildcard entries (control-plane hosts included), sorted.
        ips: IPv4-literal entries, sorted (none in ``deny``).

    Returns:
        Newline-separated rules: IP rules, then name rules, signature ids from ``FIRST_SID``;
        for ``open``, one rule.

    Raises:
        ValueError: as ``name_rules`` and ``ip_rules``, or for another mode.
    """
    if mode == "open":
        return open_rule(FIRST_SID)
    if mode not in ("deny", "allowlist"):
        raise ValueError(f"egress mode {mode!r}: deny, allowlist or open")
    lines = ip_rules(ips, FIRST_SID)
    lines += name_rules(names, FIRST_SID + len(lines), excluded=ips)
    return "\n".join(lines)
