"""The gcp-cloudrun reader: hand-written renders with each link of the path broken in turn, and
the component's own renders compared with the egress contract."""

from __future__ import annotations

from typing import Any

import pytest

from sandboxkit.effective_egress import (
    ResourceView,
    compare,
    contract_probes,
    derive_probes,
    inexpressible,
)
from sandboxkit.egress_contract import EgressContract, parse_rule
from sandboxkit.gcp.cloudrun.egress_reader import (
    DNS_ASSUMPTION,
    FQDN_DOC,
    IMPLIED_DOC,
    RULE,
    dns_tunnels,
    read_egress,
    rebinding_holes,
    sandbox_paths,
)
from sandboxkit.render import Recorder
from support import build_target, udp_of

NET = "net-id"
SUBNET = "subnet-id"
HTTPS = [{"ipProtocol": "tcp", "ports": ["443"]}]


def res(type_token: str, logical: str, **props: Any) -> ResourceView:
    return ResourceView.of(type_token, logical, props)


def fw_rule(name: str, priority: int, action: str, **match: Any) -> ResourceView:
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


def dns_rule(name: str, dns_name: str, bypass: bool) -> ResourceView:
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


def render(egress: str | None = "ALL_TRAFFIC") -> list[ResourceView]:
    vpc = {"egress": egress, "networkInterfaces": [{"network": NET, "subnetwork": SUBNET}]}
    template: dict[str, Any] = {"containers": [{"image": "launcher", "sandboxLauncher": True}]}
    if egress is not None:
        template["vpcAccess"] = vpc
    return [
        res("gcp:cloudrunv2/service:Service", "service", template=template),
        res("gcp:compute/subnetwork:Subnetwork", "subnet", network=NET, ipCidrRange="10.8.0.0/24"),
        res("gcp:compute/networkFirewallPolicy:NetworkFirewallPolicy", "policy", name="egress"),
        res(
            "gcp:compute/networkFirewallPolicyAssociation:NetworkFirewallPolicyAssociation",
            "association",
            firewallPolicy="egress",
            attachmentTarget=NET,
        ),
        fw_rule("deny-non-public-ipv4", 900, "deny", destIpRanges=["10.0.0.0/8"]),
        fw_rule("allow-fqdn-443", 1000, "allow", destFqdns=["pypi.org"], layer4Configs=HTTPS),
        fw_rule(
            "allow-ipv4-443", 1001, "allow", destIpRanges=["93.184.216.34/32"], layer4Configs=HTTPS
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


def without(resources: list[ResourceView], *names: str) -> list[ResourceView]:
    return [r for r in resources if r.name not in names]


def replaced(resources: list[ResourceView], view: ResourceView) -> list[ResourceView]:
    return [view if r.name == view.name else r for r in resources]


def test_the_path_reads_every_link() -> None:
    (path,) = sandbox_paths(render())
    assert path.vpc_egress == "ALL_TRAFFIC"
    assert [r.name for r in path.rules] == [
        "deny-non-public-ipv4",
        "allow-fqdn-443",
        "allow-ipv4-443",
        "deny-all-ipv4",
        "deny-all-ipv6",
    ]
    assert path.dns is not None and len(path.dns) == 2
    assert (path.internet, path.ipv6) == (True, False)


@pytest.mark.parametrize(
    ("host", "port", "admitted"),
    [
        ("pypi.org", 443, True),
        ("pypi.org", 80, False),
        ("sbx-probe.pypi.org", 443, False),
        ("93.184.216.34", 443, True),
        ("93.184.216.34", 8443, False),
        ("10.8.0.5", 443, False),
        ("169.254.169.254", 80, False),
        ("2606:4700:4700::1111", 443, False),
    ],
)
def test_what_each_connection_gets(host: str, port: int, admitted: bool) -> None:
    assert read_egress(render()).admits(host, port, "tls").admitted is admitted


def test_names_are_enforced_by_resolved_address_only_and_say_so() -> None:
    verdict = read_egress(render()).admits("pypi.org", 443, "tls")
    assert verdict.enforced == ("resolved address only",)
    ((grant,),) = [verdict.grants]
    assert (grant.basis, grant.source) == ("platform-doc", FQDN_DOC)
    found = inexpressible(read_egress(render()))
    assert [(f.kind, f.grant.host) for f in found] == [("resolved-address-only", "pypi.org")]


def test_only_bypassed_names_resolve_and_the_verdict_cites_the_assumption() -> None:
    effective = read_egress(render())
    assert [
        n for n in ("pypi.org", "x.pypi.org", "x.attacker.example") if effective.resolves(n)
    ] == ["pypi.org"]
    assert DNS_ASSUMPTION in effective.resolves("pypi.org").grants[0].source


def test_without_the_catch_all_every_name_resolves() -> None:
    for broken in (
        without(render(), "dns-policy"),
        without(render(), "refuse"),
        replaced(render(), dns_rule("refuse", "*.", bypass=True)),
    ):
        assert read_egress(broken).resolves("x.attacker.example").admitted is True


def test_without_the_association_the_implied_allow_opens_everything() -> None:
    effective = read_egress(without(render(), "association"))
    verdict = effective.admits("151.101.0.223", 8443, "tcp")
    assert verdict.admitted is True
    assert verdict.grants[0].source == IMPLIED_DOC


def test_without_nat_only_non_public_parts_remain() -> None:
    effective = read_egress(without(render(), "nat", "deny-non-public-ipv4", "deny-all-ipv4"))
    assert effective.admits("pypi.org", 443, "tls").admitted is False
    assert effective.admits("151.101.0.223", 443, "tcp").admitted is False
    assert effective.admits("10.8.0.5", 443, "tcp").admitted is True


def test_private_ranges_only_sends_public_traffic_past_every_control() -> None:
    for egress in ("PRIVATE_RANGES_ONLY", None):
        effective = read_egress(render(egress=egress))
        assert effective.admits("x.attacker.example", 8443, "tls").admitted is True
        assert effective.resolves("x.attacker.example").admitted is True


def test_an_ipv6_allow_needs_an_ipv6_subnet() -> None:
    allow6 = fw_rule(
        "allow-ipv6-443", 1002, "allow", destIpRanges=["2606:4700::1/128"], layer4Configs=HTTPS
    )
    resources = [*render(), allow6]
    assert read_egress(resources).admits("2606:4700::1", 443, "tcp").admitted is False
    dual = res("gcp:compute/subnetwork:Subnetwork", "subnet", network=NET, stackType="IPV4_IPV6")
    assert (
        read_egress(replaced(resources, dual)).admits("2606:4700::1", 443, "tcp").admitted is True
    )


def test_services_without_a_sandbox_launcher_are_not_read() -> None:
    plain = res("gcp:cloudrunv2/service:Service", "other", template={"containers": [{}]})
    assert [p.service for p in sandbox_paths([*render(), plain])] == ["service"]
    assert read_egress([plain]).connect == ()


# --- The component's own renders, against the contract ------------------------------------------

SETTINGS = {
    "project": "example-project",
    "region": "us-central1",
    "image": "us-docker.pkg.dev/example-project/agents/launcher:1",
    "sandboxImage": "us-docker.pkg.dev/example-project/agents/sandbox:1",
    # The allowlists below name no CNAME (``cnameTargets`` is required with names).
    "cnameTargets": [],
    "nameMatching": "resolved-address",  # names match by resolved address (accepted)
}
ALLOWLIST = ["pypi.org", "files.pythonhosted.org", "api.example.com:8443", "pypi.org:80"]
IP_ENTRIES = ["93.184.216.34", "93.184.216.34:8443"]


def rendered(engine: Recorder, egress: dict[str, Any]) -> list[ResourceView]:
    resources = build_target(engine, "gcp-cloudrun", SETTINGS, {"egress": egress})
    return [ResourceView.of(r.type, r.name, r.inputs) for r in resources if r.custom]


@pytest.mark.parametrize(
    "egress",
    [
        {"mode": "deny"},
        {"mode": "allowlist", "allow": ALLOWLIST},
        {"mode": "allowlist", "allow": [*ALLOWLIST, *IP_ENTRIES]},
        {"mode": "open"},
    ],
)
def test_the_component_admits_and_resolves_exactly_what_the_contract_does(
    engine: Recorder, egress: dict[str, Any]
) -> None:
    rules = tuple(parse_rule(e) for e in egress.get("allow", []))
    contract = EgressContract(egress["mode"], rules)
    effective = read_egress(rendered(engine, egress))
    # Cloud NGFW FQDN objects match the addresses a name resolved to: plain TCP to them (no
    # SNI, no Host) passes too, the one difference, and on every name entry (SBX-NET-006).
    found = compare(effective, contract, derive_probes(rules))
    assert [(str(d.probe), d.probe.protocol, d.direction) for d in found] == [
        (str(r), "tcp", "wider") for r in rules if r.kind == "name"
    ]
    assert all(d.verdict.enforced == ("resolved address only",) for d in found)


def test_allowlist_names_are_the_only_finding(engine: Recorder) -> None:
    effective = read_egress(rendered(engine, {"mode": "allowlist", "allow": ALLOWLIST}))
    assert {(f.kind, f.grant.host) for f in inexpressible(effective)} == {
        ("resolved-address-only", "pypi.org"),
        ("resolved-address-only", "files.pythonhosted.org"),
        ("resolved-address-only", "api.example.com"),
    }


def test_a_dns_tunnel_is_every_name_resolving_past_a_closed_firewall() -> None:
    assert dns_tunnels(render()) == []
    assert dns_tunnels(without(render(), "dns-policy")) == ["service"]
    assert dns_tunnels(replaced(render(), dns_rule("refuse", "*.", bypass=True))) == ["service"]
    # Open egress (the firewall admits every public address): DNS adds no way out.
    open_egress = fw_rule("allow-public-ipv4", 1002, "allow", destIpRanges=["0.0.0.0/0"])
    assert dns_tunnels([*without(render(), "dns-policy"), open_egress]) == []


def test_a_rebinding_hole_is_an_allowed_name_reaching_a_non_public_address() -> None:
    assert [h for h in rebinding_holes(render()) if h.address.startswith("10.")] == []
    holes = rebinding_holes(without(render(), "deny-non-public-ipv4"))
    assert ("allow-fqdn-443", "pypi.org", "10.0.0.1") in {
        (h.rule, h.name, h.address) for h in holes
    }
    assert {h.service for h in holes} == {"service"}


def test_udp_is_read_by_the_same_rules_and_the_deny_all_takes_it() -> None:
    """The kit's deny-all rules take every protocol: no UDP leaves; an allow of udp 443 (QUIC)
    before them, or of every protocol, opens exactly its destinations on UDP."""
    assert udp_of(read_egress(render())) == ()
    quic = fw_rule(
        "allow-quic",
        500,
        "allow",
        destIpRanges=["0.0.0.0/0"],
        layer4Configs=[{"ipProtocol": "udp", "ports": ["443"]}],
    )
    opened = read_egress([*render(), quic])
    assert [(g.host, g.ports, g.resource) for g in udp_of(opened)] == [
        ("0.0.0.0/0", frozenset({443}), f"{RULE} allow-quic")
    ]
    assert opened.admits("203.0.113.7", 443, "udp")
    assert not opened.admits("203.0.113.7", 53, "udp")
    assert not opened.admits("203.0.113.7", 443, "tcp")  # TCP stays shut
    everything = fw_rule("allow-all", 500, "allow", destFqdns=["pypi.org"])
    by_name = read_egress([*render(), everything])
    assert [(g.host, g.ports, g.enforced) for g in udp_of(by_name)] == [
        ("pypi.org", "any", "resolved-address")
    ]
    # By protocol number too (17 is UDP).
    numbered = fw_rule(
        "allow-17",
        500,
        "allow",
        destIpRanges=["203.0.113.0/24"],
        layer4Configs=[{"ipProtocol": "17"}],
    )
    assert read_egress([*render(), numbered]).admits("203.0.113.9", 443, "udp")


def test_private_ranges_only_sends_udp_past_every_control() -> None:
    effective = read_egress(render("PRIVATE_RANGES_ONLY"))
    assert [g.host for g in udp_of(effective)] == ["0.0.0.0/0", "::/0"]
    deny = EgressContract("deny")
    udp = [
        d
        for d in compare(effective, deny, contract_probes(deny, effective))
        if d.probe.protocol == "udp"
    ]
    assert [str(d.probe) for d in udp] == ["1.0.0.0:8443", "[2000::]:8443"]
    assert str(udp[0]).startswith("wider: 1.0.0.0:8443 over udp (grant of gcp:cloudrunv2/service")


OPEN_443 = {"destIpRanges": ["0.0.0.0/0"], "layer4Configs": HTTPS}
WITH_RULES = "gcp:compute/networkFirewallPolicyWithRules:NetworkFirewallPolicyWithRules"
ASSOCIATION = "gcp:compute/networkFirewallPolicyAssociation:NetworkFirewallPolicyAssociation"


def test_rules_are_read_by_the_policy_they_belong_to() -> None:
    """A rule of the associated policy counts whether it names the policy by name or by id; a
    rule of a policy no association attaches to the network never does."""
    by_id = replaced(
        [*render(), fw_rule("acme-open", 100, "allow", **OPEN_443)],
        res(
            RULE.token,
            "acme-open",
            ruleName="acme-open",
            firewallPolicy="projects/acme/global/firewallPolicies/egress",
            direction="EGRESS",
            action="allow",
            priority=100,
            match=OPEN_443,
        ),
    )
    assert read_egress(by_id).admits("203.0.113.7", 443, "tcp")
    elsewhere = res(
        RULE.token,
        "acme-elsewhere",
        ruleName="acme-elsewhere",
        firewallPolicy="unattached",
        direction="EGRESS",
        action="allow",
        priority=100,
        match=OPEN_443,
    )
    unattached = [
        *render(),
        res(
            "gcp:compute/networkFirewallPolicy:NetworkFirewallPolicy",
            "acme-policy",
            name="unattached",
        ),
        elsewhere,
    ]
    assert not read_egress(unattached).admits("203.0.113.7", 443, "tcp")
    assert read_egress(unattached) == read_egress(render())


def test_inline_rules_of_an_associated_policy_are_read() -> None:
    inline = res(
        WITH_RULES,
        "acme-inline",
        name="acme-inline",
        rules=[
            {"priority": 10, "action": "allow", "direction": "EGRESS", "match": OPEN_443},
            {"priority": 20, "action": "allow", "direction": "INGRESS", "match": OPEN_443},
        ],
    )
    attach = res(ASSOCIATION, "acme-attach", firewallPolicy="acme-inline", attachmentTarget=NET)
    # Not associated: its rules do not count.
    assert not read_egress([*render(), inline]).admits("203.0.113.7", 443, "tcp")
    verdict = read_egress([*render(), inline, attach]).admits("203.0.113.7", 443, "tcp")
    assert [g.resource for g in verdict.grants] == [f"{RULE} acme-inline.rules[0]"]


def test_an_association_of_a_policy_the_render_does_not_create_cannot_be_verified() -> None:
    existing = "projects/acme/global/firewallPolicies/1234567890"
    attach = res(ASSOCIATION, "acme-attach", firewallPolicy=existing, attachmentTarget=NET)
    with pytest.raises(
        ValueError,
        match="attaches firewall policy 'projects/acme/global/"
        "firewallPolicies/1234567890' to the sandboxes' network, and no rendered",
    ):
        read_egress([*render(), attach])
    # Attached to another network: not on the sandboxes' path.
    other = res(ASSOCIATION, "acme-attach", firewallPolicy=existing, attachmentTarget="other-net")
    assert read_egress([*render(), other]) == read_egress(render())
