"""The gcp-cloudrun reader on hand-written renders: each link of the path, broken one at a time."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from sandboxkit.gcp.cloudrun.reach import (
    BY_RESOLVED_ADDRESS,
    DNS_ASSUMED,
    SandboxPath,
    probe,
    sandbox_paths,
)

NET = "net-id"
SUBNET = "subnet-id"


@dataclass(frozen=True)
class View:
    """A rendered resource as readers see it: type token, logical name, wire inputs."""

    type: str
    name: str
    props: dict[str, Any]


def res(type_token: str, logical: str, **props: Any) -> View:
    return View(type_token, logical, props)


def fw_rule(name: str, priority: int, action: str, **match: Any) -> View:
    match.setdefault("layer4Configs", [{"ipProtocol": "all"}])
    return res(
        "gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule",
        name,
        ruleName=name,
        firewallPolicy="egress",
        direction="EGRESS",
        action=action,
        priority=priority,
        match=match,
    )


def dns_rule(name: str, dns_name: str, bypass: bool) -> View:
    action: dict[str, Any] = (
        {"behavior": "bypassResponsePolicy"}
        if bypass
        else {"localData": {"localDatas": [{"name": dns_name, "type": "TXT", "rrdatas": ["no"]}]}}
    )
    return res(
        "gcp:dns/responsePolicyRule:ResponsePolicyRule",
        name,
        responsePolicy="sandbox-dns",
        ruleName=name,
        dnsName=dns_name,
        **action,
    )


def render(egress: str | None = "ALL_TRAFFIC") -> list[View]:
    vpc = {"egress": egress, "networkInterfaces": [{"network": NET, "subnetwork": SUBNET}]}
    template: dict[str, Any] = {"containers": [{"image": "launcher", "sandboxLauncher": True}]}
    if egress is not None:
        template["vpcAccess"] = vpc
    return [
        res("gcp:cloudrunv2/service:Service", "service", template=template),
        res("gcp:compute/network:Network", "network", name="sandboxes"),
        res("gcp:compute/subnetwork:Subnetwork", "subnet", network=NET, ipCidrRange="10.8.0.0/24"),
        res(
            "gcp:compute/networkFirewallPolicyAssociation:NetworkFirewallPolicyAssociation",
            "association",
            firewallPolicy="egress",
            attachmentTarget=NET,
        ),
        fw_rule("deny-non-public-ipv4", 900, "deny", destIpRanges=["10.0.0.0/8"]),
        fw_rule(
            "allow-fqdn-443",
            1000,
            "allow",
            destFqdns=["pypi.org"],
            layer4Configs=[{"ipProtocol": "tcp", "ports": ["443"]}],
        ),
        fw_rule(
            "allow-ipv4-443",
            1001,
            "allow",
            destIpRanges=["93.184.216.34/32"],
            layer4Configs=[{"ipProtocol": "tcp", "ports": ["443"]}],
        ),
        fw_rule("deny-all-ipv4", 65000, "deny", destIpRanges=["0.0.0.0/0"]),
        fw_rule("deny-all-ipv6", 65001, "deny", destIpRanges=["::/0"]),
        res("gcp:compute/router:Router", "router", name="router", network=NET),
        res(
            "gcp:compute/routerNat:RouterNat",
            "nat",
            router="router",
            sourceSubnetworkIpRangesToNat="LIST_OF_SUBNETWORKS",
            subnetworks=[{"name": SUBNET}],
        ),
        res(
            "gcp:dns/responsePolicy:ResponsePolicy",
            "dns-policy",
            responsePolicyName="sandbox-dns",
            networks=[{"networkUrl": NET}],
        ),
        dns_rule("refuse", "*.", bypass=False),
        dns_rule("allow-pypi", "pypi.org.", bypass=True),
    ]


def path_of(resources: list[View]) -> SandboxPath:
    (path,) = sandbox_paths(resources)
    return path


def without(resources: list[View], *names: str) -> list[View]:
    return [r for r in resources if r.name not in names]


def test_the_path_reads_every_link() -> None:
    path = path_of(render())
    assert path.vpc_egress == "ALL_TRAFFIC"
    assert [r.name for r in path.rules] == [
        "deny-non-public-ipv4",
        "allow-fqdn-443",
        "allow-ipv4-443",
        "deny-all-ipv4",
        "deny-all-ipv6",
    ]
    assert path.dns is not None and len(path.dns) == 2
    assert path.internet is True
    assert path.ipv6 is False


@pytest.mark.parametrize(
    ("host", "port", "admitted", "resolves", "how"),
    [
        ("pypi.org", 443, True, True, f"{BY_RESOLVED_ADDRESS}, rule allow-fqdn-443"),
        ("pypi.org", 80, False, True, "denied by rule deny-all-ipv4"),
        ("x.pypi.org", 443, False, False, "the name does not resolve"),
        ("x.attacker.example", 443, False, False, "the name does not resolve"),
        ("93.184.216.34", 443, True, None, "by address, rule allow-ipv4-443"),
        ("93.184.216.34", 8443, False, None, "denied by rule deny-all-ipv4"),
        ("10.8.0.5", 443, False, None, "denied by rule deny-non-public-ipv4"),
        ("2606:4700:4700::1111", 443, False, None, "denied by rule deny-all-ipv6"),
    ],
)
def test_what_each_probe_gets(
    host: str, port: int, admitted: bool, resolves: bool | None, how: str
) -> None:
    verdict = probe(path_of(render()), host, port)
    assert (verdict.admitted, verdict.resolves) == (admitted, resolves)
    assert verdict.how.startswith(how)
    if resolves is not None:
        assert DNS_ASSUMED in verdict.assumptions


def test_the_metadata_server_is_the_platform_s_on_its_own_ports_only() -> None:
    path = path_of(render())
    assert probe(path, "169.254.169.254", 80).admitted is True
    assert probe(path, "169.254.169.254", 80).how.startswith("by the platform")
    assert probe(path, "169.254.169.254", 22).admitted is False


def test_without_the_response_policy_every_name_resolves() -> None:
    path = path_of(without(render(), "dns-policy"))
    assert path.dns is None
    verdict = probe(path, "x.attacker.example", 443)
    assert (verdict.admitted, verdict.resolves) == (False, True)
    assert verdict.assumptions == ()


def test_without_the_association_the_implied_allow_opens_everything() -> None:
    path = path_of(without(render(), "association"))
    verdict = probe(path, "93.184.216.34", 8443)
    assert verdict.admitted is True
    assert "implied allow" in verdict.how


def test_without_nat_nothing_public_leaves() -> None:
    verdict = probe(path_of(without(render(), "nat")), "pypi.org", 443)
    assert verdict.admitted is False
    assert verdict.how == "no way out: no route or NAT"


def test_private_ranges_only_sends_public_traffic_past_every_control() -> None:
    for egress in ("PRIVATE_RANGES_ONLY", None):
        verdict = probe(path_of(render(egress=egress)), "x.attacker.example", 8443)
        assert (verdict.admitted, verdict.resolves) == (True, True)
        assert verdict.how.startswith("not filtered")


def test_an_ipv6_allow_needs_an_ipv6_subnet() -> None:
    resources = render()
    resources.append(
        fw_rule(
            "allow-ipv6-443",
            1002,
            "allow",
            destIpRanges=["2606:4700:4700::1111/128"],
            layer4Configs=[{"ipProtocol": "tcp", "ports": ["443"]}],
        )
    )
    verdict = probe(path_of(resources), "2606:4700:4700::1111", 443)
    assert (verdict.admitted, verdict.how) == (False, "no way out: no IPv6 on the subnet")
    dual = [
        replace(r, props={**r.props, "stackType": "IPV4_IPV6"}) if r.name == "subnet" else r
        for r in resources
    ]
    assert probe(path_of(dual), "2606:4700:4700::1111", 443).admitted is True


def test_unmodelled_rules_are_said() -> None:
    resources = [*render(), fw_rule("geo", 10, "allow", destRegionCodes=["US"])]
    verdict = probe(path_of(resources), "pypi.org", 443)
    assert "rules the reader cannot model come first: geo" in verdict.assumptions


def test_services_without_a_sandbox_launcher_are_not_read() -> None:
    resources = render()
    plain = res("gcp:cloudrunv2/service:Service", "other", template={"containers": [{}]})
    assert [p.service for p in sandbox_paths([*resources, plain])] == ["service"]
