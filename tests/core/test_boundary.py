"""The egress part of ``sandboxkit.boundary``: ranges derived from the registries, read by the
components and by the policy pack alike."""

from __future__ import annotations

from ipaddress import ip_network
from types import ModuleType

import pytest

from sandboxkit import boundary, guard_checks
from sandboxkit.addresses import EMBEDDINGS, exclusion_blocks


def test_open_mode_exclusions_derive_from_the_registry() -> None:
    assert tuple(str(b) for b in exclusion_blocks(4)) == boundary.NON_PUBLIC_IPV4
    assert tuple(str(b) for b in exclusion_blocks(6)) == boundary.NON_PUBLIC_IPV6
    # What the components and their tests read by name is there.
    assert {"10.0.0.0/8", "169.254.0.0/16", "100.64.0.0/10", "0.0.0.0/8"} <= set(
        boundary.NON_PUBLIC_IPV4
    )
    assert {"fc00::/7", "fe80::/10", "2002::/16"} <= set(boundary.NON_PUBLIC_IPV6)


@pytest.mark.parametrize("form", [f for f in EMBEDDINGS if f.prefix_form], ids=lambda f: f.name)
def test_open_mode_leaves_no_embedding_prefix_open(form: object) -> None:
    network = form.network  # type: ignore[attr-defined]
    assert any(network.subnet_of(ip_network(b)) for b in boundary.NON_PUBLIC_IPV6)


def test_resolvers_drop_every_non_public_answer() -> None:
    assert boundary.RESOLVER_DROP_RANGES == boundary.NON_PUBLIC_IPV4 + boundary.NON_PUBLIC_IPV6
    drop = [ip_network(b) for b in boundary.RESOLVER_DROP_RANGES]
    for address in ("169.254.169.254", "10.1.2.3", "64:ff9b::a9fe:a9fe", "::ffff:a9fe:a9fe"):
        answer = ip_network(address)
        assert any(answer.version == b.version and answer.subnet_of(b) for b in drop)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def pack_common() -> ModuleType:
    """Where the pack's checks judge CIDR blocks (``sandboxkit.guard_checks``, shared by the
    targets' policy handlers)."""
    return guard_checks


@pytest.mark.parametrize(
    ("cidr", "excepted", "reached"),
    [
        ("10.1.0.0/16", (), ["10.0.0.0/8 (Private-Use)"]),
        ("10.1.0.0/16", ("10.0.0.0/8",), []),
        (
            "0.0.0.0/8",
            (),
            ['0.0.0.0/32 ("This host on this network")', '0.0.0.0/8 ("This network")'],
        ),
        ("8.8.8.8/32", (), []),
        # The registry's judgement, not a copy of ranges: PCP anycast is globally reachable.
        ("192.0.0.9/32", (), []),
        ("64:ff9b::a9fe:a9fe/128", (), ["64:ff9b::/96 (NAT64 well-known prefix)"]),
        ("2002::/16", (), ["2002::/16 (6to4)"]),
        ("fd00::/8", (), ["fc00::/7 (Unique-Local)"]),
        ("not a cidr", (), []),
    ],
)
def test_the_pack_judges_cidr_blocks_by_the_contract(
    pack_common: ModuleType, cidr: str, excepted: tuple[str, ...], reached: list[str]
) -> None:
    assert pack_common.non_public_overlap(cidr, excepted) == reached
    assert not hasattr(pack_common, "NON_PUBLIC_NETWORKS")
