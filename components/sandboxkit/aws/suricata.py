"""Suricata-format stateful rules that admit exactly the kit's egress contract on Network Firewall.

A Network Firewall domain list (``RulesSourceList``) is broader than the contract: its generated
rules match any destination port, and a leading-dot target (``.x``) matches ``x`` itself
("``.example.com`` matches ``example.com`` and matches all subdomains", API reference
``RulesSourceList``; the generated rules in the developer guide's "Examples of stateful rules",
section "domain list rules", have destination port ``any`` and ``dotprefix``). The rules here
replace the domain list. Per name entry ``host:port``:

- a ``tls`` pass rule on that destination port whose ``tls.sni`` is the name, and
- an ``http`` pass rule on that destination port whose ``http.host`` is the name.

Each name rule also carries Network Firewall's ``aws_route_53_resolved_domain`` keyword with
the entry's name (``.x`` for ``*.x``, the domain-list format: ``x`` and below; the SNI or Host
content keeps the apex out): the rule passes only when the Route 53 Resolver resolved the
flow's destination address for that name. The policy's resolved-IP validation alone proves
only that the destination "was resolved for some domain" (API reference,
``Route53ResolvedIPValidation``), so without the keyword a listed SNI sent to the address of
another allowed name passed; the keyword binds the SNI and the Host to the name the address
was resolved for (developer guide, "Matching specific domains with resolved-domain rules";
the keyword's rules are inactive, ``ROUTE53_RESOLVED_IP_VALIDATION_MISSING``, in a policy
without resolved-IP validation, so ``open`` mode, which has none, writes them without it).

Ahead of every name rule, :func:`syn_data_rule` drops a TCP SYN that carries data (TCP Fast
Open, RFC 7413): ``aws:drop_established`` drops established flows only, so data on the SYN
itself reached any address on the name rules' ports (measured in Suricata 7, see
tests/aws/test_suricata_rules.py). IP entries and ``open`` are unaffected: their pass rules
come in an earlier group and admit the address and port whatever the first packet holds.

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
from dataclasses import dataclass
from typing import Literal

from sandboxkit.addresses import exclusion_blocks
from sandboxkit.egress_contract import EgressRule

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


def _resolved_domain(rule: EgressRule) -> str:
    target = f".{_host(rule)}" if rule.kind == "wildcard" else _host(rule)
    return f'aws_route_53_resolved_domain:"{target}";'


def syn_data_rule(sid: int) -> str:
    """The drop rule for a SYN that carries data (module docstring): ``flags:S,12`` is SYN set
    and no other flag but the ECN bits, ``dsize:>0`` a payload (Suricata 7 "TCP keywords",
    "Payload keywords")."""
    return (
        'drop tcp $HOME_NET any -> any any (msg:"sandboxkit drop SYN with data (TCP Fast '
        f'Open)"; flags:S,12; dsize:>0; sid:{sid}; {_TAIL})'
    )


def _destination(excluded: Sequence[EgressRule]) -> str:
    if not excluded:
        return "$EXTERNAL_NET"
    return "[$EXTERNAL_NET," + ",".join(f"!{rule.host}" for rule in excluded) + "]"


def name_rules(
    rules: Sequence[EgressRule],
    first_sid: int,
    excluded: Sequence[EgressRule] = (),
    *,
    resolved_domain: bool = True,
) -> list[str]:
    """Two pass rules per name or wildcard entry: TLS SNI, then HTTP Host, on its port only.

    Args:
        rules: ``name`` and ``wildcard`` entries, in the order to emit.
        first_sid: the first signature id; each rule takes the next one.
        excluded: IP-literal entries whose addresses no name rule may reach.
        resolved_domain: whether each rule requires the destination to be resolved for its
            name (``aws_route_53_resolved_domain``); ``False`` only for a policy without
            resolved-IP validation, where the keyword's rules are inactive.

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
        bound = f"{_resolved_domain(rule)} " if resolved_domain else ""
        lines.append(
            f"pass tls $HOME_NET any -> {destination} {rule.port} "
            f'(msg:"sandboxkit allow {rule} tls.sni"; flow:to_server, established; '
            f"ssl_state:client_hello; tls.sni; {_match(rule, ignore_case=True)} "
            f"{bound}sid:{sid}; {_TAIL})"
        )
        lines.append(
            f"pass http $HOME_NET any -> {destination} {rule.port} "
            f'(msg:"sandboxkit allow {rule} http.host"; flow:to_server, established; '
            f"http.host; {_match(rule, ignore_case=False)} {bound}sid:{sid + 1}; {_TAIL})"
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
    """The ``open`` mode's one rule: every TCP flow from the VPC to a public IPv4 address (the
    egress contract's ``open``: ``addresses.exclusion_blocks(4)`` are left out)."""
    shut = ",".join(f"!{block}" for block in exclusion_blocks(4))
    return (
        f'pass tcp $HOME_NET any -> [$EXTERNAL_NET,{shut}] any (msg:"sandboxkit egress open"; '
        f"sid:{sid}; {_TAIL})"
    )


# --- reading rules back (the egress reader and the policy pack) ---------------------------------

NameScope = Literal["exact", "below", "exact-and-below", "any"]
_HEADER = re.compile(
    r"^(?P<action>\w+)\s+(?P<proto>[\w-]+)\s+(?P<src>\[[^\]]*\]|\S+)\s+(?P<sport>\S+)\s+"
    r"(?P<direction>->|<>)\s+(?P<dst>\[[^\]]*\]|\S+)\s+(?P<dport>\[[^\]]*\]|\S+)\s+"
    r"\((?P<options>.*)\)\s*$"
)
_OPTION = re.compile(r'\s*([\w.]+)\s*(?::\s*((?:"(?:[^"\\]|\\.)*"|[^;])*))?;')
# Options that change nothing about which flows a pass rule takes, given its buffer and content.
_NEUTRAL = frozenset({"msg", "sid", "rev", "priority", "flow", "ssl_state", "nocase", "metadata"})
# Narrows a pass rule to destinations resolved for a name; read into PassRule.resolved_domain.
_RESOLVED_DOMAIN = "aws_route_53_resolved_domain"
_BUFFERS = frozenset({"tls.sni", "http.host"})


@dataclass(frozen=True)
class PassRule:
    """What one Suricata ``pass`` rule admits, as far as the kit reads rules.

    Attributes:
        protocol: the header protocol (``tls``, ``http``, ``tcp``, ``ip`` ...).
        destination: the destination addresses as written (``$EXTERNAL_NET``, an address,
            or a ``[...]`` group).
        excluded: addresses a ``[$EXTERNAL_NET,!a,!b]`` destination takes out.
        port: the destination port, or ``None`` for ``any`` (and for lists and ranges, read as
            any port: wider, never narrower).
        buffer: ``tls.sni`` or ``http.host`` when the rule matches a name, else ``None``.
        name: the name matched (without a leading dot), ``None`` for scope ``any``.
        scope: ``exact`` (the whole buffer), ``below`` (``.x`` with ``endswith``: names below
            x), ``exact-and-below`` (``dotprefix`` then ``.x``: x and below, as Network
            Firewall's domain lists generate), ``any`` (no name condition the kit reads: a
            missing content, a suffix without a dot, ``pcre`` ...).
        sid: the signature id.
        resolved_domain: the ``aws_route_53_resolved_domain`` value (``pypi.org``,
            ``.pythonhosted.org``), or ``None`` when the rule does not require one.
    """

    protocol: str
    destination: str
    excluded: tuple[str, ...]
    port: int | None
    buffer: str | None
    name: str | None
    scope: NameScope
    sid: int | None
    resolved_domain: str | None = None


def _options(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _OPTION.match(text, position)
        if match is None:
            break
        found.append((match.group(1).lower(), (match.group(2) or "").strip()))
        position = match.end()
    return found


def _name_match(options: list[tuple[str, str]]) -> tuple[str | None, str | None, NameScope]:
    buffer: str | None = None
    content: str | None = None
    flags: set[str] = set()
    for keyword, value in options:
        if keyword in _BUFFERS:
            buffer = keyword
        elif keyword == "content" and content is None and buffer is not None:
            content = value.strip('"').lower()
        elif keyword in ("startswith", "endswith", "dotprefix"):
            flags.add(keyword)
        elif keyword not in _NEUTRAL and keyword != _RESOLVED_DOMAIN:
            return buffer, None, "any"  # pcre, bsize, a second content ...: not read, so any
    if buffer is None or content is None or "endswith" not in flags:
        return buffer, None, "any"
    if "dotprefix" in flags and content.startswith("."):
        return buffer, content[1:], "exact-and-below"
    if "startswith" in flags and not content.startswith("."):
        return buffer, content, "exact"
    if content.startswith(".") and "startswith" not in flags:
        return buffer, content[1:], "below"
    return buffer, None, "any"


def read_rules(text: str) -> list[PassRule]:
    """The ``pass`` rules of a Suricata rules string, read for what they admit.

    Comment and blank lines are skipped; rules with another action are left out (the kit's
    groups hold only ``pass`` rules; ``drop``/``reject`` only narrow). A rule the kit cannot
    read is returned with scope ``any`` and port ``None``, so a reader errs wide.

    Raises:
        ValueError: for a non-comment line that is not a Suricata rule.
    """
    rules: list[PassRule] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        header = _HEADER.match(line)
        if header is None:
            raise ValueError(f"not a Suricata rule: {line[:80]}")
        if header["action"] != "pass":
            continue
        options = _options(header["options"])
        buffer, name, scope = _name_match(options)
        destination = header["dst"]
        excluded = tuple(
            part.strip()[1:]
            for part in destination.strip("[]").split(",")
            if destination.startswith("[") and part.strip().startswith("!")
        )
        port = int(header["dport"]) if header["dport"].isdigit() else None
        sid = next((int(v) for k, v in options if k == "sid" and v.isdigit()), None)
        resolved = next((v.strip('"').lower() for k, v in options if k == _RESOLVED_DOMAIN), None)
        rules.append(
            PassRule(
                header["proto"].lower(),
                destination,
                excluded,
                port,
                buffer,
                name,
                scope,
                sid,
                resolved,
            )
        )
    return rules
