"""What a target's rendered resources let a sandbox reach, in terms the egress contract checks.

A per-target reader takes the target's rendered resources, never the profile, and returns an
``EffectiveEgress``: the ``Grant``s for connections and for name resolution, each saying what it
matches, on which ports, how the platform matches it (``Enforcement``) and whether that is the
kit's own tested code or documented platform behaviour (``Basis``, with the citation). The same
reader runs on the offline render and inside the policy pack, because it reads
``ResourceView``s: a type token, a name and plain JSON-like props.

``compare`` checks an ``EffectiveEgress`` against the ``EgressContract`` on ``Probe``s derived
from a stack's entries (``derive_probes``), each a host, a port and the protocol it carries
(``tls``, ``http``, plain ``tcp``, ``udp``: a grant matched by name admits only what carries the
name), and returns each difference marked wider or narrower; ``inexpressible`` flags,
without a profile, grants no contract can express.

Core layer: this module reads the egress model and its tables only; no provider SDK, no render.

Example (a reader's result, checked)::

    effective = EffectiveEgress(
        "aws-microvm",
        connect=(Grant("pythonhosted.org", "exact-and-below", frozenset({443}), "claimed-name",
                       "platform-doc", "Network Firewall RulesSourceList: '.x' matches x too"),),
        resolve=(),
    )
    contract = EgressContract("allowlist", (parse_rule("*.pythonhosted.org"),))
    compare(effective, contract, derive_probes(contract.rules))  # the apex: wider
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from ipaddress import ip_network
from typing import Any, Final, Literal, TypeAlias

from sandboxkit.addresses import IPAddress, IPNetwork, exclusion_blocks, public_address_in
from sandboxkit.dns_names import is_at_or_below, is_below, registrable_domain
from sandboxkit.egress_contract import (
    CONNECTION_PROTOCOLS,
    NAMED_PROTOCOLS,
    TCP_PROTOCOLS,
    ConnectionProtocol,
    EgressContract,
    EgressRule,
    destination_of,
)

JSONValue: TypeAlias = "str | int | float | bool | list[JSONValue] | dict[str, JSONValue] | None"


def plain(value: object) -> JSONValue:
    """``value`` as plain JSON-like data: mappings become dicts (keys as text), other
    sequences but text become lists, and integral floats become ints (the offline render's
    wire form carries every number as a float: port 443 arrives as ``443.0``).

    Works on the policy pack's input proxies (``Mapping`` / ``Sequence``) and on rendered
    inputs alike. Reading an input that is unknown during a preview raises inside the proxy.

    Raises:
        TypeError: for a value that is none of text, number, bool, None, mapping or sequence.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(key): plain(value[key]) for key in value}
    if isinstance(value, Sequence):
        return [plain(item) for item in value]
    raise TypeError(f"{type(value).__name__} is not JSON-like")


def as_list(value: object) -> list[Any]:
    """``value`` when it is a list (a ``plain`` value), else an empty list: a reader reads a
    missing or misshapen field as absent."""
    return value if isinstance(value, list) else []


def as_dict(value: object) -> dict[str, Any]:
    """``value`` when it is a dict (a ``plain`` value), else an empty dict (as ``as_list``)."""
    return value if isinstance(value, dict) else {}


def as_dicts(value: object) -> list[dict[str, Any]]:
    """The dicts of ``value`` when it is a list, else an empty list (as ``as_list``)."""
    return [item for item in as_list(value) if isinstance(item, dict)]


@dataclass(frozen=True)
class ResourceView:
    """One rendered resource as readers see it.

    Attributes:
        type: the Pulumi type token (``kubernetes:networking.k8s.io/v1:NetworkPolicy``).
        name: the logical name.
        props: the inputs, camelCase keys, plain JSON-like values (``plain``).
    """

    type: str
    name: str
    props: Mapping[str, JSONValue] = field(hash=False)

    @classmethod
    def of(cls, type_token: str, name: str, props: Mapping[str, object]) -> ResourceView:
        """A view of inputs given as the policy pack's proxies or as a rendered resource's
        ``inputs`` (``plain``)."""
        converted = plain(props)
        assert isinstance(converted, dict)
        return cls(type_token, name, converted)

    def at(self, path: str) -> JSONValue:
        """The value at a dotted path (``spec.egress``; a list index as a number,
        ``spec.egress.0.to``), or ``None`` where the path does not exist."""
        current: JSONValue = dict(self.props)
        for part in path.split("."):
            if isinstance(current, dict):
                current = current.get(part)
            elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
                current = current[int(part)]
            else:
                return None
        return current


