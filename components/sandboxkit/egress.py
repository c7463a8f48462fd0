"""The egress allowlist model shared by every target and by the policy pack.

An allowlist entry is ``host[:port]``: an exact DNS name (``pypi.org``), a wildcard over the
subdomains of a name (``*.pythonhosted.org``: any name below it, not the name itself), or a
public IP literal (``203.0.113.7``, ``[2001:db8::1]:8443``). The port defaults to 443.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Literal

from sandboxkit.contract import EVERYTHING_ENTRIES, INTERNAL_SUFFIXES

# HTTPS is the only protocol most package indexes and APIs need; anything else is spelled out.
DEFAULT_PORT = 443

# RFC 1123 label: letters, digits and inner hyphens, 1 to 63 characters.
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
# RFC 1035: a name is at most 253 characters in text form.
_MAX_NAME = 253
_HOST_PORT_ONLY = "write host[:port] only, without a scheme, path or user name"

RuleKind = Literal["name", "wildcard", "ip"]


@dataclass(frozen=True, order=True)
class EgressRule:
    """One parsed allowlist entry.

    Attributes:
        host: lower-case name without a trailing dot; for ``wildcard`` the parent name
            (``pythonhosted.org`` for ``*.pythonhosted.org``); for ``ip`` the address text.
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

    def __str__(self) -> str:
        host = f"[{self.host}]" if self.kind == "ip" and ":" in self.host else self.pattern
        return f"{host}:{self.port}"


def _split_port(entry: str) -> tuple[str, int]:
    if entry.startswith("["):
        host, sep, rest = entry[1:].partition("]")
        if not sep:
            raise ValueError("an IPv6 literal opened with '[' must close with ']'")
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
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"port {port_text!r} is not a whole number from 1 to 65535")
    return host, int(port_text)


def _ip_rule(host: str, port: int) -> EgressRule | None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    # is_global is False for private, loopback, link-local (the metadata service
    # 169.254.169.254), shared (100.64.0.0/10), documentation and reserved ranges.
    if not address.is_global or address.is_multicast:
        raise ValueError(
            f"{host} is not a public address (private, loopback, link-local, metadata or "
            "reserved range); sandboxes may reach public hosts only"
        )
    return EgressRule(host=address.compressed, port=port, kind="ip")


def parse_rule(entry: str) -> EgressRule:
    """Parse one allowlist entry.

    Args:
        entry: ``host[:port]`` as written in ``sandboxkit:profile.egress.allow``.

    Returns:
        The ``EgressRule``.

    Raises:
        ValueError: for an entry that means everything (``*``, ``0.0.0.0/0``, ``::/0``), a CIDR
            block, a private, loopback, link-local or metadata address, a wildcard anywhere but
            the leftmost label or over a top-level domain, a malformed name or port. The message
            says what is expected.
    """
    text = entry.strip().lower()
    if text in EVERYTHING_ENTRIES or text.startswith("*:"):
        raise ValueError("this entry allows every destination; list the hosts sandboxes need")
    if "://" in text or "@" in text:
        raise ValueError(_HOST_PORT_ONLY)
    if "/" in text:
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ValueError(_HOST_PORT_ONLY) from None
        if network.prefixlen == 0:
            raise ValueError("this entry allows every destination; list the hosts sandboxes need")
        raise ValueError("CIDR blocks are not accepted; list each host, or a public IP address")
    host, port = _split_port(text)
    ip_rule = _ip_rule(host, port)
    if ip_rule is not None:
        return ip_rule
    host = host.removesuffix(".")
    kind: RuleKind = "name"
    if host.startswith("*."):
        host, kind = host[2:], "wildcard"
    labels = host.split(".")
    if len(host) > _MAX_NAME or not all(_LABEL.match(label) for label in labels):
        raise ValueError(
            "a DNS name of letters, digits and hyphens (a wildcard only as a leading '*.'), "
            "or a public IP address"
        )
    if any(f".{host}".endswith(suffix) for suffix in INTERNAL_SUFFIXES):
        raise ValueError(
            f"{host} is an internal or metadata name (.internal, .local, .svc, .goog ...); "
            "sandboxes may reach public hosts only"
        )
    if kind == "wildcard" and len(labels) < 2:
        raise ValueError(f"*.{host} covers a whole top-level domain; name the registrable domain")
    if labels[-1].isdigit():
        raise ValueError(
            f"{host} is a numeric name, which resolvers may read as an IP address; "
            "write a DNS name, or a public IP address in dotted form"
        )
    if kind == "name" and len(labels) < 2:
        raise ValueError(f"{host} is not a fully qualified name; write e.g. pypi.org")
    return EgressRule(host=host, port=port, kind=kind)
