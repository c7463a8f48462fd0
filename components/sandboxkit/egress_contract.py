"""The egress contract: what a sandbox may reach, written once for every target and the pack.

Entries of ``sandboxkit:profile.egress.allow`` (and a target's control-plane hosts, which go
through the same parser) are ``host[:port]``, port 443 by default:

- an exact DNS name (``pypi.org``) matches only itself;
- ``*.x`` matches every name below ``x`` at any depth (``a.x``, ``a.b.x``) and never ``x``;
- a public IP literal (``203.0.113.7``, ``[2001:4860::8888]:8443``) admits that address only
  (not a name that resolves to it, nor an IPv6 form of it);
- a port belongs to its entry only: ``github.com:80`` admits port 80 of ``github.com``, not its
  port 443, and no other name on port 80;
- a name entry (exact or wildcard) admits TLS by its SNI and HTTP by its Host header to that
  name on its port, nothing else, on every target: targets check names only in those two
  fields. A name entry on a port whose protocol carries neither before its first data
  (``NAMELESS_PORTS``: SSH on 22, PostgreSQL on 5432 ...) is refused: write the host's HTTPS
  endpoint, or an IP entry for its address.
- each connection is asked with its protocol (``ConnectionProtocol``): ``tls`` (a ClientHello
  carrying the SNI), ``http`` (a request carrying the Host), ``tcp`` (plain bytes, neither) or
  ``udp``. A name entry admits ``tls`` and ``http``, never plain ``tcp`` (no name to check);
  an IP entry admits any TCP (``tcp``, ``tls``, ``http``); no entry admits ``udp``.

Names compare case-insensitively, without a trailing dot, internationalised names in their
A-label form (``sandboxkit.dns_names.normalize_name``). A name is fully qualified (two labels or
more): a one-label name resolves through the search path (``kubernetes`` is the cluster's API),
and a name whose last label is a number is an address in another spelling (``127.1``,
``0xa9.0xfe.0xa9.0xfe``: the WHATWG URL Standard's "ends in a number" rule,
``sandboxkit.dns_names.numeric_name_refusal``).

What each mode admits (``EgressContract.admits``), for a destination host and port:

- ``deny``: nothing but the target's own control-plane hosts (exact names, their ports);
- ``allowlist``: the entries, and the control-plane hosts;
- ``open``: any address ``open`` mode does not exclude (``sandboxkit.addresses.open_admits``:
  public, never an IPv6 form of an IPv4 address) and any name that is not internal, on any
  port; the address a name resolves to is then judged as an address.

UDP (so QUIC and HTTP/3) is admitted in no mode: entries name TCP services, and a sandbox's DNS
goes to its target's own resolver, which ``may_resolve`` judges, never to a UDP destination of
its own.

Which names may resolve (``EgressContract.may_resolve``): in ``deny`` the control-plane names
only; in ``allowlist`` the listed names (exact, or below a wildcard) and the control-plane
names; in ``open`` any name.

Refused entries (``parse_rule``; each message names the reason and what to write instead):
entries meaning everywhere (``*``, ``0.0.0.0/0``, ``::/0``), CIDR blocks, URLs, addresses that
are not public or are IPv6 forms of IPv4 addresses (``sandboxkit.addresses``: IANA's
registries, never ``ipaddress.is_global``), public DNS resolvers and platform endpoints on
public-looking addresses, by address or name, on any port (``sandboxkit.dns_names.channel_refusal``:
a partial list by nature, backed by each target's resolution controls), internal names, names
of wildcard-DNS services,
wildcards over shared hosting and path-style object-storage names, and wildcards over public
suffixes (``sandboxkit.dns_names``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from sandboxkit.addresses import (
    IPAddress,
    address_of,
    embedded_ipv4,
    judge_address,
    open_admits,
)
from sandboxkit.boundary import EVERYTHING_ENTRIES
from sandboxkit.dns_names import (
    channel_refusal,
    internal_name_reason,
    is_below,
    name_refusal,
    normalize_name,
)

# HTTPS is the only protocol most package indexes and APIs need; anything else is spelled out.
DEFAULT_PORT = 443

# Ports whose protocol opens in the clear with no TLS SNI and no HTTP Host (TLS, where there is
# any, starts after an in-protocol upgrade: SMTP, IMAP, POP3, XMPP and LDAP STARTTLS,
# PostgreSQL's SSLRequest, MySQL's and SQL Server's handshakes), or runs over UDP only, so no
# target's name check can ever match them: a name entry there is a connection that never works.
# Each port is the one IANA's Service Name and Transport Protocol Port Number Registry assigns
# to the service (iana.org/assignments/service-names-port-numbers; service names as in
# Debian netbase's /etc/services: domain, ntp, sunrpc, epmap, nfs, rsync, svn, git, amqp,
# redis, epmd, xmpp-client, sip, socks, openvpn, x11, ircd, finger, nntp, snmp, bgp), or where
# the registry names another service there, the protocol's documented default: memcached
# 11211 (IANA memcache), MongoDB 27017 (IANA mongodb), MQTT 1883 (IANA mqtt), Cassandra's
# native_transport_port 9042 (cassandra.apache.org, cassandra.yaml), Oracle Net's listener
# 1521 (docs.oracle.com, Net Services Reference), Kafka 9092 (kafka.apache.org, listeners).
# A partial list by nature: a name entry on another plaintext port never connects either.
NAMELESS_PORTS: dict[int, str] = {
    # Remote shells, files and mail.
    21: "FTP",
    22: "SSH",
    23: "Telnet",
    25: "SMTP",
    110: "POP3",
    143: "IMAP",
    389: "LDAP",
    445: "SMB",
    587: "SMTP submission",
    873: "rsync",
    2049: "NFS",
    3389: "RDP",
    5900: "VNC",
    6000: "X11",
    # Names, time and routing.
    53: "DNS (the name asked travels in the query, never as an SNI or Host)",
    79: "Finger",
    123: "NTP (over UDP)",
    161: "SNMP",
    179: "BGP",
    # Remote procedure calls and tunnels.
    111: "ONC RPC (portmapper)",
    135: "DCE RPC (endpoint mapper)",
    1080: "SOCKS (its request carries the name, not an SNI or Host)",
    1194: "OpenVPN",
    4369: "Erlang's port mapper (epmd)",
    # Version control.
    3690: "Subversion (svn://)",
    9418: "the git protocol (git://)",
    # Databases, caches and message brokers.
    1433: "SQL Server (TDS)",
    1521: "Oracle Net (TNS)",
    1883: "MQTT",
    3306: "MySQL",
    5432: "PostgreSQL",
    5672: "AMQP",
    6379: "Redis (RESP)",
    9042: "Cassandra's native protocol (CQL)",
    9092: "Kafka",
    11211: "memcached",
    27017: "MongoDB's wire protocol",
    # Chat and calls.
    119: "NNTP",
    5060: "SIP",
    5222: "XMPP client",
    6667: "IRC",
}

_HOST_PORT_ONLY = "write host[:port] only, without a scheme, path or user name"
_EVERYWHERE = "this entry allows every destination; list the hosts sandboxes need"

RuleKind = Literal["name", "wildcard", "ip"]
ConnectionProtocol = Literal["tls", "http", "tcp", "udp"]
"""What a connection carries: ``tls`` (a ClientHello with an SNI), ``http`` (a request with a
Host header), ``tcp`` (TCP bytes that are neither, such as SSH's banner) or ``udp``."""
CONNECTION_PROTOCOLS: tuple[ConnectionProtocol, ...] = ("tls", "http", "tcp", "udp")
# What a name is checked in: a name entry admits these only.
NAMED_PROTOCOLS: frozenset[ConnectionProtocol] = frozenset({"tls", "http"})
# Every protocol over TCP: what an address (an IP entry, ``open``) admits.
TCP_PROTOCOLS: frozenset[ConnectionProtocol] = frozenset({"tls", "http", "tcp"})
EgressMode = Literal["deny", "allowlist", "open"]
EGRESS_MODES: tuple[EgressMode, ...] = ("deny", "allowlist", "open")


def destination_of(host: str) -> IPAddress | str | None:
    """``host`` as the contract reads a destination.

    Returns:
        The address for an IP literal (``[v6]`` brackets allowed); the name in normal form for
        a fully qualified name; ``None`` for anything else (a one-label name, a numeric name
        such as ``127.1`` or ``0x7f.1``, text that is not a name).
    """
    address = address_of(host.strip())
    if address is not None:
        return address
    try:
        name = normalize_name(host)
    except ValueError:
        return None
    labels = name.split(".")
    return None if len(labels) < 2 else name


@dataclass(frozen=True, order=True)
class EgressRule:
    """One parsed allowlist entry.

    Attributes:
        host: the name in normal form (lower case, no trailing dot, A-labels); for ``wildcard``
            the parent name (``pythonhosted.org`` for ``*.pythonhosted.org``); for ``ip`` the
            compressed address text.
        port: TCP port, 1 to 65535.
        kind: ``name``, ``wildcard`` or ``ip``.
    """

    host: str
    port: int
    kind: RuleKind

    @property
    def pattern(self) -> str:
        """The host as written in the profile: ``*.x`` for a wildcard, else the host."""
        return f"*.{self.host}" if self.kind == "wildcard" else self.host

    @property
    def cidr(self) -> str:
        """The single-address block of an ``ip`` entry: ``/32`` for IPv4, ``/128`` for IPv6.

        Raises:
            ValueError: for a ``name`` or ``wildcard`` entry.
        """
        if self.kind != "ip":
            raise ValueError(f"{self} is a {self.kind} entry, not an IP address")
        return f"{self.host}/{128 if ':' in self.host else 32}"

    def covers(self, destination: IPAddress | str) -> bool:
        """Whether the entry's host matches ``destination`` (from ``destination_of``), on any
        port: the exact name, a name strictly below a wildcard's parent, or the one address."""
        if self.kind == "ip":
            return not isinstance(destination, str) and destination == ipaddress.ip_address(
                self.host
            )
        if not isinstance(destination, str):
            return False
        return destination == self.host if self.kind == "name" else is_below(destination, self.host)

    @property
    def protocols(self) -> frozenset[ConnectionProtocol]:
        """What the entry admits on its port: ``tls`` and ``http`` for a name (targets check
        names only in the SNI and the Host), any TCP for an IP entry (``NAMED_PROTOCOLS``,
        ``TCP_PROTOCOLS``)."""
        return TCP_PROTOCOLS if self.kind == "ip" else NAMED_PROTOCOLS

    def __str__(self) -> str:
        host = f"[{self.host}]" if self.kind == "ip" and ":" in self.host else self.pattern
        return f"{host}:{self.port}"


_PORT = re.compile(r"[1-9][0-9]*", re.ASCII)


def _split_port(entry: str) -> tuple[str, int]:
    if entry.startswith("["):
        host, sep, rest = entry[1:].partition("]")
        if not sep:
            raise ValueError("an IPv6 literal opened with '[' must close with ']'")
        if ":" not in host:
            # RFC 3986 section 3.2.2: brackets hold an IP literal (IPv6) only.
            unwrapped = f"{host}{rest}"
            raise ValueError(f"brackets are for IPv6 literals only; write {unwrapped}")
        if not rest:
            return host, DEFAULT_PORT
        if not rest.startswith(":"):
            raise ValueError("only ':port' may follow a bracketed IPv6 literal")
        port_text = rest[1:]
    elif entry.count(":") == 1:
        host, _, port_text = entry.partition(":")
    else:
        # Zero colons: no port. Two or more: a bare IPv6 literal, which cannot carry a port.
        return entry, DEFAULT_PORT
    # ASCII digits without a leading zero: int() reads other scripts' digits (\u0664\u0664\u0663
    # as 443) and isdigit() admits superscripts int() refuses; neither is rewritten silently.
    if not _PORT.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise ValueError(
            f"port {port_text!r} is not a whole number from 1 to 65535 in ASCII digits without "
            "a leading zero (e.g. 443)"
        )
    return host, int(port_text)


def _ip_rule(address: IPAddress, port: int) -> EgressRule:
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        raise ValueError(f"write the address without its zone index (%{address.scope_id})")
    judgement = judge_address(address)
    if not judgement.public:
        carried = judgement.ipv4
        # An IPv6 form of a listed resolver is refused for what it carries, never rewritten.
        # Every form unwrapped, including an ISATAP identifier under a non-public prefix.
        spelled = embedded_ipv4(address)
        channel = next(filter(None, (channel_refusal(a.compressed) for a in spelled)), None)
        if channel:
            advice = channel
        elif judgement.embedding is not None and all(judge_address(a).public for a in carried):
            advice = (
                f"write the IPv4 address {carried[0]} instead"
                if len(carried) == 1
                else ("write the IPv4 address of the destination instead")
            )
        else:
            advice = "sandboxes may reach public hosts only"
        raise ValueError(f"{judgement.reason}; {advice}")
    channel = channel_refusal(address.compressed)
    if channel:
        raise ValueError(channel)
    return EgressRule(host=address.compressed, port=port, kind="ip")


def parse_rule(entry: str) -> EgressRule:
    """Parse one allowlist entry (module docstring: the syntax and the refusals).

    Args:
        entry: ``host[:port]`` as written in ``sandboxkit:profile.egress.allow`` or a target's
            control-plane settings.

    Returns:
        The ``EgressRule``, its host in normal form.

    Raises:
        ValueError: for an entry that means everything, a CIDR block or URL, an address that is
            not public or is an IPv6 form of an IPv4 address, a public DNS resolver or platform
            endpoint (address or name), a malformed name or port, a
            wildcard anywhere but the leftmost label or over a top-level domain, a name that is
            not fully qualified or ends in a number (decimal, hex, octal), an internal name, a
            wildcard-DNS service name, a wildcard over shared hosting or a public suffix, a
            path-style object-storage name, or a name on a port of ``NAMELESS_PORTS``. The
            message says why and what to write instead.
    """
    text = entry.strip().lower()
    if text in EVERYTHING_ENTRIES or text.startswith("*:"):
        raise ValueError(_EVERYWHERE)
    if "://" in text or "@" in text:
        raise ValueError(_HOST_PORT_ONLY)
    if "/" in text:
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ValueError(_HOST_PORT_ONLY) from None
        if network.prefixlen == 0:
            raise ValueError(_EVERYWHERE)
        raise ValueError("CIDR blocks are not accepted; list each host, or a public IP address")
    host, port = _split_port(text)
    address = address_of(host)
    if address is not None:
        return _ip_rule(address, port)
    kind: RuleKind = "name"
    if host.startswith("*."):
        host, kind = host[2:], "wildcard"
    host = normalize_name(host)
    labels = host.split(".")
    internal = internal_name_reason(host)
    if internal:
        raise ValueError(internal)
    if kind == "wildcard" and len(labels) < 2:
        raise ValueError(f"*.{host} covers a whole top-level domain; name the registrable domain")
    if kind == "name" and len(labels) < 2:
        raise ValueError(f"{host} is not a fully qualified name; write e.g. pypi.org")
    refusal = name_refusal(host, wildcard=kind == "wildcard") or _nameless_port(host, kind, port)
    if refusal:
        raise ValueError(refusal)
    return EgressRule(host=host, port=port, kind=kind)


def _nameless_port(host: str, kind: RuleKind, port: int) -> str | None:
    protocol = NAMELESS_PORTS.get(port)
    if protocol is None:
        return None
    pattern = f"*.{host}" if kind == "wildcard" else host
    git = {22: ", git over HTTPS instead of SSH", 9418: ", git over HTTPS"}.get(port, "")
    return (
        f"{pattern}:{port} is {protocol}, which carries no name a target can check: a name "
        "entry admits TLS by its SNI and HTTP by its Host header only, so this connection "
        f"would never work; write the host's HTTPS endpoint instead (e.g. {pattern}:443{git}), "
        f"or an IP entry for its public address (e.g. 203.0.113.7:{port})"
    )


def normalisation_notices(entries: object, key: str) -> list[str]:
    """Say how ``parse_rule`` rewrote each accepted entry, so nothing changes silently.

    Args:
        entries: the allow list as written in the stack (anything else gives no notice).
        key: the list's config key, e.g. ``sandboxkit:profile.egress.allow``.

    Returns:
        One sentence per entry written other than as the contract reads it (case, a trailing
        dot, spaces, an IPv6 literal not in compressed form, a non-ASCII name, whose A-label
        is suggested). Entries ``parse_rule`` refuses are left to its refusal, and a repeat
        once normalised to the profile's (``sandboxkit.profile.Egress``: exit 2).
    """
    if not isinstance(entries, list | tuple):
        return []
    notices: list[str] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, str):
            continue
        try:
            rule = parse_rule(entry)
            written, _ = _split_port(entry.strip())
        except ValueError:
            continue
        where = f"{key}[{index}] {entry!r}"
        host = rule.pattern
        if written == host and entry == entry.strip():
            continue
        if not entry.isascii():
            notices.append(
                f"{where} is read as {host!r}, its IDNA A-label (what DNS and the clouds' "
                f"rules match); write {host!r} so the stack says what is enforced"
            )
        else:
            changes = [
                text
                for text, changed in (
                    ("surrounding spaces dropped", entry != entry.strip()),
                    ("lower-cased", written != written.lower()),
                    ("trailing dot dropped", written.rstrip(".") != written),
                    (
                        "address written in compressed form",
                        rule.kind == "ip" and written.strip("[]").lower() != rule.host,
                    ),
                )
                if changed
            ]
            notices.append(f"{where} is read as {host!r} ({', '.join(changes)})")
    return notices