Scope = Literal["exact", "below", "one-label", "exact-and-below", "any"]
"""What a name grant matches: ``exact`` the name; ``below`` every name below it at any depth,
not the name; ``one-label`` names exactly one label below (Cilium ``*.x``); ``exact-and-below``
the name and every name below (a Network Firewall ``.x``); ``any`` every name (host ``*``).
Address grants are ``exact``: every address of the block."""

Enforcement = Literal["name-l7", "resolved-address", "claimed-name", "address", "query-name"]
"""How a platform matches a grant."""

ENFORCEMENT_TEXT: Final[Mapping[Enforcement, str]] = {
    "name-l7": "name at L7 (SNI/Host checked against the destination)",
    "resolved-address": "resolved address only",
    "claimed-name": "claimed name only",
    "address": "address",
    "query-name": "queried name (DNS)",
}

Basis = Literal["kit-code", "platform-doc"]
"""``kit-code``: the kit's own code decides and its tests run it here; ``platform-doc``:
documented platform behaviour, not testable here (``Grant.source`` cites the document)."""

Ports = frozenset[int] | Literal["any"]

# What a connection grant admits when its reader says nothing narrower: a grant matched by a name
# (SNI or Host) admits the protocols that carry one; a grant matched by address, any TCP.
DEFAULT_PROTOCOLS: Final[Mapping[Enforcement, frozenset[ConnectionProtocol]]] = {
    "name-l7": NAMED_PROTOCOLS,
    "claimed-name": NAMED_PROTOCOLS,
    "resolved-address": TCP_PROTOCOLS,
    "address": TCP_PROTOCOLS,
    "query-name": frozenset(),
}

_ANY_NAME = "*"


def port_text(ports: Iterable[int]) -> str:
    """TCP ports in order, each run of consecutive ports as ``first-last``, the rest joined by
    ``/``: ``{53, 80, 443, 444, 445}`` is ``53/80/443-445``."""
    runs: list[list[int]] = []
    for port in sorted(ports):
        if runs and port == runs[-1][-1] + 1:
            runs[-1][-1] = port
        else:
            runs.append([port, port])
    return "/".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


