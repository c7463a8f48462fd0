"""Which addresses are public: the kit's IANA registry copies, and IPv6 forms of IPv4."""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandboxkit.addresses import (
    EMBEDDINGS,
    Block,
    exclusion_blocks,
    judge_address,
    non_public_reach,
    open_admits,
    public_address_in,
    registry_rows,
)


def _special(version: int) -> list[Block]:
    rows = registry_rows()
    return [r for r in rows if r.registry == "special-purpose" and r.network.version == version]


def test_the_registry_copies_parse_row_by_row() -> None:
    v4, v6 = _special(4), _special(6)
    # 25 IPv4 rows, one of which names two blocks (NAT64/DNS64 discovery); 25 IPv6 rows.
    assert (len(v4), len(v6)) == (26, 25)
    assert Block(
        ip_network("192.0.0.9/32"), "Port Control Protocol Anycast", "[RFC7723]", True,
        "special-purpose",
    ) in v4  # fmt: skip
    assert [str(r.network) for r in v4 if r.name == "NAT64/DNS64 Discovery"] == [
        "192.0.0.170/32",
        "192.0.0.171/32",
    ]
    # A multi-line RFC cell is one line; "N/A" (with its footnote) and a terminated row's empty
    # cell are not public.
    limited = next(r for r in v4 if r.name == "Limited Broadcast")
    assert (limited.source, limited.public) == ("[RFC8190] [RFC919], Section 7", False)
    assert next(r for r in v6 if r.name == "TEREDO").public is False
    assert next(r for r in v6 if r.name == "6to4").network == ip_network("2002::/16")
    assert next(r for r in v4 if r.name.startswith("Deprecated (6to4")).public is False
    assert next(r for r in v6 if r.name == "Dummy IPv6 Prefix").network == ip_network(
        "100:0:0:1::/64"
    )


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("1.1.1.1", True),
        ("192.0.0.9", True),  # PCP anycast: a True row inside the False 192.0.0.0/24
        ("192.0.0.11", False),  # the rest of 192.0.0.0/24
        ("192.0.0.8", False),
        ("192.31.196.1", True),  # AS112-v4
        ("192.88.99.2", False),
        ("198.18.0.1", False),
        ("255.255.255.255", False),
        ("240.0.0.1", False),
        ("239.255.255.250", False),  # multicast, from the address-space registry
        ("2001:4860:4860::8888", True),
        ("2001:1::1", True),  # PCP anycast inside the False 2001::/23
        ("2001:3::1", True),  # AMT
        ("2001:2::1", False),  # benchmarking
        ("2001:db8::1", False),
        ("2620:4f:8000::1", True),
        ("5f00::1", False),
        ("100::1", False),
        ("100:0:0:1::1", False),
        ("4000::1", False),  # outside 2000::/3, reserved by the IETF
        ("fec0::1", False),
        ("::", False),
    ],
)
def test_the_most_specific_row_decides(address: str, public: bool) -> None:
    assert judge_address(ip_address(address)).public is public


# Every embedding form, carrying the metadata address and a public one.
FORMS = [
    ("::a9fe:a9fe", "IPv4-compatible address"),
    ("::ffff:a9fe:a9fe", "IPv4-mapped address"),
    ("::ffff:0:a9fe:a9fe", "SIIT IPv4-translated address"),
    ("64:ff9b::a9fe:a9fe", "NAT64 well-known prefix"),
    ("2002:a9fe:a9fe::1", "6to4"),
    ("2001:4860::5efe:a9fe:a9fe", "ISATAP interface identifier"),
    ("2001:4860::200:5efe:a9fe:a9fe", "ISATAP interface identifier"),
]


@pytest.mark.parametrize(("address", "form"), FORMS)
def test_every_form_is_judged_by_the_ipv4_it_carries(address: str, form: str) -> None:
    judgement = judge_address(ip_address(address))
    assert judgement.public is False
    assert judgement.embedding is not None and judgement.embedding.name == form
    assert judgement.ipv4 == (IPv4Address("169.254.169.254"),)
    assert judgement.reason.endswith(
        "169.254.169.254 is not a public address (Link Local, 169.254.0.0/16, [RFC3927])"
    )


def test_teredo_carries_its_server_and_inverted_client() -> None:
    # RFC 4380 section 4's example: server 65.54.227.120, client 192.0.2.45 (inverted bits).
    judgement = judge_address(ip_address("2001:0:4136:e378:8000:63bf:3fff:fdd2"))
    assert judgement.ipv4 == (IPv4Address("65.54.227.120"), IPv4Address("192.0.2.45"))
    assert judgement.reason == (
        "2001:0:4136:e378:8000:63bf:3fff:fdd2 is an IPv6 form of server 65.54.227.120, client "
        "192.0.2.45 (Teredo, RFC 4380 section 4); 192.0.2.45 is not a public address "
        "(Documentation (TEST-NET-1), 192.0.2.0/24, [RFC5737])"
    )