class EgressSection(Protocol):
    """What ``EgressContract.of`` reads: ``sandboxkit.profile.Egress`` has this shape."""

    @property
    def mode(self) -> EgressMode: ...

    @property
    def allow(self) -> tuple[EgressRule, ...]: ...


# The contract's JSON form (``EgressContract.to_config``), as SBX-NET-008's ``contracts`` config
# holds one per target and ``sandboxkit pack-config`` writes it: the profile's mode and entries
# and the target's control-plane entries, each as ``host:port``.
CONTRACT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "mode": {
            "enum": list(EGRESS_MODES),
        },
        "allow": {
            "type": "array",
            "items": {
                "type": "string",
            },
        },
        "controlPlane": {
            "type": "array",
            "items": {
                "type": "string",
            },
        },
    },
    "required": ["mode", "allow", "controlPlane"],
    "additionalProperties": False,
}


def _parsed(key: str, entry: str) -> EgressRule:
    """``parse_rule(entry)``, its refusal naming the contract's ``key`` and the entry."""
    try:
        return parse_rule(entry)
    except ValueError as refused:
        raise ValueError(f"{key} entry {entry!r}: {refused}") from None


@dataclass(frozen=True)
class EgressContract:
    """The reach one target owes a stack: the profile's egress plus the target's control plane.

    Attributes:
        mode: ``deny``, ``allowlist`` or ``open``.
        rules: the profile's entries; non-empty with ``allowlist``, empty otherwise.
        control_plane: the target's own control-plane hosts (e.g. aws-microvm's
            ``controlPlaneUrl`` and ``controlPlaneHosts``), exact names with their ports,
            admitted in every mode.

    Raises:
        ValueError: for an unknown mode, entries with a mode other than ``allowlist``, no
            entries with ``allowlist``, or a control-plane rule that is not an exact name.
    """

    mode: EgressMode
    rules: tuple[EgressRule, ...] = ()
    control_plane: tuple[EgressRule, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in EGRESS_MODES:
            raise ValueError(f"mode {self.mode!r} is not one of {', '.join(EGRESS_MODES)}")
        if (self.mode == "allowlist") != bool(self.rules):
            raise ValueError("entries with mode allowlist, and only with mode allowlist")
        wide = [str(rule) for rule in self.control_plane if rule.kind != "name"]
        if wide:
            raise ValueError(f"control-plane hosts are exact names, not {', '.join(wide)}")

    @classmethod
    def of(cls, egress: EgressSection, control_plane: Iterable[EgressRule] = ()) -> EgressContract:
        """The contract of a profile's ``egress`` section for a target with ``control_plane``."""
        return cls(egress.mode, tuple(egress.allow), tuple(control_plane))

    def to_config(self) -> dict[str, Any]:
        """The contract as its JSON document (``CONTRACT_SCHEMA``): ``{"mode", "allow",
        "controlPlane"}``, entries as ``host:port`` strings in the contract's order."""
        return {
            "mode": self.mode,
            "allow": [str(rule) for rule in self.rules],
            "controlPlane": [str(rule) for rule in self.control_plane],
        }

    @classmethod
    def from_config(cls, document: Mapping[str, Any]) -> EgressContract:
        """The contract a JSON document of ``CONTRACT_SCHEMA`` states (``to_config``'s
        inverse), each entry parsed again (``parse_rule``).

        Raises:
            ValueError: for keys other than exactly ``mode``, ``allow`` and ``controlPlane``,
                entries that are not lists of strings, an entry ``parse_rule`` refuses (the
                message names the key and the entry), or a contract ``EgressContract``
                refuses (its mode, entries with a mode other than ``allowlist``, a control-plane
                entry that is not an exact name).
        """
        keys = set(document)
        if keys != set(CONTRACT_SCHEMA["required"]):
            given = ", ".join(sorted(keys)) or "none"
            raise ValueError(f"a contract has the keys mode, allow and controlPlane, not {given}")
        entries = {}
        for key in ("allow", "controlPlane"):
            listed = document[key]
            listed_strings = isinstance(listed, Sequence) and not isinstance(listed, str)
            if not listed_strings or not all(isinstance(entry, str) for entry in listed):
                raise ValueError(f"a contract's {key} is a list of host:port strings")
            entries[key] = tuple(_parsed(key, entry) for entry in listed)
        return cls(document["mode"], entries["allow"], entries["controlPlane"])

    def _listed(self) -> tuple[EgressRule, ...]:
        return self.rules + self.control_plane

    def admits(self, host: str, port: int, protocol: ConnectionProtocol) -> bool:
        """Whether a sandbox may connect to ``host`` on ``port`` carrying ``protocol`` (module
        docstring).

        Args:
            host: a name, an IP address (``[v6]`` brackets allowed) or other text (never
                admitted: see ``destination_of``).
            port: 1 to 65535.
            protocol: ``tls``, ``http``, ``tcp`` (plain bytes: no SNI, no Host) or ``udp``
                (never admitted). A plain-TCP connection "to a name" goes to an address the
                name resolved to, without naming it: ``open`` admits it, a name entry never.

        Raises:
            ValueError: for a port outside 1 to 65535 or an unknown protocol.
        """
        if not 1 <= port <= 65535:
            raise ValueError(f"port {port} is not from 1 to 65535")
        if protocol not in CONNECTION_PROTOCOLS:
            known = ", ".join(CONNECTION_PROTOCOLS)
            raise ValueError(f"protocol {protocol!r} is not one of {known}")
        destination = destination_of(host)
        if destination is None or protocol not in TCP_PROTOCOLS:
            return False
        if self.mode == "open":
            if isinstance(destination, str):
                return internal_name_reason(destination) is None
            return open_admits(destination)
        return any(
            r.port == port and protocol in r.protocols and r.covers(destination)
            for r in self._listed()
        )

    def may_resolve(self, name: str) -> bool:
        """Whether a sandbox's query for ``name`` may be answered (module docstring); an IP
        literal or text that is not a fully qualified name never is."""
        destination = destination_of(name)
        if not isinstance(destination, str):
            return False
        return self.mode == "open" or any(r.covers(destination) for r in self._listed())
