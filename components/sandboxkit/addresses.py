"""Which IP addresses are public: the kit's copy of IANA's registries, and IPv6 forms of IPv4.

Every egress decision about an address (an allowlist entry, ``open`` mode's exclusions, the
policy pack's check of rendered CIDR blocks, a resolver's rebinding filter) reads this module,
never ``ipaddress``'s ``is_global``: that table calls the IPv6 forms of IPv4 addresses
(``64:ff9b::a9fe:a9fe`` is 169.254.169.254 through NAT64) global, and it changes between
Python patch releases.

Sources (kit-owned copies, read at import; nothing is fetched at run time):

- IANA IPv4 Special-Purpose Address Registry,
  https://www.iana.org/assignments/iana-ipv4-special-registry/iana-ipv4-special-registry-1.csv,
  in ``data/iana-ipv4-special-registry-1.csv`` (newest row 192.0.0.10/32, RFC 8155, 2017-02).
- IANA IPv6 Special-Purpose Address Registry,
  https://www.iana.org/assignments/iana-ipv6-special-registry/iana-ipv6-special-registry-1.csv,
  in ``data/iana-ipv6-special-registry-1.csv`` (newest row 100:0:0:1::/64, RFC 9780, 2025-04).
  Both CSVs are IANA's text as fetched from those URLs on 2026-07-18,
  taken from a public repository that vendors that fetch verbatim (the kit's build machines
  have no route to iana.org). To refresh: download both URLs over the files and run
  ``tests/core/test_egress_addresses.py``; a new row needs a test case of its own.
- IANA IPv4 Address Space Registry (https://www.iana.org/assignments/ipv4-address-space/):
  224.0.0.0/4 is multicast (RFC 5771), not a unicast destination.
- IANA IPv6 Address Space Registry (https://www.iana.org/assignments/ipv6-address-space/, last
  updated 2019-09-13): only 2000::/3 is Global Unicast; every other block is reserved by the
  IETF, unique-local, link-local, the deprecated site-local fec0::/10 (RFC 3879: existing
  deployments may still route it locally) or multicast (``ADDRESS_SPACE_IPV6``).
- IPv6 forms that embed or translate an IPv4 address (``EMBEDDINGS``): IPv4-compatible and
  IPv4-mapped (RFC 4291 section 2.5.5), SIIT IPv4-translated (RFC 2765 section 2.1), NAT64 with
  the well-known prefix (RFC 6052) and the local-use prefix (RFC 8215, RFC 6052 section 2.2
  address formats), 6to4 (RFC 3056 section 2), Teredo (RFC 4380 section 4: server IPv4 in bits
  32-63, client IPv4 inverted in bits 96-127), and ISATAP interface identifiers under any
  prefix (RFC 5214 section 6.1).

The judgement (``judge_address``):

1. An address in a prefix form (NAT64, 6to4, Teredo, IPv4-mapped ...) is never public: the kit
   reaches an IPv4 destination by its IPv4 form only, and ``open`` mode's exclusions take each
   whole prefix out (a CIDR list cannot take out only the forms of non-public addresses). The
   judgement names the IPv4 address(es) carried and says which is not public. An ISATAP
   identifier follows any prefix, so it cannot be excluded by prefix: such an address is what
   the IPv4 address it carries is. A more specific registry row inside a prefix form decides
   its own addresses (``::1`` is the loopback row, not an IPv4-compatible form).
2. Otherwise the most specific row covering the address decides (registry footnotes: a more
   specific row overrides the block around it): public when its "Globally Reachable" column is
   ``True``; ``False``, ``N/A`` and a terminated row's empty cell are not public. Rows of the
   address-space registries rank below special-purpose rows of the same block.
3. An address no row covers is public (IPv4 unicast outside every special block).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_address,
    ip_network,
)
from typing import Final, Literal

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

_IPV4_SPACE_URL = "https://www.iana.org/assignments/ipv4-address-space/"
_IPV6_SPACE_URL = "https://www.iana.org/assignments/ipv6-address-space/"

Registry = Literal["embedding", "special-purpose", "address-space"]
# Of two rows for the same block, the first kind here decides.
_PRECEDENCE: tuple[Registry, ...] = ("embedding", "special-purpose", "address-space")

# IANA IPv6 Address Space Registry, last updated 2019-09-13 (URL above): (block, allocation).
ADDRESS_SPACE_IPV6: Final = (
    ("::/8", "Reserved by IETF"),
    ("100::/8", "Reserved by IETF"),
    ("200::/7", "Reserved by IETF"),
    ("400::/6", "Reserved by IETF"),
    ("800::/5", "Reserved by IETF"),
    ("1000::/4", "Reserved by IETF"),
    ("2000::/3", "Global Unicast"),
    ("4000::/3", "Reserved by IETF"),
    ("6000::/3", "Reserved by IETF"),
    ("8000::/3", "Reserved by IETF"),
    ("a000::/3", "Reserved by IETF"),
    ("c000::/3", "Reserved by IETF"),
    ("e000::/4", "Reserved by IETF"),
    ("f000::/5", "Reserved by IETF"),
    ("f800::/6", "Reserved by IETF"),
    ("fc00::/7", "Unique Local Unicast"),
    ("fe00::/9", "Reserved by IETF"),
    ("fe80::/10", "Link Local Unicast"),
    ("fec0::/10", "Reserved by IETF (formerly site-local, RFC 3879)"),
    ("ff00::/8", "Multicast"),
)
_GLOBAL_UNICAST_IPV6 = "Global Unicast"
# IANA IPv4 Address Space Registry (URL above): the multicast blocks 224/8 to 239/8, RFC 5771.
ADDRESS_SPACE_IPV4_MULTICAST: Final = "224.0.0.0/4"


@dataclass(frozen=True)
class Block:
    """One row of a registry the judgement reads.

    Attributes:
        network: the address block.
        name: the row's name as the registry writes it (``Link Local``, ``TEREDO``).
        source: where the row comes from: the RFC column of an IANA special-purpose row, the
            address-space registry's URL, or the RFC defining an embedding.
        public: whether an address this row decides is public.
        registry: ``special-purpose``, ``address-space`` or ``embedding``.
    """

    network: IPNetwork
    name: str
    source: str
    public: bool
    registry: Registry

    def __str__(self) -> str:
        return f"{self.name}, {self.network}, {self.source}"


Carried = tuple[tuple[str, IPv4Address], ...]


@dataclass(frozen=True)
class Embedding:
    """An IPv6 form that embeds or translates an IPv4 address.

    Attributes:
        network: the prefix the form lives in (``::/0`` for ISATAP, whose identifier follows
            any prefix).
        name: what the form is called.
        source: the RFC (and section) defining where the IPv4 address sits.
        carried: ``(role, IPv4 address)`` for each address an address of this form carries
            (role ``""`` when there is one; Teredo's ``server`` and ``client``; one per RFC 6052
            prefix length for the local-use prefix), or ``()`` when the address is not of this
            form (ISATAP: an identifier other than ``0:5efe`` / ``200:5efe``).
        alternatives: whether the carried addresses are candidates, one of which is meant (the
            local-use prefix), rather than all meant (Teredo's server and client).
    """

    network: IPv6Network
    name: str
    source: str
    carried: Callable[[IPv6Address], Carried]
    alternatives: bool = False

    @property
    def prefix_form(self) -> bool:
        """Whether the form is a prefix a CIDR list can take out (every form but ISATAP)."""
        return self.network.prefixlen > 0


def _bits_at(value: int, start: int, count: int = 32) -> int:
    # ``count`` bits of a 128-bit value from bit ``start`` (0 = most significant).
    return (value >> (128 - start - count)) & ((1 << count) - 1)


def _last32(address: IPv6Address) -> Carried:
    return (("", IPv4Address(_bits_at(int(address), 96))),)


def _rfc6052_local_use(address: IPv6Address) -> Carried:
    # RFC 6052 section 2.2: after a /48, /56, /64 or /96 network-specific prefix comes the IPv4
    # address, skipping bits 64-71 (the "u" octet). 64:ff9b:1::/48 is local-use (RFC 8215): the
    # operator's prefix length, so the position, is unknown, and every position is a candidate.
    value = int(address)
    found: list[tuple[str, IPv4Address]] = []
    for length in (48, 56, 64, 96):
        bits = [b for b in range(length, 128) if not 64 <= b < 72][:32]
        number = sum(((value >> (127 - b)) & 1) << (31 - i) for i, b in enumerate(bits))
        found.append((f"/{length}", IPv4Address(number)))
    return tuple(found)


def _six_to_four(address: IPv6Address) -> Carried:
    return (("", IPv4Address(_bits_at(int(address), 16))),)


def _teredo(address: IPv6Address) -> Carried:
    value = int(address)
    return (
        ("server", IPv4Address(_bits_at(value, 32))),
        ("client", IPv4Address(_bits_at(value, 96) ^ 0xFFFFFFFF)),
    )


def _isatap(address: IPv6Address) -> Carried:
    # RFC 5214 section 6.1: interface identifier 0000:5efe:a.b.c.d, or 0200:5efe:a.b.c.d when
    # the IPv4 address is globally unique (the "u" bit).
    value = int(address)
    if _bits_at(value, 64, 16) & 0xFDFF == 0 and _bits_at(value, 80, 16) == 0x5EFE:
        return _last32(address)
    return ()


EMBEDDINGS: Final = (
    Embedding(IPv6Network("::/96"), "IPv4-compatible address", "RFC 4291 section 2.5.5.1", _last32),
    Embedding(
        IPv6Network("::ffff:0:0/96"), "IPv4-mapped address", "RFC 4291 section 2.5.5.2", _last32
    ),
    Embedding(
        IPv6Network("::ffff:0:0:0/96"),
        "SIIT IPv4-translated address",
        "RFC 2765 section 2.1",
        _last32,
    ),
    Embedding(IPv6Network("64:ff9b::/96"), "NAT64 well-known prefix", "RFC 6052", _last32),
    Embedding(
        IPv6Network("64:ff9b:1::/48"),
        "NAT64 local-use prefix",
        "RFC 8215, RFC 6052 section 2.2",
        _rfc6052_local_use,
        alternatives=True,
    ),
    Embedding(IPv6Network("2001::/32"), "Teredo", "RFC 4380 section 4", _teredo),
    Embedding(IPv6Network("2002::/16"), "6to4", "RFC 3056 section 2", _six_to_four),
    Embedding(IPv6Network("::/0"), "ISATAP interface identifier", "RFC 5214 section 6.1", _isatap),
)

# " [2]" after a cell: a footnote mark of the registry's table.
_FOOTNOTE = re.compile(r"\s*\[\d+\]")


def _special_rows(filename: str) -> Iterator[Block]:
    text = resources.files("sandboxkit").joinpath("data", filename).read_text(encoding="utf-8")
    for row in csv.DictReader(text.splitlines(keepends=True)):
        reachable = _FOOTNOTE.sub("", row["Globally Reachable"]).strip()
        if reachable not in ("True", "False", "N/A", ""):
            raise ValueError(
                f"{filename}: {row['Address Block']}: Globally Reachable {reachable!r}"
            )
        source = " ".join(row["RFC"].split())
        for cell in _FOOTNOTE.sub("", row["Address Block"]).split(","):
            yield Block(
                ip_network(cell.strip()),
                row["Name"],
                source,
                reachable == "True",
                "special-purpose",
            )


@cache
def registry_rows() -> tuple[Block, ...]:
    """Every row the judgement reads, both families.

    Shape: IANA special-purpose rows (both CSVs, a cell naming two blocks gives two rows), the
    address-space rows (IPv4 multicast; IPv6 ``ADDRESS_SPACE_IPV6``), and one row per prefix
    form of ``EMBEDDINGS`` (never public).

    Raises:
        ValueError: a data file with a "Globally Reachable" value other than True, False, N/A
            or empty.
    """
    rows = [
        *_special_rows("iana-ipv4-special-registry-1.csv"),
        *_special_rows("iana-ipv6-special-registry-1.csv"),
        Block(
            IPv4Network(ADDRESS_SPACE_IPV4_MULTICAST),
            "Multicast",
            _IPV4_SPACE_URL,
            False,
            "address-space",
        ),
    ]
    rows += [
        Block(
            IPv6Network(cidr), name, _IPV6_SPACE_URL, name == _GLOBAL_UNICAST_IPV6, "address-space"
        )
        for cidr, name in ADDRESS_SPACE_IPV6
    ]
    rows += [
        Block(form.network, form.name, form.source, False, "embedding")
        for form in EMBEDDINGS
        if form.prefix_form
    ]
    return tuple(rows)


def _deciding_row(network: IPNetwork) -> Block | None:
    # The most specific row containing ``network`` (ties: embedding, then special-purpose).
    covering = [
        row
        for row in registry_rows()
        if row.network.version == network.version and network.subnet_of(row.network)  # type: ignore[arg-type]
    ]
    if not covering:
        return None
    return max(covering, key=lambda r: (r.network.prefixlen, -_PRECEDENCE.index(r.registry)))


@dataclass(frozen=True)
class AddressJudgement:
    """Whether an address is public, and why not.

    Attributes:
        address: the address judged.
        public: whether a sandbox may reach it.
        block: the row that decided (``None``: no row covers it, a public unicast address).
        embedding: the IPv6 form of an IPv4 address it is, if any.
        carried: ``(role, judgement)`` of each IPv4 address that form carries.
    """

    address: IPAddress
    public: bool
    block: Block | None = None
    embedding: Embedding | None = None
    carried: tuple[tuple[str, AddressJudgement], ...] = ()

    @property
    def reason(self) -> str:
        """Why the address is not public: a sentence naming the row or form and its source;
        ``""`` when it is public."""
        if self.public:
            return ""
        if self.embedding is None:
            assert self.block is not None
            return f"{self.address} is not a public address ({self.block})"
        form = f"{self.embedding.name}, {self.embedding.source}"
        if self.embedding.alternatives:
            candidates = ", ".join(str(a) for a in self.ipv4)
            return (
                f"{self.address} is an IPv6 form of one of {candidates} ({form}: the position "
                "depends on the translator's prefix length), in a prefix IANA's registry marks "
                "not globally reachable"
            )
        carried = ", ".join(f"{role} {c.address}".strip() for role, c in self.carried)
        text = f"{self.address} is an IPv6 form of {carried} ({form})"
        shut = [c for _, c in self.carried if not c.public]
        if shut:
            return f"{text}; {shut[0].reason}"
        return f"{text}; the kit reaches an IPv4 destination by its IPv4 form only"

    @property
    def ipv4(self) -> tuple[IPv4Address, ...]:
        """The distinct IPv4 addresses an embedding form carries (``()`` for any other)."""
        found = (c.address for _, c in self.carried)
        return tuple(dict.fromkeys(a for a in found if isinstance(a, IPv4Address)))


def _embedding_of(address: IPAddress, block: Block | None) -> tuple[Embedding, Carried] | None:
    # A prefix form decides the addresses its own row decides (not ::1, a more specific row);
    # an identifier form (ISATAP) is looked for where the deciding row is public.
    if not isinstance(address, IPv6Address) or block is None:
        return None
    for form in EMBEDDINGS:
        if form.prefix_form:
            applies = block.registry == "embedding" and block.network == form.network
        else:
            applies = block.public
        carried = form.carried(address) if applies else ()
        if carried:
            return form, carried
    return None


def embedded_ipv4(address: IPAddress) -> tuple[IPv4Address, ...]:
    """Every IPv4 address an IPv6 ``address`` may carry, under every form of ``EMBEDDINGS``
    whose network holds it (NAT64, 6to4, Teredo's server and client, ISATAP under any prefix,
    mapped, compatible, SIIT), whatever row decides the address; ``()`` for an IPv4 address.

    What the address is judged by stays ``judge_address``'s; this is what a refusal by address
    (a listed resolver or platform endpoint) must also look at, so that no IPv6 spelling of a
    refused IPv4 address passes.
    """
    if not isinstance(address, IPv6Address):
        return ()
    plain = IPv6Address(int(address))
    found = (v4 for form in EMBEDDINGS if plain in form.network for _, v4 in form.carried(plain))
    return tuple(dict.fromkeys(found))


def judge_address(address: IPAddress) -> AddressJudgement:
    """Judge one address against the kit's registries (module docstring: the rule).

    Args:
        address: an IPv4 or IPv6 address; an IPv6 zone index is ignored.
    """
    if isinstance(address, IPv6Address) and address.scope_id:
        address = IPv6Address(int(address))
    block = _deciding_row(ip_network(address))
    embedded = _embedding_of(address, block)
    if embedded is not None:
        form, carried = embedded
        judged = tuple((role, judge_address(v4)) for role, v4 in carried)
        # A prefix form is never public; an ISATAP identifier is what its IPv4 address is.
        public = not form.prefix_form and all(j.public for _, j in judged)
        return AddressJudgement(address, public, block, form, judged)
    if block is None:
        return AddressJudgement(address, True)
    return AddressJudgement(address, block.public, block)


@cache
def exclusion_blocks(version: Literal[4, 6]) -> tuple[IPNetwork, ...]:
    """The blocks ``open`` mode takes out of ``0.0.0.0/0`` or ``::/0``, sorted.

    Each row that is not public (special-purpose, address-space and prefix embeddings) taken
    whole, leaving out a block inside another one listed. Whole blocks are narrower than the
    judgement in one documented way: the globally reachable IETF anycast rows nested in a
    non-public block (192.0.0.9/32, 192.0.0.10/32, 2001:1::1/128 ...) stay excluded, since
    carving them out of 2001::/23 takes a hundred CIDRs. The contract's ``open`` mode admits an
    address only outside these blocks, so it says what the components enforce.
    """
    shut = {
        row.network for row in registry_rows() if row.network.version == version and not row.public
    }
    top = [
        net
        for net in shut
        if not any(other != net and net.subnet_of(other) for other in shut)  # type: ignore[arg-type]
    ]
    return tuple(sorted(top, key=lambda n: (int(n.network_address), n.prefixlen)))


def open_admits(address: IPAddress) -> bool:
    """Whether ``open`` mode admits ``address``: judged public and outside
    ``exclusion_blocks`` (every non-public row lies inside one; an ISATAP identifier carrying a
    non-public IPv4 address, which follows any prefix, is the one case the blocks miss)."""
    judgement = judge_address(address)
    flat = ip_network(judgement.address)
    return judgement.public and not any(
        flat.subnet_of(block)  # type: ignore[arg-type]
        for block in exclusion_blocks(judgement.address.version)
    )


def public_address_in(network: IPNetwork, excluded: Iterable[IPNetwork] = ()) -> IPAddress | None:
    """The lowest address of ``network`` that ``open`` mode admits (``open_admits``) outside
    every ``excluded`` block; ``None`` when the block holds none (all of it non-public or
    excluded). What an address grant of a whole block admits that no entry names: SBX-NET-008
    probes it (``effective_egress.derive_probes``)."""
    holes = [
        *(h for h in excluded if h.version == network.version),
        *exclusion_blocks(network.version),
    ]
    left = [network]
    for hole in holes:
        parts: list[IPNetwork] = []
        for part in left:
            if part.subnet_of(hole):  # type: ignore[arg-type]
                continue
            if hole.subnet_of(part):  # type: ignore[arg-type]
                parts.extend(part.address_exclude(hole))  # type: ignore[arg-type]
            else:
                parts.append(part)
        left = parts
    for part in sorted(left, key=lambda n: int(n.network_address)):
        # An ISATAP identifier can still carry a non-public IPv4 address (``open_admits``).
        for offset in range(min(4, part.num_addresses)):
            address = part.network_address + offset
            if open_admits(address):
                return address
    return None


@dataclass(frozen=True)
class NonPublicReach:
    """Part of a CIDR block that is not public.

    Attributes:
        network: the part (inside both the block asked about and ``row.network``).
        row: the row that decides it.
    """

    network: IPNetwork
    row: Block


def non_public_reach(
    network: IPNetwork, excluded: Iterable[IPNetwork] = ()
) -> tuple[NonPublicReach, ...]:
    """The non-public parts of ``network`` that ``excluded`` does not take out.

    Judged per address by the same rows as ``judge_address`` (ISATAP identifiers, which follow
    any prefix, are left to ``judge_address``). Parts are sorted and split at row boundaries.
    """
    holes = [h for h in excluded if h.version == network.version]
    rows = [r for r in registry_rows() if r.network.version == network.version]

    def walk(net: IPNetwork) -> list[NonPublicReach]:
        if any(net.subnet_of(h) for h in holes):  # type: ignore[arg-type]
            return []
        splits = any(
            r.network != net and r.network.subnet_of(net)  # type: ignore[arg-type]
            for r in rows
        ) or any(h != net and h.subnet_of(net) for h in holes)  # type: ignore[arg-type]
        if not splits:
            row = _deciding_row(net)
            return [] if row is None or row.public else [NonPublicReach(net, row)]
        low, high = net.subnets(1)
        return walk(low) + walk(high)

    return tuple(walk(network))


def address_of(text: str) -> IPAddress | None:
    """``text`` as an address (``[v6]`` brackets allowed), or ``None`` when it is not one."""
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return ip_address(bare)
    except ValueError:
        return None


# The special-purpose rows of address space an organisation numbers its own networks from:
# RFC 1918 private-use IPv4 and RFC 4193 unique-local IPv6 (the registries' own names).
PRIVATE_USE_ROWS: Final = ("Private-Use", "Unique-Local")


def private_use_reason(network: IPNetwork) -> str | None:
    """Why ``network`` is not wholly inside one private-use block, or ``None`` when it is.

    A CIDR setting for the kit's own networks (a VPC, a subnet, pod, service and control-plane
    ranges) must sit inside one ``PRIVATE_USE_ROWS`` row of IANA's special-purpose registries,
    the table every egress decision reads: ``0.0.0.0/16`` ("This network"), ``127.0.0.0/16``,
    ``169.254.0.0/16`` and ``192.0.2.0/24`` are not private-use, though ``ipaddress`` calls
    them private.
    """
    row = _deciding_row(network)
    if row is not None and row.registry == "special-purpose" and row.name in PRIVATE_USE_ROWS:
        return None
    if row is None or row.public:
        return f"{network} is not inside one private-use block"
    return f"{network} is not private-use address space ({row})"


def operator_network_reason(network: IPNetwork) -> str | None:
    """Why ``network`` cannot be a network operators connect from, or ``None`` when it can.

    A block holding special-purpose space other than ``PRIVATE_USE_ROWS`` (loopback,
    link-local, "This network", documentation, multicast, reserved, the IPv6 forms of IPv4
    addresses ...) names no operator's network: the first such part, with its row, is the
    reason. Public and private-use space is accepted (``non_public_reach``, the egress table).
    """
    for part in non_public_reach(network):
        if part.row.name not in PRIVATE_USE_ROWS:
            return (
                f"{network} includes {part.network}, which no operator's network uses ({part.row})"
            )
    return None