@dataclass(frozen=True)
class Grant:
    """One thing a target lets a sandbox reach (or resolve).

    Attributes:
        host: a DNS name (any form; kept in normal form) for a name grant, ``*`` with scope
            ``any``; an address or CIDR block (kept as a CIDR) for an address grant.
        scope: what a name grant matches (``Scope``); ``exact`` for an address grant.
        ports: TCP ports, or ``"any"``; resolution grants use ``"any"``.
        enforced: how the platform matches it; ``address`` for address grants (and only
            them); ``query-name`` for resolution grants (and only them).
        basis: ``kit-code`` or ``platform-doc``.
        source: the citation: a test module for kit code, the document (URL or API reference
            field) for platform behaviour.
        resource: the resource the reader read it from (``type name``), for explanations.
        excluded: CIDR blocks an address grant takes out (NetworkPolicy ``except``).
        protocols: what a connection grant admits (``ConnectionProtocol``); empty (the
            default) means ``DEFAULT_PROTOCOLS`` of its enforcement: ``tls`` and ``http`` for
            a grant matched by name (``name-l7``, ``claimed-name``), any TCP (``tcp``, ``tls``,
            ``http``) for one matched by address (``address``, ``resolved-address``: a
            plain-TCP connection to the name's addresses passes too). A reader narrows it
            where the platform checks one protocol only (Cilium ``serverNames``: ``tls``).
            Resolution grants have none.

    Raises:
        ValueError: for a host that is neither a name nor an address/CIDR for its enforcement,
            a scope an address grant cannot have, ``*`` without scope ``any``, an empty or
            out-of-range port set, an empty source, exclusions on a name grant or outside
            the block, protocols on a resolution grant, or a grant matched by name admitting
            a protocol that carries no name (``tcp``, ``udp``).
    """

    host: str
    scope: Scope
    ports: Ports
    enforced: Enforcement
    basis: Basis
    source: str
    resource: str = ""
    excluded: tuple[str, ...] = ()
    protocols: frozenset[ConnectionProtocol] = frozenset()

    def __post_init__(self) -> None:
        if not self.source:
            raise ValueError(f"grant {self.host}: a source citation is required")
        self._normalize_protocols()
        if self.ports != "any":
            if not self.ports or not all(1 <= p <= 65535 for p in self.ports):
                raise ValueError(f"grant {self.host}: ports are 'any' or a set of 1 to 65535")
            object.__setattr__(self, "ports", frozenset(self.ports))
        if self.enforced == "address":
            self._normalize_network()
        else:
            self._normalize_name()

    def _normalize_protocols(self) -> None:
        default = DEFAULT_PROTOCOLS[self.enforced]
        protocols = frozenset(self.protocols) or default
        unknown = sorted(protocols - set(CONNECTION_PROTOCOLS))
        if unknown:
            raise ValueError(f"grant {self.host}: protocols {unknown} are not protocols")
        if self.enforced == "query-name" and self.protocols:
            raise ValueError(f"resolution grant {self.host}: a query has no protocols")
        if self.enforced in ("name-l7", "claimed-name") and not protocols <= NAMED_PROTOCOLS:
            raise ValueError(
                f"grant {self.host}: matched by name, it admits tls or http only (plain tcp "
                "and udp carry no name to match)"
            )
        object.__setattr__(self, "protocols", protocols)

    def _normalize_network(self) -> None:
        try:
            block = ip_network(self.host.strip("[]"))
            excluded = [ip_network(text) for text in self.excluded]
        except ValueError as exc:
            raise ValueError(f"address grant {self.host}: {exc}") from None
        if self.scope != "exact":
            raise ValueError(f"address grant {self.host}: scope is exact, not {self.scope}")
        outside = [str(n) for n in excluded if n.version != block.version or not n.subnet_of(block)]  # type: ignore[arg-type]
        if outside:
            raise ValueError(f"address grant {block}: exclusions {outside} are not inside it")
        object.__setattr__(self, "host", str(block))
        object.__setattr__(self, "excluded", tuple(str(n) for n in excluded))

    def _normalize_name(self) -> None:
        if self.excluded:
            raise ValueError(f"name grant {self.host}: only address grants exclude blocks")
        if (self.host == _ANY_NAME) != (self.scope == "any"):
            raise ValueError(f"name grant {self.host}: host '*' goes with scope any, only")
        if self.scope == "any":
            return
        name = destination_of(self.host)
        if not isinstance(name, str):
            raise ValueError(f"name grant {self.host}: not a fully qualified DNS name")
        object.__setattr__(self, "host", name)

    @property
    def network(self) -> IPNetwork | None:
        """The block of an address grant (``None`` for a name grant)."""
        return _network(self.host) if self.enforced == "address" else None

    def covers_port(self, port: int) -> bool:
        """Whether the grant opens TCP ``port``."""
        return self.ports == "any" or port in self.ports

    def covers_protocol(self, protocol: ConnectionProtocol) -> bool:
        """Whether the grant admits connections carrying ``protocol``."""
        return protocol in self.protocols

    def matches_name(self, name: str) -> bool:
        """Whether a name grant matches ``name`` (normal form) by its scope."""
        if self.network is not None:
            return False
        if self.scope == "any":
            return True
        if self.scope == "exact":
            return name == self.host
        if self.scope == "below":
            return is_below(name, self.host)
        if self.scope == "one-label":
            return is_below(name, self.host) and "." not in name[: -len(self.host) - 1]
        return is_at_or_below(name, self.host)

    def matches_address(self, address: IPAddress) -> bool:
        """Whether an address grant's block, less its exclusions, holds ``address``."""
        block = self.network
        return (
            block is not None
            and address in block
            and not any(address in _network(text) for text in self.excluded)
        )

    def opens_every_open_address(self) -> bool:
        """Whether an address grant holds every address ``open`` mode admits in its family
        (its block is ``/0`` and it excludes nothing outside ``exclusion_blocks``): then any
        name reaches whatever public address it resolves to."""
        block = self.network
        if block is None or block.prefixlen != 0:
            return False
        shut = exclusion_blocks(block.version)
        return all(
            any(_network(text).subnet_of(s) for s in shut)  # type: ignore[arg-type]
            for text in self.excluded
        )

    def __str__(self) -> str:
        ports = "every port" if self.ports == "any" else port_text(self.ports)
        what = f"{self.host} ({self.scope})" if self.network is None else self.host
        if self.excluded:
            what += f" except {', '.join(self.excluded)}"
        if self.protocols != DEFAULT_PROTOCOLS[self.enforced]:
            ports += f" ({protocol_text(self.protocols)} only)"
        return f"{what} on {ports}, {ENFORCEMENT_TEXT[self.enforced]} [{self.basis}: {self.source}]"