def test_the_local_use_prefix_names_every_candidate_position() -> None:
    judgement = judge_address(ip_address("64:ff9b:1::a9fe:a9fe"))
    assert judgement.public is False
    assert IPv4Address("169.254.169.254") in judgement.ipv4
    assert "the position depends on the translator's prefix length" in judgement.reason


def test_prefix_forms_of_public_addresses_are_refused_but_isatap_is_what_it_carries() -> None:
    assert judge_address(ip_address("64:ff9b::808:808")).public is False
    assert judge_address(ip_address("::ffff:8.8.8.8")).public is False
    assert judge_address(ip_address("2002:808:808::1")).public is False
    # An ISATAP address is a real IPv6 host whose link address is the IPv4 it carries.
    assert judge_address(ip_address("2001:4860::200:5efe:808:808")).public is True


def test_a_more_specific_row_inside_a_form_decides() -> None:
    # ::1 sits inside the IPv4-compatible ::/96, but the loopback row names it.
    assert judge_address(ip_address("::1")).reason == (
        "::1 is not a public address (Loopback Address, ::1/128, [RFC4291])"
    )


def test_open_mode_exclusions_are_the_registry_blocks_taken_whole() -> None:
    assert [str(b) for b in exclusion_blocks(4)] == [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
        "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    ]  # fmt: skip
    assert [str(b) for b in exclusion_blocks(6)] == [
        "::/8", "100::/8", "200::/7", "400::/6", "800::/5", "1000::/4", "2001::/23",
        "2001:db8::/32", "2002::/16", "3fff::/20", "4000::/3", "6000::/3", "8000::/3",
        "a000::/3", "c000::/3", "e000::/4", "f000::/5", "f800::/6", "fc00::/7", "fe00::/9",
        "fe80::/10", "fec0::/10", "ff00::/8",
    ]  # fmt: skip


@pytest.mark.parametrize("form", [f for f in EMBEDDINGS if f.prefix_form], ids=lambda f: f.name)
def test_open_mode_excludes_every_embedding_prefix(form: object) -> None:
    network = form.network  # type: ignore[attr-defined]
    assert any(network.subnet_of(block) for block in exclusion_blocks(6))


@pytest.mark.parametrize(
    ("address", "admitted"),
    [
        ("8.8.8.8", True),
        ("2001:4860:4860::8888", True),
        ("169.254.169.254", False),
        ("64:ff9b::808:808", False),
        ("64:ff9b::a9fe:a9fe", False),
        # Globally reachable by the registry, but inside a block open mode takes out whole.
        ("192.0.0.9", False),
        ("2001:1::1", False),
        # Under a public prefix, so no block takes it out: the judgement does.
        ("2001:4860::5efe:a9fe:a9fe", False),
    ],
)
def test_open_admits(address: str, admitted: bool) -> None:
    assert open_admits(ip_address(address)) is admitted


def test_non_public_reach_splits_at_rows_and_honours_exclusions() -> None:
    reach = non_public_reach(ip_network("10.1.0.0/16"))
    assert [(str(p.network), p.row.name) for p in reach] == [("10.1.0.0/16", "Private-Use")]
    assert non_public_reach(ip_network("10.1.0.0/16"), [ip_network("10.0.0.0/8")]) == ()
    assert non_public_reach(ip_network("8.8.8.0/24")) == ()
    assert non_public_reach(ip_network("192.0.0.9/32")) == ()
    parts = non_public_reach(ip_network("192.0.0.8/30"))
    assert [(str(p.network), p.row.name) for p in parts] == [
        ("192.0.0.8/32", "IPv4 dummy address"),
        ("192.0.0.11/32", "IETF Protocol Assignments"),
    ]
    six = non_public_reach(ip_network("64:ff9b::a9fe:a9fe/128"))
    assert [p.row.name for p in six] == ["NAT64 well-known prefix"]


def test_public_address_in_is_the_lowest_admitted_address_outside_the_exclusions() -> None:
    assert public_address_in(ip_network("0.0.0.0/1")) == IPv4Address("1.0.0.0")
    # The exclusions are taken out first: 1.0.0.0/8 excluded leaves 2.0.0.0.
    assert public_address_in(ip_network("0.0.0.0/1"), [ip_network("1.0.0.0/8")]) == IPv4Address(
        "2.0.0.0"
    )
    half = [ip_network("93.184.216.0/25")]
    assert public_address_in(ip_network("93.184.216.0/24"), half) == IPv4Address("93.184.216.128")
    assert public_address_in(ip_network("93.184.216.0/24"), [ip_network("0.0.0.0/0")]) is None
    # Only non-public addresses: nothing a probe could use.
    assert public_address_in(ip_network("10.0.0.0/8")) is None
    assert public_address_in(ip_network("169.254.0.0/16")) is None
    assert public_address_in(ip_network("::/0")) == IPv6Address("2000::")
    assert public_address_in(ip_network("2001:db8::/32")) is None


# --- Properties ------------------------------------------------------------------------------

NON_PUBLIC_V4 = st.sampled_from(
    [b for b in exclusion_blocks(4) if b != ip_network("192.0.0.0/24")]
).flatmap(
    lambda block: st.integers(int(block.network_address), int(block.broadcast_address)).map(
        IPv4Address
    )
)


def _embed(form: str, v4: IPv4Address, noise: int) -> IPv6Address:
    value = int(v4)
    if form == "compatible":
        return IPv6Address(value)
    if form == "mapped":
        return IPv6Address((0xFFFF << 32) | value)
    if form == "siit":
        return IPv6Address((0xFFFF << 48) | value)
    if form == "nat64":
        return IPv6Address((0x64FF9B << 96) | value)
    if form == "6to4":
        return IPv6Address((0x2002 << 112) | (value << 80) | (noise & ((1 << 80) - 1)))
    if form == "teredo-client":
        return IPv6Address((0x20010000 << 96) | (0x08080808 << 64) | (value ^ 0xFFFFFFFF))
    if form == "teredo-server":
        return IPv6Address((0x20010000 << 96) | (value << 64) | (noise & 0xFFFFFFFF))
    # isatap under the public 2001:4860::/32, with or without the "u" bit
    return IPv6Address((0x20014860 << 96) | ((noise & 1) << 57) | (0x5EFE << 32) | value)


@settings(max_examples=500)
@given(
    NON_PUBLIC_V4,
    st.sampled_from(
        [
            "compatible",
            "mapped",
            "siit",
            "nat64",
            "6to4",
            "teredo-client",
            "teredo-server",
            "isatap",
        ]
    ),
    st.integers(min_value=0, max_value=(1 << 80) - 1),
)
def test_every_form_carrying_a_non_public_ipv4_is_refused_naming_it(
    v4: IPv4Address, form: str, noise: int
) -> None:
    address = _embed(form, v4, noise)
    judgement = judge_address(address)
    assert judgement.public is False
    assert not open_admits(address)
    if address in (IPv6Address("::"), IPv6Address("::1")):
        return  # the unspecified and loopback rows name these
    assert v4 in judgement.ipv4
    assert f"{v4} is not a public address" in judgement.reason


def _rows_inside(row: Block) -> list[Block]:
    return [
        r for r in registry_rows()
        if r.network.version == row.network.version and r.network != row.network
        and r.network.subnet_of(row.network)  # type: ignore[arg-type]
    ]  # fmt: skip


@settings(max_examples=500)
@given(st.sampled_from(registry_rows()), st.integers(min_value=0))
def test_an_address_is_judged_by_the_most_specific_row_holding_it(row: Block, offset: int) -> None:
    address = row.network.network_address + offset % row.network.num_addresses
    if any(address in inner.network for inner in _rows_inside(row)):
        return  # a more specific row holds this one
    judgement = judge_address(address)
    assert judgement.block is not None and judgement.block.network == row.network
    if judgement.embedding is None:
        assert judgement.public is judgement.block.public
    elif judgement.embedding.prefix_form:
        assert judgement.public is False
        assert judgement.block.registry == "embedding"
    else:  # an ISATAP identifier under a public row
        assert judgement.public is all(j.public for _, j in judgement.carried)


@settings(max_examples=500)
@given(st.ip_addresses())
def test_judgement_reach_and_open_exclusions_agree(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    # Two algorithms over the same rows (a lookup per address, a walk over a block) agree, and
    # every address the rows make non-public lies inside a block open mode takes out.
    judgement = judge_address(ip)
    reach = non_public_reach(ip_network(ip))
    isatap = judgement.embedding is not None and not judgement.embedding.prefix_form
    if not isatap:
        assert bool(reach) is not judgement.public
    if reach:
        assert any(ip in block for block in exclusion_blocks(ip.version))
    assert open_admits(ip) is (
        judgement.public and not any(ip in block for block in exclusion_blocks(ip.version))
    )
