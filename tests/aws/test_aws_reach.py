"""The aws-microvm egress reader: golden fixtures from the cited docs, and every door of the
shipped and an allowlist stack with its exact answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import support as testing
from sandboxkit.aws import type_tokens
from sandboxkit.aws.egress_reader import read_egress
from sandboxkit.effective_egress import EffectiveEgress, ResourceView, inexpressible
from sandboxkit.explain import explain_target
from sandboxkit.render import RenderedStack

T = "aws-microvm"
PROJECT = Path(__file__).resolve().parents[2]
DOH = "1.1.1.1"  # Cloudflare's DNS-over-HTTPS resolver
ALLOWLIST = [
    "pypi.org",
    "*.pythonhosted.org",
    "github.com:80",
    "mirror.example.org:8443",
    "93.184.216.34:8443",
]

POLICY_DOCUMENT = type_tokens.FIREWALL_POLICY_DOCUMENT.token


def render(stack: str, egress: dict[str, Any] | None = None) -> RenderedStack:
    values = testing.stack_values(PROJECT, stack)
    values["targets"] = [T]
    if egress is not None:
        values["profile"]["egress"] = egress
    return testing.render_values(PROJECT, stack, values)


@pytest.fixture(scope="module")
def prod() -> RenderedStack:
    return render("prod")


@pytest.fixture(scope="module")
def allowlist() -> RenderedStack:
    return render("dev", {"mode": "allowlist", "allow": ALLOWLIST})


def effective(rendered: RenderedStack) -> EffectiveEgress:
    return read_egress(rendered.target_views(T))


def test_prod_forged_sni_to_any_address_is_denied(prod: RenderedStack) -> None:
    egress = effective(prod)
    # A ClientHello naming the control plane, sent to another address: the name grant needs an
    # address the VPC resolver returned for it (resolved-IP validation), so the address is what
    # is asked, and deny admits no address.
    (grant,) = egress.connect
    assert (grant.host, grant.scope, grant.ports, grant.enforced, grant.basis) == (
        "agents.example.com",
        "exact",
        frozenset({443}),
        "name-l7",
        "platform-doc",
    )
    assert not egress.admits(DOH, 443, "tcp")
    assert not egress.admits("93.184.216.34", 443, "tcp")
    assert egress.admits("agents.example.com", 443, "tls")
    assert not egress.admits("agents.example.com", 80, "http")
    explained = explain_target(prod, T)
    assert (explained.differences, explained.findings) == ((), ())


def test_prod_without_resolved_ip_validation_matches_the_claimed_name_only(
    prod: RenderedStack,
) -> None:
    weakened = testing.with_input(
        prod, f"{T}-fw-policy", ("firewallPolicy", "Route53ResolvedIPValidation"), testing.REMOVE
    )
    egress = effective(weakened)
    (grant,) = egress.connect
    assert (grant.enforced, grant.basis) == ("claimed-name", "kit-code")
    assert [f.kind for f in inexpressible(egress)] == ["claimed-name-only"]
    assert not explain_target(weakened, T).matches_contract


@pytest.mark.parametrize(
    ("sources", "validated"),
    [
        # A review's input: validation for another source only was read as validation.
        ([{"AddressDefinition": "192.0.2.1/32"}], False),
        ([{"AddressDefinition": "not-a-range"}], False),
        ([{"AddressDefinition": "10.0.0.0/8"}], True),
        ([{"AddressDefinition": "0.0.0.0/0"}], True),
    ],
)
def test_resolved_ip_validation_counts_only_when_its_sources_hold_the_vpc(
    prod: RenderedStack, sources: list[dict[str, str]], validated: bool
) -> None:
    path = ("firewallPolicy", "Route53ResolvedIPValidation", "SourceIPRanges")
    (grant,) = effective(testing.with_input(prod, f"{T}-fw-policy", path, sources)).connect
    assert grant.enforced == ("name-l7" if validated else "claimed-name")


def test_prod_resolves_only_the_control_plane(prod: RenderedStack) -> None:
    egress = effective(prod)
    assert egress.resolves("agents.example.com")
    for name in ("cloudflare-dns.com", "dns.google", "x.attacker.example", "example.com"):
        assert not egress.resolves(name), name


def test_a_block_of_one_query_type_leaves_every_name_resolving(prod: RenderedStack) -> None:
    # A review's input: qType A on the block rule; TXT and AAAA queries of every name still
    # resolve (a DNS tunnel), while the reader read the block as whole.
    blocked = testing.with_input(prod, f"{T}-dns-block", ("qType",), "A")
    assert effective(blocked).resolves("x.attacker.example")
    assert not explain_target(blocked, T).matches_contract


def test_doh_resolver_is_neither_reached_nor_resolved_on_an_allowlist(
    allowlist: RenderedStack,
) -> None:
    egress = effective(allowlist)
    assert not egress.admits(DOH, 443, "tcp")
    assert not egress.admits("cloudflare-dns.com", 443, "tls")
    assert not egress.resolves("cloudflare-dns.com")


def test_a_port_belongs_to_its_entry(allowlist: RenderedStack) -> None:
    egress = effective(allowlist)
    assert egress.admits("github.com", 80, "http")
    assert not egress.admits("github.com", 443, "tls")
    assert not egress.admits("pypi.org", 80, "http")
    assert egress.admits("mirror.example.org", 8443, "tls")
    assert not egress.admits("mirror.example.org", 443, "tls")


def test_a_wildcard_never_admits_its_apex(allowlist: RenderedStack) -> None:
    egress = effective(allowlist)
    assert egress.admits("files.pythonhosted.org", 443, "tls")
    assert egress.admits("a.b.files.pythonhosted.org", 443, "tls")
    assert not egress.admits("pythonhosted.org", 443, "tls")
    assert not egress.resolves("pythonhosted.org")
    assert egress.resolves("files.pythonhosted.org")


def test_an_ip_entry_is_exactly_its_address_and_port(allowlist: RenderedStack) -> None:
    egress = effective(allowlist)
    assert egress.admits("93.184.216.34", 8443, "tcp")
    assert not egress.admits("93.184.216.34", 443, "tcp")
    assert not egress.admits("169.254.169.254", 80, "http")
    assert not egress.admits("64:ff9b::a9fe:a9fe", 80, "http")


def test_the_allowlist_stack_matches_the_contract(allowlist: RenderedStack) -> None:
    explained = explain_target(allowlist, T)
    assert explained.effective is not None
    assert [str(d) for d in explained.differences] == []
    assert [str(f) for f in explained.findings] == []


def test_open_admits_public_addresses_only() -> None:
    egress = effective(render("dev", {"mode": "open"}))
    assert egress.admits("anything.example", 22, "tls")
    assert egress.admits("8.8.8.8", 53, "tcp")
    assert not egress.admits("169.254.169.254", 80, "http")
    assert not egress.admits("10.1.2.3", 443, "tcp")
    assert egress.resolves("anything.example")


# --- golden fixtures, from the cited documents' own examples -----------------------------------

SG_ALL_TCP = ResourceView.of(
    "aws:ec2/securityGroup:SecurityGroup",
    "sg",
    {"egress": [{"protocol": "tcp", "fromPort": 0, "toPort": 65535, "cidrBlocks": ["0.0.0.0/0"]}]},
)
STRICT_DROP = ResourceView.of(
    "aws:networkfirewall/firewallPolicy:FirewallPolicy",
    "policy",
    {
        "firewallPolicy": {
            "statefulEngineOptions": {"ruleOrder": "STRICT_ORDER"},
            "statefulDefaultActions": ["aws:drop_established"],
            "statelessDefaultActions": ["aws:forward_to_sfe"],
        }
    },
)


def rule_group(rules_source: dict[str, Any]) -> ResourceView:
    return ResourceView.of(
        "aws:networkfirewall/ruleGroup:RuleGroup",
        "rules",
        {"ruleGroup": {"rulesSource": rules_source}},
    )


def test_golden_domain_list_admits_the_apex_on_every_port_by_claimed_name() -> None:
    # API reference RulesSourceList: ".example.com matches example.com and all subdomains";
    # the developer guide's TLS/HTTP allowlist example: targets ".amazon.com", "example.com".
    egress = read_egress(
        [
            SG_ALL_TCP,
            STRICT_DROP,
            rule_group(
                {
                    "rulesSourceList": {
                        "generatedRulesType": "ALLOWLIST",
                        "targetTypes": ["TLS_SNI", "HTTP_HOST"],
                        "targets": [".amazon.com", "example.com"],
                    }
                }
            ),
        ]
    )
    assert egress.admits("amazon.com", 8443, "tls")
    assert egress.admits("www.amazon.com", 22, "tls")
    assert egress.admits("example.com", 443, "tls")
    assert not egress.admits("www.example.com", 443, "tls")
    assert {(f.kind, f.grant.host) for f in inexpressible(egress)} == {
        ("apex-by-wildcard", "amazon.com"),
        ("name-on-every-port", "amazon.com"),
        ("name-on-every-port", "example.com"),
        ("claimed-name-only", "amazon.com"),
        ("claimed-name-only", "example.com"),
    }


def test_golden_suricata_example_with_two_contents_is_read_as_any_name() -> None:
    # Developer guide "Examples of stateful rules": SNI starting "ssm." and ending
    # ".amazonaws.com". The kit reads one content per rule; more is read wide: any name.
    text = (
        "pass tls $HOME_NET any -> $EXTERNAL_NET any (ssl_state:client_hello; tls.sni; "
        'content:"ssm."; startswith; content:".amazonaws.com"; endswith; nocase; '
        "flow: to_server; sid:202308311;)"
    )
    egress = read_egress([SG_ALL_TCP, STRICT_DROP, rule_group({"rulesString": text})])
    (grant,) = egress.connect
    assert (grant.host, grant.scope, grant.ports) == ("*", "any", "any")


def test_golden_policy_without_a_drop_default_leaves_the_security_group() -> None:
    # Strict order with no drop default: what no rule passes is not dropped.
    passing = ResourceView.of(
        "aws:networkfirewall/firewallPolicy:FirewallPolicy",
        "policy",
        {"firewallPolicy": {"statefulDefaultActions": ["aws:alert_established"]}},
    )
    egress = read_egress([SG_ALL_TCP, passing, rule_group({"rulesString": ""})])
    assert egress.admits("8.8.8.8", 25, "tcp")
    assert egress.admits("anything.example", 443, "tls")


def test_golden_security_group_limits_a_name_rule_to_its_open_ports() -> None:
    sg_443 = ResourceView.of(
        "aws:ec2/securityGroup:SecurityGroup",
        "sg",
        {
            "egress": [
                {"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]}
            ]
        },
    )
    text = (
        'pass tls $HOME_NET any -> $EXTERNAL_NET any (tls.sni; content:"a.example"; startswith; '
        "endswith; sid:1;)"
    )
    egress = read_egress([sg_443, STRICT_DROP, rule_group({"rulesString": text})])
    assert egress.admits("a.example", 443, "tls")
    assert not egress.admits("a.example", 8443, "tls")


def test_golden_dns_firewall_allow_then_block_all() -> None:
    # Route 53 DNS Firewall: rules by priority; the kit's pattern, an allow list then BLOCK "*".
    resources = [
        ResourceView.of(
            "aws:route53/resolverFirewallDomainList:ResolverFirewallDomainList",
            "allowed",
            {"domains": ["example.com", "*.example.org"]},
        ),
        ResourceView.of(
            "aws:route53/resolverFirewallDomainList:ResolverFirewallDomainList",
            "all",
            {"domains": ["*"]},
        ),
        ResourceView.of(
            "aws:route53/resolverFirewallRule:ResolverFirewallRule",
            "block",
            {"action": "BLOCK", "priority": 200, "firewallDomainListId": "all-1a2b"},
        ),
        ResourceView.of(
            "aws:route53/resolverFirewallRule:ResolverFirewallRule",
            "allow",
            {"action": "ALLOW", "priority": 100, "firewallDomainListId": "allowed-3c4d"},
        ),
    ]
    egress = read_egress(resources)
    assert egress.resolves("example.com")
    assert egress.resolves("a.example.org")
    assert not egress.resolves("example.org")
    assert not egress.resolves("other.example")


def test_golden_policy_document_with_alert_only_validation_is_claimed_name() -> None:
    document = ResourceView.of(
        POLICY_DOCUMENT,
        "policy",
        {
            "firewallPolicy": {
                "StatefulDefaultActions": ["aws:drop_established"],
                "Route53ResolvedIPValidation": {
                    "Action": "ALERT",
                    "DNSFirewallRuleGroupId": "rslvr-frg-0123456789abcdef",
                    "DNSExpiryExceptionPolicy": "DROP",
                },
            }
        },
    )
    text = (
        'pass tls $HOME_NET any -> $EXTERNAL_NET 443 (tls.sni; content:"a.example"; startswith; '
        "endswith; sid:1;)"
    )
    (grant,) = read_egress([SG_ALL_TCP, document, rule_group({"rulesString": text})]).connect
    assert grant.enforced == "claimed-name"


def _group(rules_source: dict[str, Any], kind: str = "STATEFUL") -> ResourceView:
    return ResourceView(
        "aws:networkfirewall/ruleGroup:RuleGroup",
        "extra",
        {"type": kind, "capacity": 100, "ruleGroup": {"rulesSource": rules_source}},
    )


PASS_ALL = {
    "protocol": "IP",
    "source": "ANY",
    "sourcePort": "ANY",
    "destination": "ANY",
    "destinationPort": "ANY",
    "direction": "FORWARD",
}


def _referenced(views: list[ResourceView], key: str) -> list[ResourceView]:
    """``views`` with the firewall policy also referencing rule group ``extra`` under ``key``
    (``StatefulRuleGroupReferences`` or ``StatelessRuleGroupReferences``)."""
    arn = "arn:aws:network-firewall:eu-west-1:123456789012:stateful-rulegroup/extra-0a1b2c"
    edited = []
    for view in views:
        props = dict(view.props)
        if view.type == POLICY_DOCUMENT:
            document = dict(props["firewallPolicy"])  # type: ignore[arg-type]
            references = list(document.get(key) or [])  # type: ignore[arg-type]
            document[key] = [*references, {"ResourceArn": arn, "Priority": 300}]
            props["firewallPolicy"] = document
        edited.append(ResourceView(view.type, view.name, props))
    return edited


def test_only_the_rule_groups_the_policy_references_are_read(allowlist: RenderedStack) -> None:
    views = allowlist.target_views(T)
    structured = _group({"statefulRules": [{"action": "PASS", "header": PASS_ALL}]})
    assert read_egress([*views, structured]) == read_egress(views)


def test_rule_groups_the_reader_does_not_model_are_refused(allowlist: RenderedStack) -> None:
    """A review's inputs: a structured stateful PASS rule and a stateless aws:pass rule (which
    skips the stateful engine) let traffic out, and the reader read neither."""
    views = _referenced(allowlist.target_views(T), "StatefulRuleGroupReferences")
    structured = _group({"statefulRules": [{"action": "PASS", "header": PASS_ALL}]})
    with pytest.raises(ValueError) as refused:
        read_egress([*views, structured])
    assert str(refused.value) == (
        "rule group extra: a structured stateful rule with action 'PASS', which the reader does "
        "not model (only Suricata rule strings and domain lists)"
    )
    definition = {"actions": ["aws:pass"], "matchAttributes": {"protocols": [6]}}
    stateless = _group(
        {
            "statelessRulesAndCustomActions": {
                "statelessRules": [{"priority": 1, "ruleDefinition": definition}]
            }
        },
        "STATELESS",
    )
    views = _referenced(allowlist.target_views(T), "StatelessRuleGroupReferences")
    with pytest.raises(ValueError) as refused:
        read_egress([*views, stateless])
    assert str(refused.value) == (
        "rule group extra: a stateless rule with actions ['aws:pass'], which the reader does "
        "not model (aws:pass lets traffic past the stateful rules)"
    )
    # Rules that only drop, or hand traffic to the stateful engine, narrow: read as nothing.
    drop = _group({"statefulRules": [{"action": "DROP", "header": PASS_ALL}]})
    forward = _group(
        {
            "statelessRulesAndCustomActions": {
                "statelessRules": [
                    {
                        "priority": 1,
                        "ruleDefinition": {**definition, "actions": ["aws:forward_to_sfe"]},
                    }
                ]
            }
        },
        "STATELESS",
    )
    unchanged = read_egress(allowlist.target_views(T))
    assert read_egress([*views, drop]) == read_egress([*views, forward]) == unchanged