def protocol_text(protocols: Iterable[ConnectionProtocol]) -> str:
    """Protocols in ``CONNECTION_PROTOCOLS`` order joined by ``/``: ``tls/http``."""
    given = set(protocols)
    return "/".join(p for p in CONNECTION_PROTOCOLS if p in given)


def udp_grants(grants: Iterable[Grant]) -> list[Grant]:
    """``grants`` as grants of UDP only (protocols ``{udp}``): a reader reads a rule's UDP
    ports (so QUIC, HTTP/3) the way it reads its TCP ports, into these."""
    return [replace(grant, protocols=frozenset({"udp"})) for grant in grants]


def merge_protocols(grants: Iterable[Grant]) -> tuple[Grant, ...]:
    """``grants`` with those alike but for their protocols as one grant admitting all of them
    (a name's TLS SNI rule and its HTTP Host rule: one grant for ``tls/http``), first place
    kept; duplicates once."""
    merged: dict[Grant, frozenset[ConnectionProtocol]] = {}
    for grant in grants:
        key = replace(grant, protocols=DEFAULT_PROTOCOLS[grant.enforced])
        merged[key] = merged.get(key, frozenset()) | grant.protocols
    return tuple(replace(key, protocols=protocols) for key, protocols in merged.items())


@lru_cache(maxsize=1024)
def _network(text: str) -> IPNetwork:
    """``ip_network(text)`` for a grant's normalized block, parsed once: a comparison asks the
    same few blocks (``open`` mode: ``0.0.0.0/0`` less its exclusions) about every probe."""
    return ip_network(text)


@dataclass(frozen=True)
class Verdict:
    """The answer to one question about an ``EffectiveEgress``.

    Attributes:
        admitted: whether it is admitted (``bool(verdict)`` too).
        grants: the grants that admit it, in the order the reader listed them (empty when not
            admitted).
    """

    admitted: bool
    grants: tuple[Grant, ...] = ()

    def __bool__(self) -> bool:
        return self.admitted

    @property
    def enforced(self) -> tuple[str, ...]:
        """How the admitting grants are matched, distinct, in ``ENFORCEMENT_TEXT`` words."""
        return tuple(dict.fromkeys(ENFORCEMENT_TEXT[g.enforced] for g in self.grants))


