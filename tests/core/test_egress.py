"""The allowlist entry parser: what it accepts, how it normalises, and what it refuses."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandboxkit.egress import EgressRule, parse_rule


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("pypi.org", EgressRule("pypi.org", 443, "name")),
        ("PyPI.org.:8443", EgressRule("pypi.org", 8443, "name")),
        ("*.pythonhosted.org:443", EgressRule("pythonhosted.org", 443, "wildcard")),
        ("8.8.8.8:8080", EgressRule("8.8.8.8", 8080, "ip")),
        ("[2001:4860:4860::8888]:853", EgressRule("2001:4860:4860::8888", 853, "ip")),
        ("2001:4860:4860::8888", EgressRule("2001:4860:4860::8888", 443, "ip")),
    ],
)
def test_accepts_and_normalises(entry: str, expected: EgressRule) -> None:
    assert parse_rule(entry) == expected


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("*", "every destination"),
        ("0.0.0.0/0", "every destination"),
        ("::/0", "every destination"),
        ("*:443", "every destination"),
        ("10.0.0.0/8", "CIDR blocks"),
        ("169.254.169.254", "not a public address"),
        ("10.1.2.3:443", "not a public address"),
        ("192.168.0.10", "not a public address"),
        ("100.64.0.1", "not a public address"),
        ("127.0.0.1", "not a public address"),
        ("[::1]:443", "not a public address"),
        ("[fe80::1]", "not a public address"),
        ("fd00::1", "not a public address"),
        ("*.com", "top-level domain"),
        ("localhost", "internal or metadata name"),
        ("pypi", "fully qualified"),
        ("pypi.*.org", "wildcard only as a leading"),
        ("https://pypi.org", "without a scheme"),
        ("user@pypi.org", "without a scheme"),
        ("pypi.org:0", "port '0'"),
        ("pypi.org:65536", "port '65536'"),
        ("pypi.org:https", "port 'https'"),
        ("-bad-.org", "letters, digits and hyphens"),
        ("metadata.google.internal", "internal or metadata name"),
        ("instance-data.ec2.internal", "internal or metadata name"),
        ("metadata.goog", "internal or metadata name"),
        ("kubernetes.default.svc", "internal or metadata name"),
        ("*.cluster.local", "internal or metadata name"),
        ("kubernetes.default", "internal or metadata name"),
        ("127.1", "numeric name"),
        ("10.0.0.1.2", "numeric name"),
    ],
)
def test_refuses(entry: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_rule(entry)


def test_str_round_trips_through_the_parser() -> None:
    for entry in ("pypi.org:443", "*.pythonhosted.org:443", "[2001:4860:4860::8844]:8443"):
        rule = parse_rule(entry)
        assert parse_rule(str(rule)) == rule


@given(st.ip_addresses())
def test_no_non_public_address_is_ever_accepted(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    entry = f"[{ip}]:443" if ip.version == 6 else f"{ip}:443"
    try:
        rule = parse_rule(entry)
    except ValueError:
        return
    assert ip.is_global, f"{entry} was accepted but is not a public address"
    assert rule.kind == "ip"
