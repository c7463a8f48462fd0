"""Public DNS resolvers and platform endpoints on public-looking addresses: refused as one kind.

Issue 15 §2: ``168.63.129.16`` (Azure's platform endpoint), ``8.8.8.8:53`` and
``dns.google:853`` were accepted allowlist entries. Each is now refused, by address (IPv4,
IPv6, an IPv6 form of a listed IPv4) and by name (at, below, or a wildcard above a listed
name), on any port, in every target's allowlist and control-plane hosts, and by the pack.
"""

from __future__ import annotations

from ipaddress import ip_address
from pathlib import Path
from typing import Any

import pytest

from sandboxkit.addresses import judge_address
from sandboxkit.config import ConfigSource, load_stack, read_stack_file
from sandboxkit.dns_names import channel_endpoints, is_below
from sandboxkit.egress_contract import EgressRule, parse_rule
from sandboxkit.errors import ConfigError, Problem
from sandboxkit.guard_checks import cidr_problems, entries_problems

PROJECT = Path(__file__).resolve().parents[2]
PROD = read_stack_file(PROJECT / "stacks" / "Pulumi.prod.yaml")
KEY = "sandboxkit:profile.egress.allow[1]"
ENTRY = "a specific public host[:port] entry: "
GOOGLE = "https://developers.google.com/speed/public-dns/docs/using"
GOOGLE_TLS = "https://developers.google.com/speed/public-dns/docs/secure-transports"
CLOUDFLARE_DOH = "https://developers.cloudflare.com/1.1.1.1/encryption/"
AZURE = "https://learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16"
# Spelled out here, not imported, so a changed message fails a test.
DNS_WHY = (
    "a public DNS resolver answers for any name, so it gives sandbox code a general DNS "
    "channel to anywhere, on any port (DNS, DNS over TLS or HTTPS); sandboxes resolve names "
    "only through their target's own resolver, which the kit sets and enforces: list the hosts "
    "sandboxes need instead"
)
PLATFORM_WHY = (
    "a cloud platform's own endpoint on a public-looking address, serving the host (its agent, "
    "metadata or DNS), not the internet; sandboxes may reach public hosts only: list the hosts "
    "sandboxes need instead"
)
PARTIAL = (
    " (the kit's list of such endpoints is partial: each target's resolution and egress "
    "controls stop the rest)"
)
GOOGLE_DNS = f"Google Public DNS ({GOOGLE}): {DNS_WHY}{PARTIAL}"
DNS_GOOGLE = (
    f"Google Public DNS over TLS (port 853) and HTTPS (port 443) ({GOOGLE_TLS}): {DNS_WHY}{PARTIAL}"
)
CLOUDFLARE = (
    "Cloudflare's DNS over HTTPS and TLS (security. and family. names below it too) "
    f"({CLOUDFLARE_DOH}): {DNS_WHY}{PARTIAL}"
)


def problems(target: str, profile: dict[str, Any], **settings: Any) -> list[Problem]:
    values = {
        "environment": "prod",
        "targets": [target],
        "profile": profile,
        target: {**PROD.values[target], **settings},
    }
    with pytest.raises(ConfigError) as caught:
        load_stack(ConfigSource(values=values, secret_paths=PROD.secret_paths), "prod")
    return list(caught.value.problems)


def allow(entry: str) -> dict[str, Any]:
    return {"egress": {"mode": "allowlist", "allow": ["pypi.org", entry]}}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        # Plain DNS to a resolver's address.
        ("8.8.8.8:53", f"8.8.8.8 is {GOOGLE_DNS}"),
        # The same resolver on 443 is DNS over HTTPS; on 853 DNS over TLS: any port is refused.
        ("8.8.8.8", f"8.8.8.8 is {GOOGLE_DNS}"),
        ("[2001:4860:4860::8888]:853", f"2001:4860:4860::8888 is {GOOGLE_DNS}"),
        # Written long-hand, the IPv6 address is compared once compressed.
        ("[2001:4860:4860:0:0:0:0:8844]:443", f"2001:4860:4860::8844 is {GOOGLE_DNS}"),
        ("dns.google:853", f"dns.google is {DNS_GOOGLE}"),
        ("dns.google", f"dns.google is {DNS_GOOGLE}"),
        # Upper case and a trailing dot are normalised before the list is read.
        ("DNS.Google.:443", f"dns.google is {DNS_GOOGLE}"),
        ("*.dns.google", f"*.dns.google reaches dns.google, {DNS_GOOGLE}"),
        (
            "security.cloudflare-dns.com:443",
            f"security.cloudflare-dns.com reaches cloudflare-dns.com, {CLOUDFLARE}",
        ),
        ("cloudflare-dns.com:853", f"cloudflare-dns.com is {CLOUDFLARE}"),
        (
            "168.63.129.16:80",
            "168.63.129.16 is Azure's platform endpoint (VM agent, extensions, DNS, health "
            f"probes) ({AZURE}): {PLATFORM_WHY}{PARTIAL}",
        ),
        # An IPv6 form of a listed IPv4 address is refused for the resolver, not rewritten to it.
        (
            "[64:ff9b::808:808]:443",
            "64:ff9b::808:808 is an IPv6 form of 8.8.8.8 (NAT64 well-known prefix, RFC 6052); "
            f"the kit reaches an IPv4 destination by its IPv4 form only; 8.8.8.8 is {GOOGLE_DNS}",
        ),
    ],
)
def test_a_listed_endpoint_exits_2_naming_the_key_value_reason_and_resolver(
    entry: str, message: str
) -> None:
    assert problems("kubernetes", allow(entry)) == [Problem(KEY, entry, ENTRY + message)]