@dataclass(frozen=True)
class EffectiveEgress:
    """What a target's resources let its sandboxes reach, as a reader computed it.

    Attributes:
        target: the target name (``aws-microvm``).
        connect: grants for TCP connections.
        resolve: grants for name resolution: name grants, ports ``"any"``, enforced
            ``query-name``.

    Raises:
        ValueError: for a resolution grant that is not such a name grant, or a connection
            grant enforced ``query-name``.
    """

    target: str
    connect: tuple[Grant, ...]
    resolve: tuple[Grant, ...]

    def __post_init__(self) -> None:
        for grant in self.resolve:
            if grant.enforced != "query-name" or grant.ports != "any":
                raise ValueError(f"resolution grant {grant}: query-name, on any port")
        for grant in self.connect:
            if grant.enforced == "query-name":
                raise ValueError(f"connection grant {grant}: query-name is for resolution")

    def admits(self, host: str, port: int, protocol: ConnectionProtocol) -> Verdict:
        """Whether a sandbox may connect to ``host`` on ``port`` carrying ``protocol``.

        An address is admitted by an address grant holding it; a name by a name grant
        matching it, or by an address grant that holds every address ``open`` admits (the
        name reaches whatever public address it resolves to); in each case only by grants
        admitting ``protocol`` (``Grant.protocols``: a plain-TCP connection to a name passes
        a grant matched by resolved address, never one matched by SNI or Host). Text that is
        neither an address nor a fully qualified name is never admitted.
        """
        destination = destination_of(host)
        if destination is None:
            return Verdict(False)
        found = tuple(
            g
            for g in self.connect
            if g.covers_port(port) and g.covers_protocol(protocol) and _admits(g, destination)
        )
        return Verdict(bool(found), found)

    def resolves(self, name: str) -> Verdict:
        """Whether a sandbox's query for ``name`` is answered."""
        destination = destination_of(name)
        if not isinstance(destination, str):
            return Verdict(False)
        found = tuple(g for g in self.resolve if g.matches_name(destination))
        return Verdict(bool(found), found)


def _admits(grant: Grant, destination: IPAddress | str) -> bool:
    if isinstance(destination, str):
        return grant.matches_name(destination) or grant.opens_every_open_address()
    return grant.matches_address(destination)


# --- Probes --------------------------------------------------------------------------------------

ProbeKind = Literal[
    "entry",
    "plain-tcp",
    "one-below",
    "two-below",
    "apex",
    "other-port",
    "metadata",
    "metadata-nat64",
    "grant",
]

# Labels a probe adds below a name: chosen so no real entry is likely to name them.
PROBE_LABELS: Final = ("sbx-probe", "sbx-probe-2")
# The cloud metadata address, and its NAT64 (64:ff9b::/96) form, probed on every stack.
METADATA_PROBES: Final[tuple[tuple[str, ProbeKind], ...]] = (
    ("169.254.169.254", "metadata"),
    ("64:ff9b::a9fe:a9fe", "metadata-nat64"),
)
METADATA_PORT: Final = 80
# Tried in order when a stack's entries use no other port.
_SPARE_PORTS = (8443, 443, 80, 22)
# The port whose name probes speak HTTP (every other name probe speaks TLS).
HTTP_PORT: Final = 80


def client_protocol(host: str, port: int) -> ConnectionProtocol:
    """The protocol a probe of ``host`` on ``port`` speaks unless it says otherwise: ``http``
    to a name on port 80, ``tls`` to a name on any other port (what the client of a name
    entry sends: the name in the Host or the SNI), ``tcp`` to an address."""
    if not isinstance(destination_of(host), str):
        return "tcp"
    return "http" if port == HTTP_PORT else "tls"


@dataclass(frozen=True)
class Probe:
    """One destination to ask a target and the contract about.

    Attributes:
        host: a name in normal form or an address text.
        port: TCP port.
        protocol: what the probe carries (``ConnectionProtocol``; ``client_protocol`` gives
            the usual one): ``tls`` with the host as SNI, ``http`` with the host as Host,
            ``tcp`` plain bytes (to a name: to an address it resolved to, naming nothing).
        kind: how it was derived (``ProbeKind``).
        origin: the entry it derives from (``*.pythonhosted.org:443``); ``""`` for the
            metadata probes.
    """

    host: str
    port: int
    protocol: ConnectionProtocol
    kind: ProbeKind
    origin: str = ""

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @classmethod
    def usual(cls, host: str, port: int, kind: ProbeKind, origin: str = "") -> Probe:
        """A probe speaking ``client_protocol(host, port)``."""
        return cls(host, port, client_protocol(host, port), kind, origin)


def _other_ports(rule: EgressRule, rules: Sequence[EgressRule]) -> list[int]:
    own = {r.port for r in rules if (r.host, r.kind) == (rule.host, rule.kind)}
    others = sorted({r.port for r in rules} - own)
    return others or [next(p for p in _SPARE_PORTS if p not in own)]


