"""kubernetes settings for sandbox DNS and Cilium: the exact exit-2 errors, each naming its key."""

from __future__ import annotations

from typing import Any

import pytest

from sandboxkit.config import ConfigSource, StackSpec, load_stack
from sandboxkit.errors import ConfigError

BASE = {
    "context": "kind-test",
    "image": "example.com/sandbox:1",
    "fqdnPolicy": "cilium",
    "resolver": {"image": "example.com/resolver:1"},
}
NAMES = {"egress": {"mode": "allowlist", "allow": ["pypi.org", "*.pythonhosted.org"]}}


def load(profile: dict[str, Any], **settings: Any) -> StackSpec:
    values = {
        "environment": "prod",
        "targets": ["kubernetes"],
        "profile": profile,
        "kubernetes": {**BASE, **settings},
    }
    return load_stack(ConfigSource(values=values), "test")


def problems(profile: dict[str, Any], **settings: Any) -> dict[str, tuple[object, str]]:
    with pytest.raises(ConfigError) as caught:
        load(profile, **settings)
    return {p.key: (p.value, p.expected) for p in caught.value.problems}


def test_a_wildcard_on_cilium_before_1_19_names_the_version_and_the_alternatives() -> None:
    assert problems(NAMES, ciliumVersion="1.18.4") == {
        "sandboxkit:kubernetes.ciliumVersion": (
            "1.18",
            "1.19 or later for the wildcard entries *.pythonhosted.org:443: earlier Cilium "
            "reads '**.' as '*', one label only (cilium/cilium PR #43420). List each name the "
            "sandboxes need instead, or upgrade Cilium",
        )
    }


def test_exact_names_work_on_cilium_1_13() -> None:
    profile = {"egress": {"mode": "allowlist", "allow": ["pypi.org"]}}
    plan = load(profile, ciliumVersion="1.13").plans["kubernetes"]
    assert plan["cilium_version"] == (1, 13)
    assert plan["resolver"]["config"].splitlines()[-2:] == [
        "server=/pypi.org/10.96.0.10#53",
        "address=/*.pypi.org/",
    ]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.12", "Cilium 1.13 or later: the first release that enforces TLS serverNames"),
        ("latest", "a Cilium version such as 1.19 or 1.18.4"),
    ],
)
def test_unusable_cilium_versions_are_refused(version: str, expected: str) -> None:
    found = problems(NAMES, ciliumVersion=version)
    assert list(found) == ["sandboxkit:kubernetes.ciliumVersion"]
    assert expected in found["sandboxkit:kubernetes.ciliumVersion"][1]


def test_names_need_the_resolver_image() -> None:
    settings = {**BASE, "resolver": {}}
    values = {
        "environment": "prod",
        "targets": ["kubernetes"],
        "profile": NAMES,
        "kubernetes": settings,
    }
    with pytest.raises(ConfigError) as caught:
        load_stack(ConfigSource(values=values), "test")
    assert [(p.key, p.value) for p in caught.value.problems] == [
        ("sandboxkit:kubernetes.resolver.image", None)
    ]


def test_deny_needs_no_resolver() -> None:
    plan = load({"egress": {"mode": "deny"}}, resolver={}).plans["kubernetes"]
    assert "resolver" not in plan


@pytest.mark.parametrize(
    ("resolver", "upstream", "address"),
    [
        ({}, "kube-dns", "10.96.0.10"),
        ({"kubeDnsAddress": "10.43.0.10"}, "kube-dns", "10.43.0.10"),
        ({"upstream": "node-local-dns"}, "node-local-dns", "169.254.20.10"),
        ({"upstream": "metadata-server"}, "metadata-server", "169.254.169.254"),
    ],
)
def test_the_resolver_upstream(resolver: dict[str, str], upstream: str, address: str) -> None:
    settings = {"image": "example.com/resolver:1", **resolver}
    planned = load(NAMES, resolver=settings).plans["kubernetes"]["resolver"]
    assert (planned["upstream"], planned["upstream_address"]) == (upstream, address)
    assert f"server=/pypi.org/{address}#53" in planned["config"].splitlines()


@pytest.mark.parametrize(
    ("resolver", "key"),
    [
        ({"kubeDnsAddress": "kube-dns.kube-system"}, "kubeDnsAddress"),
        ({"upstream": "coredns"}, "upstream"),
        ({"replicas": 0}, "replicas"),
    ],
)
def test_bad_resolver_settings_name_their_key(resolver: dict[str, Any], key: str) -> None:
    settings = {"image": "example.com/resolver:1", **resolver}
    assert list(problems(NAMES, resolver=settings)) == [f"sandboxkit:kubernetes.resolver.{key}"]


def test_plain_network_policy_refuses_names_naming_the_entries_and_the_setting() -> None:
    assert problems(NAMES, fqdnPolicy="none") == {
        "sandboxkit:profile.egress.allow": (
            ["pypi.org:443", "*.pythonhosted.org:443"],
            "IP entries only on target kubernetes, whose fqdnPolicy is none: plain Kubernetes "
            "NetworkPolicy matches addresses, not names. Set sandboxkit:kubernetes.fqdnPolicy "
            "to cilium (Cilium 1.19 or later) for name entries",
        )
    }


def test_plain_network_policy_takes_an_allowlist_of_ip_entries() -> None:
    ips = {"egress": {"mode": "allowlist", "allow": ["93.184.216.34:8443"]}}
    planned = load(ips, fqdnPolicy="none").plans["kubernetes"]
    assert (planned["egress_mode"], planned["fqdn_policy"]) == ("allowlist", "none")
    assert [str(rule) for rule in planned["egress_rules"]] == ["93.184.216.34:8443"]


def test_gke_flavour_refuses_names() -> None:
    found = problems(NAMES, fqdnPolicy="gke")
    assert list(found) == ["sandboxkit:profile.egress.allow"]
    assert found["sandboxkit:profile.egress.allow"][1].startswith(
        "IP entries only on target kubernetes"
    )