# Issue 32: an ISATAP identifier under a public prefix is a public address, and it passed in
# prod though it spells 8.8.8.8. Every form is unwrapped before the list is read, whether the
# form's prefix already makes the address non-public (NAT64, 6to4, Teredo, mapped, compatible,
# SIIT: refused as non-public, naming the resolver) or not (ISATAP: refused as the resolver).
@pytest.mark.parametrize(
    ("entry", "address"),
    [
        ("[2600:1f18::200:5efe:808:808]:443", "2600:1f18::200:5efe:808:808"),
        ("[2600:1f18::5efe:808:808]:853", "2600:1f18::5efe:808:808"),
        ("[2600:1f18::200:5efe:8.8.4.4]", "2600:1f18::200:5efe:808:404"),
    ],
)
def test_an_isatap_form_of_a_resolver_is_refused_as_the_resolver(entry: str, address: str) -> None:
    resolver = "8.8.4.4" if address.endswith("404") else "8.8.8.8"
    message = f"{address} is an IPv6 form of {resolver}, {GOOGLE_DNS}"
    assert problems("kubernetes", allow(entry)) == [Problem(KEY, entry, ENTRY + message)]


@pytest.mark.parametrize(
    "entry",
    [
        "[64:ff9b::808:808]",  # NAT64 well-known prefix
        "[64:ff9b:1::808:808]",  # NAT64 local-use prefix, /96 position
        "[2002:808:808::1]",  # 6to4
        "[2001:0:808:808::1]",  # Teredo server
        "[2001:0:1:1::f7f7:f7f7]",  # Teredo client (8.8.8.8 inverted)
        "[fe80::200:5efe:808:808]",  # ISATAP under a non-public prefix
        "[::ffff:8.8.8.8]",  # IPv4-mapped
        "[::8.8.8.8]",  # IPv4-compatible
        "[::ffff:0:808:808]",  # SIIT
    ],
)
def test_every_ipv6_form_of_a_resolver_is_refused_naming_it(entry: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(entry)
    assert "8.8.8.8" in str(caught.value)
    assert str(caught.value).endswith(f"8.8.8.8 is {GOOGLE_DNS}")


def test_the_pack_reports_an_isatap_form_of_a_resolver() -> None:
    assert list(cidr_problems("NetworkPolicy", "sbx", "2600:1f18::200:5efe:808:808/128", ())) == [
        "NetworkPolicy sbx allows 2600:1f18::200:5efe:808:808/128: 2600:1f18::200:5efe:808:808 "
        f"is an IPv6 form of 8.8.8.8, {GOOGLE_DNS}. Replace it with the exact public hosts "
        "sandboxes need."
    ]


def test_an_isatap_form_of_a_public_host_is_still_accepted() -> None:
    assert parse_rule("[2600:1f18::200:5efe:8c52:7003]") == EgressRule(
        "2600:1f18::200:5efe:8c52:7003", 443, "ip"
    )


@pytest.mark.parametrize(
    ("entry", "rule"),
    [
        # Near misses: one address off, one hextet off, a name that only looks like the resolver.
        ("8.8.8.9:53", EgressRule("8.8.8.9", 53, "ip")),
        ("[2001:4860:4860::8889]:853", EgressRule("2001:4860:4860::8889", 853, "ip")),
        ("1.1.1.4", EgressRule("1.1.1.4", 443, "ip")),
        ("mydns.google:853", EgressRule("mydns.google", 853, "name")),
        (
            "cloudflare-dns.com.example.org",
            EgressRule("cloudflare-dns.com.example.org", 443, "name"),
        ),
        ("168.63.129.17", EgressRule("168.63.129.17", 443, "ip")),
    ],
)
def test_a_near_miss_is_still_accepted(entry: str, rule: EgressRule) -> None:
    assert parse_rule(entry) == rule


@pytest.mark.parametrize("target", PROD.values["targets"])
def test_every_target_refuses_the_same_entry(target: str) -> None:
    # The contract is parsed once (sandboxkit.egress_contract); no target reads its allowlist
    # around it.
    found = problems(target, allow("dns.google:853"))
    assert Problem(KEY, "dns.google:853", f"{ENTRY}dns.google is {DNS_GOOGLE}") in found


def test_control_plane_hosts_refuse_a_resolver_too() -> None:
    found = problems("aws-microvm", {}, controlPlaneHosts=["telemetry.example.com", "1.1.1.1:443"])
    assert [(p.key, p.value) for p in found] == [
        ("sandboxkit:aws-microvm.controlPlaneHosts[1]", "1.1.1.1:443")
    ]
    assert "1.1.1.1 is Cloudflare's 1.1.1.1 resolver" in found[0].expected


def test_the_pack_reports_a_resolver_in_a_rendered_allowlist() -> None:
    (problem,) = entries_problems("FQDN policy", "sbx", ["pypi.org:443", "dns.google:853"])
    assert problem == (
        f"FQDN policy sbx allows 'dns.google:853': dns.google is {DNS_GOOGLE}. Replace it with "
        "the exact public hosts sandboxes need."
    )


@pytest.mark.parametrize(
    ("cidr", "expected"),
    [
        (
            "8.8.8.8/32",
            [
                f"NetworkPolicy sbx allows 8.8.8.8/32: 8.8.8.8 is {GOOGLE_DNS}. Replace it with "
                "the exact public hosts sandboxes need."
            ],
        ),
        (
            "2001:4860:4860::8888/128",
            [
                "NetworkPolicy sbx allows 2001:4860:4860::8888/128: 2001:4860:4860::8888 is "
                f"{GOOGLE_DNS}. Replace it with the exact public hosts sandboxes need."
            ],
        ),
        ("140.82.112.3/32", []),
        # A list of addresses judges single-address rules only; a wider public block is not
        # read as reaching the resolvers inside it (the config path never renders one).
        ("8.8.8.0/24", []),
    ],
)
def test_the_pack_reports_a_rule_to_a_listed_address(cidr: str, expected: list[str]) -> None:
    assert list(cidr_problems("NetworkPolicy", "sbx", cidr, ())) == expected


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.253",  # Amazon-provided DNS (AWS), link-local
        "169.254.169.123",  # Amazon Time Sync, link-local
        "169.254.169.254",  # AWS, Azure and Google metadata, link-local
        "fd00:ec2::253",  # Amazon-provided DNS over IPv6, unique-local
        "fd00:ec2::254",  # AWS IMDS over IPv6, unique-local
        "100.100.100.200",  # Alibaba Cloud metadata, shared address space
    ],
)
def test_platform_endpoints_in_non_public_space_need_no_line(address: str) -> None:
    # The data file's header names these; they are refused as not public already.
    assert not judge_address(ip_address(address)).public
    assert all(endpoint.host != address for endpoint in channel_endpoints())
    with pytest.raises(ValueError, match="sandboxes may reach public hosts only"):
        parse_rule(address)


def test_the_list_has_a_source_per_line_and_no_redundant_line() -> None:
    endpoints = channel_endpoints()
    hosts = [endpoint.host for endpoint in endpoints]
    assert len(hosts) == len(set(hosts))
    assert all(endpoint.source.startswith("https://") for endpoint in endpoints)
    names = [endpoint.host for endpoint in endpoints if endpoint.address is None]
    assert not [(a, b) for a in names for b in names if is_below(a, b)]
    # A listed address the IANA table already refuses would never be reached by the list.
    addresses = [endpoint.address for endpoint in endpoints if endpoint.address is not None]
    assert all(judge_address(address).public for address in addresses)
    assert {"8.8.8.8", "2001:4860:4860::8888", "1.1.1.1", "9.9.9.9", "208.67.222.222"} <= set(hosts)
    assert {"168.63.129.16", "dns.google", "cloudflare-dns.com", "one.one.one.one"} <= set(hosts)