def _probes_of(rule: EgressRule, rules: Sequence[EgressRule]) -> Iterable[Probe]:
    origin = str(rule)
    if rule.kind == "ip":
        yield Probe.usual(rule.host, rule.port, "entry", origin)
        for port in _other_ports(rule, rules):
            yield Probe.usual(rule.host, port, "other-port", origin)
        return
    one, two = (
        f"{PROBE_LABELS[0]}.{rule.host}",
        f"{PROBE_LABELS[1]}.{PROBE_LABELS[0]}.{rule.host}",
    )
    name = rule.host if rule.kind == "name" else one
    if rule.kind == "name":
        yield Probe.usual(name, rule.port, "entry", origin)
    # The same name and port with no SNI and no Host: a name entry never admits it.
    yield Probe(name, rule.port, "tcp", "plain-tcp", origin)
    yield Probe.usual(one, rule.port, "one-below", origin)
    yield Probe.usual(two, rule.port, "two-below", origin)
    apex = rule.host if rule.kind == "wildcard" else registrable_domain(rule.host)
    if apex is not None and apex != name:
        yield Probe.usual(apex, rule.port, "apex", origin)
    for port in _other_ports(rule, rules):
        yield Probe.usual(name, port, "other-port", origin)


def _grant_protocol(grant: Grant, host: str, port: int) -> ConnectionProtocol:
    # The usual protocol when the grant admits it, else one it admits: a grant no entry
    # explains is asked in a protocol it opens (an HTTP-only grant on 443 too).
    usual = client_protocol(host, port)
    if grant.covers_protocol(usual):
        return usual
    return next(p for p in CONNECTION_PROTOCOLS if grant.covers_protocol(p))


def _grant_probes(grant: Grant, host: str, ports: Iterable[int]) -> Iterator[Probe]:
    """``grant``'s probes of ``host`` on ``ports``: in ``_grant_protocol``'s protocol, and in
    ``udp`` as well when the grant admits it beside TCP (no contract admits UDP)."""
    for port in ports:
        protocol = _grant_protocol(grant, host, port)
        yield Probe(host, port, protocol, "grant", grant.resource)
        if protocol != "udp" and grant.covers_protocol("udp"):
            yield Probe(host, port, "udp", "grant", grant.resource)


def _probes_of_grant(grant: Grant) -> Iterable[Probe]:
    ports = sorted(grant.ports) if grant.ports != "any" else [_SPARE_PORTS[0]]
    if grant.scope == "any":
        # Every name: left to the entries' probes, which speak TCP; UDP to a name no entry
        # lists is asked here (no contract admits it).
        if grant.covers_protocol("udp"):
            host = f"{PROBE_LABELS[0]}.example.com"
            yield from (Probe(host, p, "udp", "grant", grant.resource) for p in ports)
        return
    network = grant.network
    if network is not None:
        # A block: its lowest address open mode admits outside its exclusions (a grant of
        # 0.0.0.0/1 and 128.0.0.0/1 less the non-public blocks admits the public internet).
        address = (
            network.network_address
            if network.num_addresses == 1
            else public_address_in(network, [ip_network(block) for block in grant.excluded])
        )
        if address is not None:
            yield from _grant_probes(grant, str(address), ports)
        return
    below = grant.scope in ("below", "one-label")
    host = f"{PROBE_LABELS[0]}.{grant.host}" if below else grant.host
    yield from _grant_probes(grant, host, ports)


