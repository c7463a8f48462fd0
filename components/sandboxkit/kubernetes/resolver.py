"""The kit's filtering resolver for sandbox pods: a dnsmasq configuration from the egress entries.

Sandbox pods send DNS only to this resolver (``dnsPolicy: None``); it forwards a query upstream
only for a name the egress contract lets resolve, and answers every other query NXDOMAIN itself,
so a name such as ``<data>.attacker.example`` never leaves the kit's boundary (issue 13, door 2).

Semantics of the rendered configuration (dnsmasq(8), ``--server`` and ``--address``: the most
specific domain wins; ``/example.com/`` matches the name and every name below it;
``/*.example.com/`` matches every name below it but not the name itself; ``#`` matches every
name):

- ``deny``: ``address=/#/``, nothing is forwarded.
- ``allowlist``: an exact name ``h`` forwards ``h`` only (``server=/h/...`` plus
  ``address=/*.h/``); a wildcard ``*.p`` forwards every name below ``p`` at any depth and never
  ``p`` itself (``server=/*.p/...``), unless ``p`` is listed too (``server=/p/...``); all other
  names get NXDOMAIN (``address=/#/``). An allowed name's CNAME chain resolves because the
  upstream recurses and returns the chain whole; dnsmasq matches the question name only.
- ``open``: every name is forwarded.

In every mode an answer carrying a non-public address is turned into NXDOMAIN
(``bogus-nxdomain`` for each range of ``boundary.RESOLVER_DROP_RANGES``, IPv4 and IPv6 alike,
also behind a CNAME), and so is one carrying an address of the kit's list of public DNS
resolvers and platform endpoints (``dns_names.channel_endpoints``: ``8.8.8.8``, Azure's
``168.63.129.16`` ...), which the contract refuses as entries; dnsmasq's own
``stop-dns-rebind`` list applies on top. A name list cannot stop DNS rebinding; this is where
the kit's boundary drops such answers.

Query types. A sandbox needs addresses: A and AAAA, and the CNAME records of a chain that
leads to them (``ANSWER_RECORD_TYPES``); those are the only records it gets. What each question
meets, measured with Debian's dnsmasq 2.90 (``tests/kubernetes/test_sandbox_resolver.py``):

- A, AAAA (and CNAME) of an allowed name: forwarded, answered with the address records;
- SRV and SOA of any name, ANY of a name with an underscore (``_ldap._tcp...``): answered
  NOERROR with no records by the resolver itself, never forwarded (``filterwin2k``);
- every other type of an allowed name (TXT, NULL, MX, HINFO ...): forwarded (dnsmasq 2.90 has
  no option that refuses a question by type), answered NOERROR with no records;
- ANY of an allowed name: forwarded, answered with its A, AAAA, CNAME and MX records;
- class CHAOS: ``servers.bind``, ``version.bind`` and the cache statistics NOTIMP, never
  forwarded (``no-ident``); a CHAOS question for an allowed name forwarded (no option refuses
  a class) and answered with no records; for any other name NXDOMAIN, never forwarded.

Residuals, since dnsmasq cannot do better: a question of another type or class for an allowed
name still reaches the upstream. It carries nothing out that an A question for the same name
does not (the data channel of a wildcard entry is the name itself), and nothing in but MX in
an ANY answer.

Record types. Every other record is removed from every answer
(``filter-rr``, ``STRIPPED_RECORD_TYPES``): TXT, NULL, MX, SRV, the private-use types and the
rest, whose data is a channel in from any name's authoritative server, and SVCB and HTTPS,
whose ``ipv4hint``/``ipv6hint`` carry addresses the range check does not read. A query of
such a type gets NOERROR with no answer. An ANY answer keeps A, AAAA, CNAME and MX: dnsmasq
2.90 filters ANY answers by its fixed ANY rule, not by the type list (measured: MX survives
there with or without ``filter-rr=ANY``), so an MX record's name is the one residual.
dnsmasq 2.90 has no option that refuses a question by type or class, so a question of another
type for an allowed name is still forwarded: it carries nothing an A question for the same
name does not. Class CHAOS: ``no-ident`` stops dnsmasq answering ``servers.bind`` (which names
its upstream), ``version.bind`` and the cache statistics (measured on Debian's dnsmasq 2.90:
NOTIMP, nothing forwarded), and a CHAOS question for any other name is a name question like
any other (refused unless the name is allowed, and then answered with no records).

Why dnsmasq and not Unbound (both from Debian 12, dnsmasq 2.90 and Unbound 1.17, measured on
loopback against a stand-in upstream): dnsmasq expresses "this name only" (``server=/h/`` with
``address=/*.h/``) and "below at any depth, never the apex" (``/*.p/``) directly, and
``tests/kubernetes/test_sandbox_resolver.py`` runs exactly that. Unbound's local zones and RPZ
match by closest enclosing zone: an RPZ passthrough for ``pypi.org`` under a ``*`` NXDOMAIN
trigger still let ``x.pypi.org`` and, with a ``*.pythonhosted.org`` passthrough, the apex
``pythonhosted.org`` resolve. Both can drop non-public answers from a configurable list (Unbound
``private-address``, dnsmasq ``bogus-nxdomain``). CoreDNS is not packaged in Debian.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from typing import Final, Literal

from sandboxkit.boundary import RESOLVER_DROP_RANGES
from sandboxkit.dns_names import channel_endpoints
from sandboxkit.egress_contract import EgressRule

# Standard DNS port: the port sandbox pods send to and the upstream resolvers listen on.
DNS_PORT: Final = 53
# kube-dns (CoreDNS on most clusters) keeps this label in kube-system on kubeadm, kind and GKE.
KUBE_DNS_NAMESPACE: Final = "kube-system"
KUBE_DNS_POD_LABELS: Final = {"k8s-app": "kube-dns"}
# Where the Deployment mounts the generated configuration (a ConfigMap key).
CONFIG_PATH: Final = "/etc/sandboxkit/dnsmasq.conf"
# What a sandbox resolves names for: addresses, and the CNAME chain that leads to them.
ANSWER_RECORD_TYPES: Final = ("A", "CNAME", "AAAA")
# Every other type an answer could carry, by number (dnsmasq reads numbers and names alike):
# IANA's "Resource Record (RR) TYPEs" registry (RFC 6895) assigns types in 1-127, 128
# (NXNAME), 249-262 and 32768-32769 and reserves 65280-65534 for private use; all of them
# but ANSWER_RECORD_TYPES and OPT (41, the EDNS pseudo-record every answer may carry). ANY
# (255) is among them: dnsmasq(8) --filter-rr, "ANY answers keep A, AAAA, MX and CNAME".
# SVCB (64) and HTTPS (65) are too: their address hints would pass bogus-nxdomain unread.
_KEPT_NUMBERS: Final = frozenset({1, 5, 28, 41})
STRIPPED_RECORD_TYPES: Final = tuple(
    str(number)
    for span in (range(1, 129), range(249, 263), range(32768, 32770), range(65280, 65535))
    for number in span
    if number not in _KEPT_NUMBERS
)
# dnsmasq reads a configuration line of at most 1,024 characters (measured with 2.90: a longer
# filter-rr line is "bad option"); this many types keep each line well under it.
_TYPES_PER_LINE: Final = 100
# A host as EgressRule keeps it: lower-case labels of letters, digits and inner hyphens. Checked
# again here because each one is written into a configuration line.
_HOST = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*$")

EgressMode = Literal["deny", "allowlist", "open"]


def _below(name: str, parent: str) -> bool:
    return name.endswith(f".{parent}")


def _checked_host(host: str) -> str:
    if not _HOST.match(host):
        raise ValueError(f"host {host!r}: a lower-case DNS name such as pypi.org")
    return host


def _upstream(address: str, port: int) -> str:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        raise ValueError(
            f"upstream {address!r}: an IP address (dnsmasq forwards to addresses, not names)"
        ) from None
    return f"{parsed.compressed}#{port}"


def forwarded_domains(rules: Iterable[EgressRule]) -> tuple[list[str], list[str]]:
    """The dnsmasq domains of an allowlist: ``(forwarded, refused)``.

    ``forwarded`` holds ``h`` (the name and everything below it) or ``*.p`` (below ``p`` only);
    ``refused`` holds ``*.h`` for each exact name whose subdomains must not resolve. IP entries
    need no name and are skipped; names already covered by a wildcard are left out.

    Raises:
        ValueError: for a host that is not a lower-case DNS name.
    """
    names = {_checked_host(r.host) for r in rules if r.kind == "name"}
    wild = {_checked_host(r.host) for r in rules if r.kind == "wildcard"}
    # A wildcard below another wildcard, or a name below one, adds nothing.
    wild = {p for p in wild if not any(_below(p, q) for q in wild)}
    names = {h for h in names if not any(_below(h, q) for q in wild)}
    forwarded = [p if p in names else f"*.{p}" for p in wild]
    forwarded += [h for h in names if h not in wild]
    refused = [f"*.{h}" for h in names if h not in wild]
    return sorted(forwarded), sorted(refused)


def resolver_config(
    mode: EgressMode,
    rules: Iterable[EgressRule],
    upstreams: Sequence[str],
    *,
    upstream_port: int = DNS_PORT,
    blocked_ranges: Iterable[str] = RESOLVER_DROP_RANGES,
) -> str:
    """The dnsmasq configuration text of the sandbox resolver.

    Args:
        mode: the profile's egress mode, ``deny``, ``allowlist`` or ``open``.
        rules: the profile's allowlist entries (read with ``allowlist`` only).
        upstreams: IP addresses of the cluster resolver the kit forwards to (kube-dns's
            Service address, or the link-local resolver of Cloud DNS for GKE or NodeLocal
            DNSCache); at least one unless ``mode`` is ``deny``.
        upstream_port: the upstream's DNS port (53 on every cluster resolver).
        blocked_ranges: CIDR blocks whose addresses must never be returned (default:
            ``boundary.RESOLVER_DROP_RANGES``, every non-public IPv4 and IPv6 block); the
            addresses of ``dns_names.channel_endpoints`` are dropped as well, always.

    Returns:
        The configuration, one option per line, in a fixed order (the same inputs give the same
        text). Listening options are not part of it: see ``resolver_args``.

    Raises:
        ValueError: for an unknown mode, no upstream where one is needed, an upstream that is
            not an IP address, a port outside 1-65535, a blocked range that is not a CIDR
            block, or a host that is not a lower-case DNS name.
    """
    if mode not in ("deny", "allowlist", "open"):
        raise ValueError(f"mode {mode!r}: deny, allowlist or open")
    if not 1 <= upstream_port <= 65535:
        raise ValueError(f"upstream_port {upstream_port}: from 1 to 65535")
    servers = [_upstream(address, upstream_port) for address in upstreams]
    if mode != "deny" and not servers:
        raise ValueError(f"upstreams: at least one address with mode {mode}")
    lines = [
        "# sandboxkit: the sandbox resolver (generated; see sandboxkit.kubernetes.resolver)",
        # Upstreams come from this file only, never from the pod's resolv.conf or hosts file.
        "no-resolv",
        "no-hosts",
        "domain-needed",
        "bogus-priv",
        "stop-dns-rebind",
        # Every question and its fate goes to the pod's log: the trail of attempted lookups.
        "log-queries",
        # No CHAOS-class answers of dnsmasq's own (servers.bind names the upstream).
        "no-ident",
        # SRV and SOA questions, and ANY for a name with an underscore, answered here with no
        # records and never forwarded (dnsmasq(8) --filterwin2k; measured with 2.90).
        "filterwin2k",
    ]
    lines += [
        f"filter-rr={','.join(STRIPPED_RECORD_TYPES[start : start + _TYPES_PER_LINE])}"
        for start in range(0, len(STRIPPED_RECORD_TYPES), _TYPES_PER_LINE)
    ]
    for block in blocked_ranges:
        network = ipaddress.ip_network(block, strict=True)
        lines.append(f"bogus-nxdomain={network.compressed}")
    lines += [
        f"bogus-nxdomain={endpoint.address.compressed}"
        for endpoint in channel_endpoints()
        if endpoint.address is not None
    ]
    if mode == "open":
        lines += [f"server={server}" for server in servers]
        return "\n".join(lines) + "\n"
    lines.append("address=/#/")
    if mode == "allowlist":
        forwarded, refused = forwarded_domains(rules)
        lines += [f"server=/{domain}/{server}" for domain in forwarded for server in servers]
        lines += [f"address=/{domain}/" for domain in refused]
    return "\n".join(lines) + "\n"


def resolver_args(
    listen_address: str, *, port: int = DNS_PORT, config_path: str = CONFIG_PATH
) -> list[str]:
    """dnsmasq's command line around ``resolver_config``.

    Args:
        listen_address: the one address to answer on: the pod's own (``$(POD_IP)``, which the
            kubelet expands from the downward API) or ``127.0.0.1`` in tests. Binding one
            address means dnsmasq answers clients on any subnet (its ``local-service`` default
            would refuse pods on other nodes) and nowhere else.
        port: the DNS port to listen on.
        config_path: where the configuration file is (the ConfigMap is mounted at
            ``CONFIG_PATH``).

    Raises:
        ValueError: for a port outside 1-65535.
    """
    if not 1 <= port <= 65535:
        raise ValueError(f"port {port}: from 1 to 65535")
    return [
        "--keep-in-foreground",
        f"--conf-file={config_path}",
        f"--listen-address={listen_address}",
        "--bind-interfaces",
        f"--port={port}",
        # No pid file (the root filesystem is read-only) and logs to stderr for the cluster's
        # log pipeline.
        "--pid-file=",
        "--log-facility=-",
    ]
