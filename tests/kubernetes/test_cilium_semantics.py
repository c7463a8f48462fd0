"""Cilium's name matching by version, on golden fixtures from Cilium's own docs and tests.

Each row cites where it comes from: the policy-language docs' examples, the ``matchpattern``
package's tests, cilium/cilium PR #43420's release note, cilium/proxy PR #1242's examples.
"""

from __future__ import annotations

import pytest

from sandboxkit.egress_contract import parse_rule
from sandboxkit.kubernetes.cilium import (
    dns_name_matches,
    fqdn_selector,
    parse_version,
    server_name,
    server_name_matches,
)

V1_18, V1_19 = (1, 18), (1, 19)


@pytest.mark.parametrize("version", [V1_18, V1_19])
@pytest.mark.parametrize(
    ("pattern", "name", "selected"),
    [
        # Policy language, "DNS based": '*' is 0 or more characters within one label.
        ("*.cilium.io", "sub.cilium.io", True),
        ("*.cilium.io", "cilium.io", False),
        ("*.cilium.io", "sub.sub.cilium.io", False),
        ("part*ial.com", "partial.com", True),
        ("part*ial.com", "part-extra-ial.com", True),
        # Layer 7, "DNS Policy and IP Discovery" example.
        ("special*service.api.cilium.io", "special-region1-service.api.cilium.io", True),
        ("special*service.api.cilium.io", "region1-service.api.cilium.io", False),
        # '*' alone selects every name.
        ("*", "cilium.io", True),
        ("*", "service.namespace.svc.cluster.local", True),
        # matchpattern_test.go.
        ("*.ci*.io", "anysub.ciliumandmore.io", True),
        ("*.ci*.io", "cilium.io", False),
        ("*.*.cilium.io", "_foobar._tcp.cilium.io", True),
        ("cilium.io", "anysub.cilium.io", False),
        ("CILIUM.io.", "cilium.io", True),
    ],
)
def test_dns_patterns_on_every_version(
    version: tuple[int, int], pattern: str, name: str, selected: bool
) -> None:
    assert dns_name_matches({"matchPattern": pattern}, name, version) is selected


@pytest.mark.parametrize(
    ("version", "name", "selected"),
    [
        # PR #43420's release note: '**.cilium.io' selects app.cilium.io and test.app.cilium.io.
        (V1_19, "app.cilium.io", True),
        (V1_19, "test.app.cilium.io", True),
        (V1_19, "a.b.c.d.cilium.io", True),
        # The apex is never selected.
        (V1_19, "cilium.io", False),
        (V1_19, "notcilium.io", False),
        # Before 1.19 '**' is read as '*': one label only.
        (V1_18, "app.cilium.io", True),
        (V1_18, "test.app.cilium.io", False),
        (V1_18, "cilium.io", False),
    ],
)
def test_multi_label_prefix_depends_on_the_version(
    version: tuple[int, int], name: str, selected: bool
) -> None:
    assert dns_name_matches({"matchPattern": "**.cilium.io"}, name, version) is selected


def test_match_name_is_exact() -> None:
    assert dns_name_matches({"matchName": "cilium.io"}, "cilium.io.", V1_19)
    assert not dns_name_matches({"matchName": "cilium.io"}, "sub.cilium.io", V1_19)


@pytest.mark.parametrize(
    ("version", "pattern", "name", "admitted"),
    [
        # Policy language, "Limit TLS Server Name Indication (SNI)".
        ((1, 13), "one.one.one.one", "one.one.one.one", True),
        ((1, 13), "one.one.one.one", "cilium.io", False),
        # cilium/proxy PR #1242 (1.18): '*.' is exactly one label, never the apex.
        (V1_18, "*.example.com", "foo.example.com", True),
        (V1_18, "*.example.com", "example.com", False),
        (V1_18, "*.example.com", "foo.bar.example.com", False),
        (V1_18, "*.example.com", "notexample.com", False),
        # '**.' is one or more labels, never the apex (the PR's tests).
        (V1_18, "**.sub.example.com", "foo.bar.sub.example.com", True),
        (V1_18, "**.sub.example.com", "sub.example.com", False),
        (V1_18, "**.sub.example.com", "foo.example.com", False),
        (V1_19, "**.sub.example.com", "foo.bar.sub.example.com", True),
        (V1_19, "**.sub.example.com", "sub.example.com", False),
        # 1.19 (cilium/proxy PR #1698): '*' inside a label, as toFQDNs.
        (V1_19, "api.*-example.com", "api.test-example.com", True),
        (V1_19, "api.*-example.com", "api.staging.test-example.com", False),
        (V1_18, "api.*-example.com", "api.test-example.com", False),
        # Before 1.18 there are no wildcards.
        ((1, 17), "*.example.com", "foo.example.com", False),
    ],
)
def test_server_names(version: tuple[int, int], pattern: str, name: str, admitted: bool) -> None:
    assert server_name_matches(pattern, name, version) is admitted


def test_server_names_before_sni_enforcement_are_refused() -> None:
    with pytest.raises(ValueError, match=r"1\.12 does not enforce serverNames"):
        server_name_matches("example.com", "example.com", (1, 12))


@pytest.mark.parametrize(
    ("entry", "selector", "sni"),
    [
        ("pypi.org", {"matchName": "pypi.org"}, "pypi.org"),
        ("*.pythonhosted.org:8443", {"matchPattern": "**.pythonhosted.org"}, "**.pythonhosted.org"),
    ],
)
def test_kit_entries_render_to_cilium_selectors(
    entry: str, selector: dict[str, str], sni: str
) -> None:
    rule = parse_rule(entry)
    assert fqdn_selector(rule, V1_19) == selector
    assert server_name(rule, V1_19) == sni


@pytest.mark.parametrize("name", ["a.pythonhosted.org", "a.b.c.pythonhosted.org"])
def test_rendered_wildcard_means_the_contract(name: str) -> None:
    """The renderer's pattern, read back with Cilium's semantics: below at any depth, never the
    apex, on DNS and on SNI alike."""
    rule = parse_rule("*.pythonhosted.org")
    assert dns_name_matches(fqdn_selector(rule, V1_19), name, V1_19)
    assert server_name_matches(server_name(rule, V1_19), name, V1_19)
    assert not dns_name_matches(fqdn_selector(rule, V1_19), "pythonhosted.org", V1_19)
    assert not server_name_matches(server_name(rule, V1_19), "pythonhosted.org", V1_19)


def test_a_wildcard_on_cilium_before_1_19_is_refused() -> None:
    with pytest.raises(ValueError, match=r"Cilium 1\.18 cannot say .* PR #43420"):
        fqdn_selector(parse_rule("*.pythonhosted.org"), V1_18)


def test_ip_entries_have_no_selector() -> None:
    with pytest.raises(ValueError, match="IP entry"):
        fqdn_selector(parse_rule("140.82.112.3"), V1_19)


@pytest.mark.parametrize(
    ("text", "version"),
    [("1.19", (1, 19)), ("1.18.4", (1, 18)), ("v1.19.0-rc.1", (1, 19)), (" 1.20 ", (1, 20))],
)
def test_versions(text: str, version: tuple[int, int]) -> None:
    assert parse_version(text) == version


@pytest.mark.parametrize("text", ["latest", "1", "1.x", "1.19.a"])
def test_bad_versions(text: str) -> None:
    with pytest.raises(ValueError, match="a Cilium version"):
        parse_version(text)