def derive_probes(
    rules: Iterable[EgressRule],
    control_plane: Iterable[EgressRule] = (),
    grants: Iterable[Grant] = (),
) -> tuple[Probe, ...]:
    """The probes for a stack's entries, a target's control-plane hosts and what a target grants.

    Each probe carries a protocol: ``client_protocol``'s (``http`` to a name on port 80,
    ``tls`` to a name on other ports, ``tcp`` to an address) but for the ``plain-tcp`` probes
    and a grant's (asked in a protocol it admits).

    Per name entry: the name itself (exact entries) and, with protocol ``tcp``, the same name
    (for ``*.x`` one label below) on the same port with no SNI and no Host (``plain-tcp``:
    every target must refuse it); one and two labels below it
    (``sbx-probe.``, ``sbx-probe-2.sbx-probe.``), the apex (``x`` for ``*.x``; the registrable
    domain of an exact name when it differs), and on every other port the entries use (8443
    when they use one port) the name, or for ``*.x`` the name one label below. Per IP entry:
    the address on its port and on the other ports. Always: 169.254.169.254 and its NAT64 form
    64:ff9b::a9fe:a9fe on port 80. Per connection grant a target's reader found (``grants``,
    so a grant no entry explains is asked too): its name (one label below for a wildcard), its
    single address, or for a block its lowest address ``open`` mode admits outside the grant's
    exclusions (``addresses.public_address_in``), on each of its ports (8443 for every port),
    and over ``udp`` too for a grant admitting UDP beside TCP; grants of every name are left
    to the entries' probes and to SBX-NET-001, but for UDP (``sbx-probe.example.com`` over
    ``udp``: no entry probe speaks it). Each
    ``(host, port, protocol)`` once, first derivation kept, in derivation order.
    """
    listed = [*rules, *control_plane]
    found: dict[tuple[str, int, ConnectionProtocol], Probe] = {}
    derived = [p for rule in listed for p in _probes_of(rule, listed)]
    derived += [Probe.usual(host, METADATA_PORT, kind) for host, kind in METADATA_PROBES]
    derived += [p for grant in grants for p in _probes_of_grant(grant)]
    for probe in derived:
        found.setdefault((probe.host, probe.port, probe.protocol), probe)
    return tuple(found.values())


def contract_probes(
    contract: EgressContract, effective: EffectiveEgress | None = None
) -> tuple[Probe, ...]:
    """The probes ``preview --explain-egress`` and SBX-NET-008 ask both a target and
    ``contract``: ``derive_probes`` over the contract's entries and control-plane hosts and,
    once the target is read (``effective``), its connection grants."""
    grants = effective.connect if effective is not None else ()
    return derive_probes(contract.rules, contract.control_plane, grants)


# --- Comparison ----------------------------------------------------------------------------------

Question = Literal["connect", "resolve"]
Direction = Literal["wider", "narrower"]


@dataclass(frozen=True)
class Difference:
    """A probe the target and the contract answer differently.

    Attributes:
        probe: the probe.
        question: ``connect`` (host and port) or ``resolve`` (the name).
        direction: ``wider`` when the target admits what the contract refuses, ``narrower``
            when it refuses what the contract admits.
        verdict: the target's answer (its grants say why it admits).
    """

    probe: Probe
    question: Question
    direction: Direction
    verdict: Verdict

    def __str__(self) -> str:
        return self.describe()

    def describe(self, last_port: int | None = None) -> str:
        """The difference in words; ``last_port`` names the probe's port as a range up to it,
        for a run of differences alike but for their consecutive ports (``port_runs``)."""
        what = str(self.probe) if self.question == "connect" else f"resolving {self.probe.host}"
        if last_port is not None and last_port != self.probe.port:
            what += f"-{last_port}"
        if self.question == "connect":
            what += f" over {self.probe.protocol}"
        origin = f" ({self.probe.kind} of {self.probe.origin})" if self.probe.origin else ""
        if self.direction == "wider":
            by = "; ".join(str(g) for g in self.verdict.grants)
            return f"wider: {what}{origin} is admitted by {by}; the contract refuses it"
        return f"narrower: {what}{origin} is refused; the contract admits it"


def compare(
    effective: EffectiveEgress, contract: EgressContract, probes: Iterable[Probe]
) -> tuple[Difference, ...]:
    """Every probe the target answers unlike the contract: connections for each probe (its
    host, port and protocol), then resolution for each distinct probe name, in probe order."""
    probes = tuple(probes)
    found: list[Difference] = []
    for probe in probes:
        verdict = effective.admits(probe.host, probe.port, probe.protocol)
        if verdict.admitted != contract.admits(probe.host, probe.port, probe.protocol):
            found.append(Difference(probe, "connect", _direction(verdict), verdict))
    asked: set[str] = set()
    for probe in probes:
        if not isinstance(destination_of(probe.host), str) or probe.host in asked:
            continue
        asked.add(probe.host)
        verdict = effective.resolves(probe.host)
        if verdict.admitted != contract.may_resolve(probe.host):
            found.append(Difference(probe, "resolve", _direction(verdict), verdict))
    return tuple(found)


