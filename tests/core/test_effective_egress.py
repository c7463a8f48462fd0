"""The reader types: grants, effective egress, probes, and the comparison with the contract."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from sandboxkit.boundary import NON_PUBLIC_IPV4
from sandboxkit.effective_egress import (
    Basis,
    EffectiveEgress,
    Grant,
    Inexpressible,
    Probe,
    ResourceView,
    compare,
    derive_probes,
    inexpressible,
    merge_protocols,
    plain,
    port_runs,
    port_text,
)
from sandboxkit.egress_contract import CONNECTION_PROTOCOLS, EgressContract, parse_rule

DOC: Basis = "platform-doc"
NFW = "Network Firewall RulesSourceList: a target '.x' matches x and every name below it"
HERE = "tests/core/test_effective_egress.py"
CILIUM = "Cilium toFQDNs matchPattern: '*' matches one DNS label (cilium/cilium#22081)"


def name_grant(host: str, scope: Any = "exact", ports: Any = frozenset({443}), **kw: Any) -> Grant:
    fields = {"enforced": "name-l7", "basis": "kit-code", "source": HERE}
    return Grant(host, scope, ports, **{**fields, **kw})


def dns(host: str, scope: Any = "exact") -> Grant:
    return Grant(host, scope, "any", "query-name", DOC, "Route 53 Resolver DNS Firewall")


def nfw(host: str, scope: Any, ports: frozenset[int]) -> Grant:
    return Grant(host, scope, ports, "claimed-name", DOC, NFW)


def fqdn(host: str) -> Grant:
    return Grant(host, "one-label", frozenset({443}), "resolved-address", DOC, CILIUM)


def everywhere(
    excluded: Sequence[str] = NON_PUBLIC_IPV4, block: str = "0.0.0.0/0", **kw: Any
) -> Grant:
    return Grant(
        block, "exact", "any", "address", DOC, "NetworkPolicy", excluded=tuple(excluded), **kw
    )


TCP = {"tls", "http", "tcp"}
NAME_L7 = "name at L7 (SNI/Host checked against the destination)"


# --- Grant --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("exact", [False, True, False, False, False]),
        ("below", [False, False, True, True, False]),
        ("one-label", [False, False, True, False, False]),
        ("exact-and-below", [False, True, True, True, False]),
    ],
)
def test_a_name_grant_matches_by_its_scope(scope: Any, expected: list[bool]) -> None:
    grant = name_grant("Example.COM.", scope)
    names = ["com", "example.com", "a.example.com", "a.b.example.com", "badexample.com"]
    assert [grant.matches_name(n) for n in names] == expected
    assert grant.host == "example.com"


def test_an_address_grant_holds_its_block_less_its_exclusions() -> None:
    grant = everywhere()
    assert grant.matches_address(parse_ip("8.8.8.8"))
    assert not grant.matches_address(parse_ip("169.254.169.254"))
    assert not grant.matches_address(parse_ip("2001:4860::1"))
    assert grant.opens_every_open_address()
    single = Grant("[2001:4860::1]", "exact", frozenset({853}), "address", DOC, "ipBlock")
    assert single.host == "2001:4860::1/128" and not single.opens_every_open_address()
    # Excluding a public block means not every open address is reachable.
    assert not everywhere(("8.0.0.0/8",)).opens_every_open_address()


def parse_ip(text: str) -> Any:
    import ipaddress

    return ipaddress.ip_address(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"host": "example.com", "source": ""}, "grant example.com: a source citation is required"),
        ({"host": "example.com", "ports": frozenset()}, "ports are 'any' or a set of 1 to 65535"),
        ({"host": "example.com", "ports": frozenset({70000})}, "ports are 'any' or a set"),
        ({"host": "*", "scope": "exact"}, "host '*' goes with scope any, only"),
        ({"host": "example.com", "scope": "any"}, "host '*' goes with scope any, only"),
        ({"host": "localhost"}, "name grant localhost: not a fully qualified DNS name"),
        ({"host": "example.com", "excluded": ("10.0.0.0/8",)}, "only address grants exclude"),
        (
            {"host": "10.0.0.0/8", "enforced": "address", "scope": "below"},
            "address grant 10.0.0.0/8: scope is exact, not below",
        ),
        (
            {"host": "10.0.0.0/8", "enforced": "address", "excluded": ("11.0.0.0/8",)},
            "exclusions ['11.0.0.0/8'] are not inside it",
        ),
        ({"host": "example.com", "enforced": "address"}, "address grant example.com:"),
    ],
)
def test_malformed_grants_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        name_grant(**kwargs)
    assert message in str(caught.value)


# --- EffectiveEgress ------------------------------------------------------------------------------


def test_admits_answers_with_the_admitting_grants() -> None:
    exact = name_grant("pypi.org")
    wide = nfw("pythonhosted.org", "exact-and-below", frozenset({443}))
    ip = Grant("8.8.8.8", "exact", frozenset({53}), "address", DOC, "security group rule")
    effective = EffectiveEgress("aws-microvm", (exact, wide, ip), (dns("pypi.org"),))
    assert effective.admits("PyPI.org.", 443, "tls").grants == (exact,)
    assert effective.admits("pypi.org", 80, "http").admitted is False
    verdict = effective.admits("pythonhosted.org", 443, "tls")
    assert verdict.grants == (wide,) and verdict.enforced == ("claimed name only",)
    assert effective.admits("8.8.8.8", 53, "tcp").grants == (ip,)
    assert not effective.admits("8.8.8.8", 443, "tcp")
    assert not effective.admits("dns.google", 53, "tls")  # an address grant is not a name grant
    assert not effective.admits("not a host", 443, "tls")
    assert effective.resolves("pypi.org").grants == (dns("pypi.org"),)
    assert not effective.resolves("files.pythonhosted.org")
    assert not effective.resolves("8.8.8.8")


def test_a_name_reaches_through_an_address_grant_only_when_it_opens_every_public_address() -> None:
    public = everywhere()
    some = Grant("8.8.8.0/24", "exact", "any", "address", DOC, "NetworkPolicy")
    assert EffectiveEgress("kubernetes", (public,), ()).admits("pypi.org", 22, "tls").grants == (
        public,
    )
    assert not EffectiveEgress("kubernetes", (some,), ()).admits("dns.google", 443, "tls")


@pytest.mark.parametrize(
    ("grant", "admitted"),
    [
        # Matched by SNI or Host: TLS and HTTP only, never plain TCP (nothing names the host).
        (name_grant("pypi.org"), {"tls", "http"}),
        (nfw("pypi.org", "exact", frozenset({443})), {"tls", "http"}),
        (name_grant("pypi.org", protocols=frozenset({"tls"})), {"tls"}),
        # Matched by the addresses the name resolved to: any TCP to them, plain TCP too.
        (Grant("pypi.org", "exact", frozenset({443}), "resolved-address", DOC, CILIUM), TCP),
        (everywhere(), TCP),
        (everywhere(protocols=frozenset({"udp"})), {"udp"}),
    ],
)
def test_a_grant_admits_the_protocols_of_how_it_is_matched(
    grant: Grant, admitted: set[str]
) -> None:
    effective = EffectiveEgress("t", (grant,), ())
    asked = CONNECTION_PROTOCOLS
    assert {p for p in asked if effective.admits("pypi.org", 443, p)} == admitted


def test_grants_matched_by_name_refuse_protocols_that_carry_no_name() -> None:
    for protocol in ("tcp", "udp"):
        with pytest.raises(ValueError, match="matched by name, it admits tls or http only"):
            name_grant("pypi.org", protocols=frozenset({"tls", protocol}))
    with pytest.raises(ValueError, match="a query has no protocols"):
        Grant("pypi.org", "exact", "any", "query-name", DOC, "r", protocols=frozenset({"udp"}))
    with pytest.raises(ValueError, match=r"protocols \['quic'\] are not protocols"):
        everywhere(protocols=frozenset({"quic"}))
    assert dns("pypi.org").protocols == frozenset()


def test_a_grant_names_protocols_narrower_than_its_matching_admits() -> None:
    tls = name_grant("pypi.org", protocols=frozenset({"tls"}))
    assert str(tls) == f"pypi.org (exact) on 443 (tls only), {NAME_L7} [kit-code: {HERE}]"
    assert str(name_grant("pypi.org")) == f"pypi.org (exact) on 443, {NAME_L7} [kit-code: {HERE}]"


def test_a_names_tls_and_http_grants_merge_into_one() -> None:
    tls = name_grant("pypi.org", protocols=frozenset({"tls"}))
    http = name_grant("pypi.org", protocols=frozenset({"http"}))
    other = name_grant("github.com", protocols=frozenset({"http"}))
    assert merge_protocols([tls, other, http, tls]) == (name_grant("pypi.org"), other)


def test_grants_are_checked_for_their_question() -> None:
    with pytest.raises(ValueError, match="query-name, on any port"):
        EffectiveEgress("t", (), (name_grant("pypi.org"),))
    with pytest.raises(ValueError, match="query-name is for resolution"):
        EffectiveEgress("t", (dns("pypi.org"),), ())


# --- Probes ---------------------------------------------------------------------------------------


def test_probes_derived_from_a_stacks_entries() -> None:
    listed = ("files.pythonhosted.org", "*.example.com", "github.com:80", "140.82.112.3:53")
    entries = [parse_rule(e) for e in listed]
    control = [parse_rule("agents.example.net")]
    # Each name entry (control-plane hosts too) gets a plain-TCP probe, no SNI and no Host;
    # names speak HTTP on 80 and TLS elsewhere, addresses plain TCP.
    probes = derive_probes(entries, control)
    assert [(str(p), p.protocol, p.kind, p.origin) for p in probes] == [
        ("files.pythonhosted.org:443", "tls", "entry", "files.pythonhosted.org:443"),
        ("files.pythonhosted.org:443", "tcp", "plain-tcp", "files.pythonhosted.org:443"),
        ("sbx-probe.files.pythonhosted.org:443", "tls", "one-below", "files.pythonhosted.org:443"),
        (
            "sbx-probe-2.sbx-probe.files.pythonhosted.org:443",
            "tls",
            "two-below",
            "files.pythonhosted.org:443",
        ),
        ("pythonhosted.org:443", "tls", "apex", "files.pythonhosted.org:443"),
        ("files.pythonhosted.org:53", "tls", "other-port", "files.pythonhosted.org:443"),
        ("files.pythonhosted.org:80", "http", "other-port", "files.pythonhosted.org:443"),
        ("sbx-probe.example.com:443", "tcp", "plain-tcp", "*.example.com:443"),
        ("sbx-probe.example.com:443", "tls", "one-below", "*.example.com:443"),
        ("sbx-probe-2.sbx-probe.example.com:443", "tls", "two-below", "*.example.com:443"),
        ("example.com:443", "tls", "apex", "*.example.com:443"),
        ("sbx-probe.example.com:53", "tls", "other-port", "*.example.com:443"),
        ("sbx-probe.example.com:80", "http", "other-port", "*.example.com:443"),
        ("github.com:80", "http", "entry", "github.com:80"),
        ("github.com:80", "tcp", "plain-tcp", "github.com:80"),
        ("sbx-probe.github.com:80", "http", "one-below", "github.com:80"),
        ("sbx-probe-2.sbx-probe.github.com:80", "http", "two-below", "github.com:80"),
        ("github.com:53", "tls", "other-port", "github.com:80"),
        ("github.com:443", "tls", "other-port", "github.com:80"),
        ("140.82.112.3:53", "tcp", "entry", "140.82.112.3:53"),
        ("140.82.112.3:80", "tcp", "other-port", "140.82.112.3:53"),
        ("140.82.112.3:443", "tcp", "other-port", "140.82.112.3:53"),
        ("agents.example.net:443", "tls", "entry", "agents.example.net:443"),
        ("agents.example.net:443", "tcp", "plain-tcp", "agents.example.net:443"),
        ("sbx-probe.agents.example.net:443", "tls", "one-below", "agents.example.net:443"),
        (
            "sbx-probe-2.sbx-probe.agents.example.net:443",
            "tls",
            "two-below",
            "agents.example.net:443",
        ),
        ("example.net:443", "tls", "apex", "agents.example.net:443"),
        ("agents.example.net:53", "tls", "other-port", "agents.example.net:443"),
        ("agents.example.net:80", "http", "other-port", "agents.example.net:443"),
        ("169.254.169.254:80", "tcp", "metadata", ""),
        ("[64:ff9b::a9fe:a9fe]:80", "tcp", "metadata-nat64", ""),
    ]


def test_one_port_stacks_probe_8443() -> None:
    probes = derive_probes([parse_rule("pypi.org")])
    assert [str(p) for p in probes if p.kind == "other-port"] == ["pypi.org:8443"]


# --- Comparison -----------------------------------------------------------------------------------

ENTRIES = ("pypi.org:443", "*.pythonhosted.org:443", "github.com:80")


def contract() -> EgressContract:
    return EgressContract("allowlist", tuple(parse_rule(e) for e in ENTRIES))


def differences(connect: Sequence[Grant], resolve: Sequence[Grant]) -> list[str]:
    effective = EffectiveEgress("t", tuple(connect), tuple(resolve))
    found = compare(effective, contract(), derive_probes(contract().rules))
    return [
        f"{d.direction} {d.question} {d.probe}"
        + (f" {d.probe.protocol}" * (d.question == "connect"))
        for d in found
    ]


EXACT_MATCH = (
    [
        name_grant("pypi.org"),
        name_grant("pythonhosted.org", "below"),
        name_grant("github.com", ports=frozenset({80})),
    ],
    [dns("pypi.org"), dns("pythonhosted.org", "below"), dns("github.com")],
)


def test_a_target_that_does_what_the_contract_says_has_no_difference() -> None:
    assert differences(*EXACT_MATCH) == []


def test_issue_12_primitives_show_as_differences() -> None:
    # Network Firewall: '.x' admits the apex, and the domain list has no port, so every name
    # is open on both 80 and 443.
    both = frozenset({80, 443})
    firewall = [
        nfw("pypi.org", "exact", both),
        nfw("pythonhosted.org", "exact-and-below", both),
        nfw("github.com", "exact", both),
    ]
    assert differences(firewall, EXACT_MATCH[1]) == [
        "wider connect pypi.org:80 http",
        "wider connect pythonhosted.org:443 tls",
        "wider connect sbx-probe.pythonhosted.org:80 http",
        "wider connect github.com:443 tls",
    ]
    # Cilium: '*.x' is one label deep, so two labels below is refused; toFQDNs without
    # serverNames matches by resolved address, so plain TCP (no SNI) passes.
    cilium = [EXACT_MATCH[0][0], fqdn("pythonhosted.org"), EXACT_MATCH[0][2]]
    resolve = [dns("pypi.org"), dns("pythonhosted.org", "one-label"), dns("github.com")]
    assert differences(cilium, resolve) == [
        "wider connect sbx-probe.pythonhosted.org:443 tcp",
        "narrower connect sbx-probe-2.sbx-probe.pythonhosted.org:443 tls",
        "narrower resolve sbx-probe-2.sbx-probe.pythonhosted.org:443",
    ]


def test_open_address_grants_admitting_the_nat64_metadata_form_are_wider() -> None:
    open_contract = EgressContract("open")
    six = everywhere(("fc00::/7", "fe80::/10", "::1/128"), "::/0")
    effective = EffectiveEgress("kubernetes", (six,), (dns("*", "any"),))
    found = compare(effective, open_contract, derive_probes([]))
    assert [str(d) for d in found] == [
        "wider: [64:ff9b::a9fe:a9fe]:80 over tcp is admitted by ::/0 except fc00::/7, fe80::/10, "
        "::1/128 on every port, address [platform-doc: NetworkPolicy]; the contract refuses it"
    ]


@pytest.mark.parametrize(
    ("ports", "text"),
    [
        ({443}, "443"),
        ({443, 80, 53}, "53/80/443"),
        ({443, 444}, "443-444"),
        ({53, 80, *range(443, 8444)}, "53/80/443-8443"),
        ({1, 3, 4, 5, 7}, "1/3-5/7"),
    ],
)
def test_ports_print_in_order_with_each_consecutive_run_as_a_range(
    ports: set[int], text: str
) -> None:
    assert port_text(ports) == text


def test_a_grant_on_a_port_range_differs_once_per_run_of_consecutive_ports() -> None:
    # A Cilium toPorts with endPort: 443-8443 on a name the contract admits on 443 only.
    ranged = name_grant("example.com", ports=frozenset(range(443, 8444)), resource="cnp")
    other = name_grant("example.org", ports=frozenset({22, 23}), resource="cnp")
    effective = EffectiveEgress("kubernetes", (ranged, other), (dns("example.com"),))
    contract = EgressContract("allowlist", (parse_rule("example.com:443"),))
    found = compare(effective, contract, derive_probes(contract.rules, grants=(ranged, other)))
    assert len(found) == 8_000 + 2  # 444 to 8443 on example.com; 22 and 23 on example.org
    by = f"on 443-8443, name at L7 (SNI/Host checked against the destination) [kit-code: {HERE}]"
    assert [d.describe(last) for d, last in port_runs(found)] == [
        f"wider: example.com:8443 over tls (other-port of example.com:443) is admitted by "
        f"example.com (exact) {by}; the contract refuses it",
        f"wider: example.com:444-8442 over tls (grant of cnp) is admitted by example.com (exact) "
        f"{by}; the contract refuses it",
        "wider: example.org:22-23 over tls (grant of cnp) is admitted by example.org (exact) on "
        f"22-23, name at L7 (SNI/Host checked against the destination) [kit-code: {HERE}]; the "
        "contract refuses it",
    ]
    # Alone, a difference reads as before: one probe, one port.
    assert (
        str(found[1])
        == found[1].describe()
        == (
            f"wider: example.com:444 over tls (grant of cnp) is admitted by example.com (exact) "
            f"{by}; the contract refuses it"
        )
    )


def test_inexpressible_grants_are_flagged_without_a_profile() -> None:
    wide = nfw("pythonhosted.org", "exact-and-below", frozenset({443}))
    every_port = name_grant("pypi.org", ports="any")
    cilium = fqdn("example.com")
    fine = name_grant("github.com")
    open_names = name_grant("*", "any", "any")
    effective = EffectiveEgress(
        "t", (wide, every_port, cilium, fine, open_names), (dns("example.com", "one-label"),)
    )
    assert [(f.kind, f.question, f.grant.host) for f in inexpressible(effective)] == [
        ("apex-by-wildcard", "connect", "pythonhosted.org"),
        ("claimed-name-only", "connect", "pythonhosted.org"),
        ("name-on-every-port", "connect", "pypi.org"),
        ("one-label-wildcard", "connect", "example.com"),
        ("resolved-address-only", "connect", "example.com"),
        ("one-label-wildcard", "resolve", "example.com"),
    ]
    assert str(Inexpressible("name-on-every-port", "connect", every_port)) == (
        "connect pypi.org (exact) on every port, name at L7 (SNI/Host checked against the "
        "destination) [kit-code: tests/core/test_effective_egress.py]: a name on every port; a "
        "contract entry names one port"
    )


# --- Resource views -------------------------------------------------------------------------------


class Proxy(Mapping[str, Any]):
    """A stand-in for pulumi-policy's read-only input proxies: a Mapping, not a dict."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        return Proxy(value) if isinstance(value, dict) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_a_resource_view_holds_plain_values_from_proxies_and_dicts() -> None:
    props = {"spec": {"egress": [{"to": [{"ipBlock": {"cidr": "8.8.8.8/32"}}]}], "n": (1.0, 2.5)}}
    view = ResourceView.of("kubernetes:networking.k8s.io/v1:NetworkPolicy", "np", Proxy(props))
    # Sequences become lists, and the render's integral floats ints.
    assert view.props == {**props, "spec": {**props["spec"], "n": [1, 2.5]}}
    assert type(view.at("spec.n.0")) is int
    assert type(view.props["spec"]) is dict
    assert view.at("spec.egress.0.to.0.ipBlock.cidr") == "8.8.8.8/32"
    assert view.at("spec.egress.1") is None and view.at("spec.missing.x") is None
    with pytest.raises(TypeError, match="object is not JSON-like"):
        plain({"x": object()})


def test_probe_text_brackets_ipv6() -> None:
    assert str(Probe("2001:db8::1", 443, "tcp", "entry")) == "[2001:db8::1]:443"