def port_runs(differences: Iterable[Difference]) -> tuple[tuple[Difference, int], ...]:
    """``differences`` with each run of neighbours that differ only in consecutive ports (a
    connection probe of the same host, protocol, kind and origin, answered the same way by the
    same grants) as one: ``(first difference, last port of the run)``, in the given order. A grant
    on a port range (Cilium ``endPort``) then reads as one difference, not one per port."""
    runs: list[tuple[Difference, int]] = []
    for difference in differences:
        if runs:
            first, last = runs[-1]
            alike = (
                first.question == difference.question == "connect"
                and difference.probe.port == last + 1
                and (
                    first.probe.host,
                    first.probe.protocol,
                    first.probe.kind,
                    first.probe.origin,
                    first.direction,
                )
                == (
                    difference.probe.host,
                    difference.probe.protocol,
                    difference.probe.kind,
                    difference.probe.origin,
                    difference.direction,
                )
                and first.verdict == difference.verdict
            )
            if alike:
                runs[-1] = (first, difference.probe.port)
                continue
        runs.append((difference, difference.probe.port))
    return tuple(runs)


def _direction(verdict: Verdict) -> Direction:
    return "wider" if verdict.admitted else "narrower"


FindingKind = Literal[
    "apex-by-wildcard",
    "name-on-every-port",
    "one-label-wildcard",
    "claimed-name-only",
    "resolved-address-only",
    "udp",
]

_FINDING_TEXT: Final[Mapping[FindingKind, str]] = {
    "apex-by-wildcard": "a wildcard that also admits its apex; the contract's *.x never admits x",
    "name-on-every-port": "a name on every port; a contract entry names one port",
    "one-label-wildcard": "a wildcard one label deep; the contract's *.x admits every depth",
    "claimed-name-only": "matched by the name the client claims, not where it connects",
    "resolved-address-only": "matched by the addresses the name resolved to, so any site "
    "on those addresses passes",
    "udp": "UDP (so QUIC) out of the sandbox, which no contract admits",
}


@dataclass(frozen=True)
class Inexpressible:
    """A grant the contract cannot express, or matches only weakly.

    Attributes:
        kind: ``apex-by-wildcard``, ``name-on-every-port``, ``one-label-wildcard``,
            ``claimed-name-only``, ``udp`` (a grant admitting UDP; the contract cannot express
            these five) or ``resolved-address-only`` (expressible, but any site sharing the
            addresses passes: the policy gate decides whether that is allowed).
        question: ``connect`` or ``resolve``.
        grant: the grant.
    """

    kind: FindingKind
    question: Question
    grant: Grant

    def __str__(self) -> str:
        return f"{self.question} {self.grant}: {_FINDING_TEXT[self.kind]}"


def inexpressible(effective: EffectiveEgress) -> tuple[Inexpressible, ...]:
    """Flag, without a profile, the grants no contract expresses (``Inexpressible``).

    Connection grants: scope ``exact-and-below`` or ``one-label``; a name grant (scope other
    than ``any``) on every port; enforcement ``claimed-name`` or ``resolved-address``; a grant
    admitting ``udp``. Resolution grants: scope ``exact-and-below`` or ``one-label``.
    """
    found: list[Inexpressible] = []
    asked: tuple[tuple[Question, tuple[Grant, ...]], ...] = (
        ("connect", effective.connect),
        ("resolve", effective.resolve),
    )
    for question, grants in asked:
        for grant in grants:
            kinds: list[FindingKind] = []
            if grant.scope == "exact-and-below":
                kinds.append("apex-by-wildcard")
            if grant.scope == "one-label":
                kinds.append("one-label-wildcard")
            if question == "connect":
                named = grant.network is None and grant.scope != "any"
                if named and grant.ports == "any":
                    kinds.append("name-on-every-port")
                if grant.enforced == "claimed-name":
                    kinds.append("claimed-name-only")
                if grant.enforced == "resolved-address":
                    kinds.append("resolved-address-only")
                if grant.covers_protocol("udp"):
                    kinds.append("udp")
            found += [Inexpressible(k, question, grant) for k in kinds]
    return tuple(found)
