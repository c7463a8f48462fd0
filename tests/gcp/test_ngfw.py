"""The readers' model of Cloud NGFW egress rules, on the provider's examples and edge cases."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from sandboxkit.gcp.cloudrun.ngfw import (
    Allowed,
    Decision,
    FirewallRule,
    Probe,
    allowed,
    decide,
    read_rules,
    tcp_ports,
)


def rule(name: str, priority: int, action: str, **match: Any) -> tuple[str, dict[str, Any]]:
    l4 = match.pop("l4", [{"ipProtocol": "all"}])
    return name, {
        "direction": "EGRESS",
        "action": action,
        "priority": priority,
        "match": {**match, "layer4Configs": l4},
    }


def to(name: str | None = None, address: str | None = None, port: int = 443) -> Probe:
    ip = ipaddress.ip_address(address) if address else None
    return Probe(port=port, name=name, address=ip)


# terraform-provider-google example "network_firewall_policy_rule_network_context_egress".
CONTEXT_EGRESS = (
    "test-rule",
    {
        "action": "allow",
        "direction": "EGRESS",
        "disabled": False,
        "priority": 1000,
        "ruleName": "test-rule",
        "match": {
            "destIpRanges": ["10.100.0.1/32"],
            "destNetworkContext": "INTERNET",
            "layer4Configs": [{"ipProtocol": "all"}],
        },
    },
)
# The FQDN objects overview's example, turned to egress: two names, two priorities.
FQDN_EXAMPLE = [
    rule("rule-1", 100, "allow", destFqdns=["example1.com"]),
    rule("rule-2", 200, "allow", destFqdns=["example2.com"]),
]


def test_the_first_matching_rule_by_priority_decides() -> None:
    rules = read_rules(
        [
            rule("deny-all", 65000, "deny", destIpRanges=["0.0.0.0/0"]),
            rule("allow-pypi", 1000, "allow", destFqdns=["pypi.org"], l4=[tcp(443)]),
            rule("deny-private", 900, "deny", destIpRanges=["10.0.0.0/8"]),
        ]
    )
    assert decide(rules, to("pypi.org")) == Decision(True, "allow-pypi", True, ())
    assert decide(rules, to("pypi.org", port=80)) == Decision(False, "deny-all", False, ())
    assert decide(rules, to("example.com")) == Decision(False, "deny-all", False, ())
    assert decide(rules, to(address="10.1.2.3")) == Decision(False, "deny-private", False, ())


def tcp(*ports: int | str) -> dict[str, Any]:
    return {"ipProtocol": "tcp", "ports": [str(p) for p in ports]}


def test_fqdn_objects_match_by_listed_name_and_the_decision_says_by_name() -> None:
    rules = read_rules(FQDN_EXAMPLE)
    assert decide(rules, to("example1.com")).rule == "rule-1"
    assert decide(rules, to("EXAMPLE2.com.")).rule == "rule-2"
    assert decide(rules, to("example2.com")).by_name is True


def test_no_matching_rule_falls_to_the_implied_allow() -> None:
    assert decide(read_rules(FQDN_EXAMPLE), to("other.example")) == Decision(True, None, False, ())


def test_port_ranges_protocols_and_goto_next() -> None:
    rules = read_rules(
        [
            # The console's predefined rule for private ranges: they leave the policy.
            rule("next", 10, "goto_next", destIpRanges=["10.0.0.0/8"]),
            rule("web", 20, "allow", destIpRanges=["0.0.0.0/0"], l4=[tcp("8000-8080")]),
            rule("udp", 30, "allow", destIpRanges=["0.0.0.0/0"], l4=[{"ipProtocol": "udp"}]),
            rule("deny", 40, "deny", destIpRanges=["0.0.0.0/0", "::/0"]),
        ]
    )
    assert decide(rules, to(address="203.0.113.7", port=8080)).rule == "web"
    assert decide(rules, to(address="203.0.113.7", port=8081)).rule == "deny"
    dns = Probe(port=53, address=ipaddress.ip_address("203.0.113.7"), protocol="udp")
    assert decide(rules, dns).rule == "udp"
    # A name is taken to resolve to public addresses: a /0 covers it.
    assert decide(rules, to("example.com", port=8000)).rule == "web"
    # goto_next ends the policy's evaluation: the later deny never applies, the implied allow
    # admits (https://cloud.google.com/firewall/docs/pre-defined-rules).
    assert decide(rules, to(address="10.1.2.3", port=22)) == Decision(True, "next", False, ())


def test_goto_next_admits_what_it_matches_in_allowed() -> None:
    # A review's input: goto_next for every address ahead of the deny-all passed as nothing.
    rules = read_rules(
        [
            rule("leave", 1500, "goto_next", destIpRanges=["0.0.0.0/0"]),
            rule("deny-all", 65000, "deny", destIpRanges=["0.0.0.0/0", "::/0"]),
        ]
    )
    assert allowed(rules, V4) == [Allowed("leave", "any", block=NET("0.0.0.0/0"))]


def test_protocol_numbers_are_their_protocols() -> None:
    # A review's input: ipProtocol "6" (TCP by number, which the API takes) opened nothing.
    (by_number,) = read_rules(
        [
            rule(
                "exfil",
                999,
                "allow",
                destFqdns=["exfil.example.net"],
                l4=[{"ipProtocol": "6", "ports": ["443"]}],
            )
        ]
    )
    assert tcp_ports(by_number) == frozenset({443})
    assert decide([by_number], to("exfil.example.net")).rule == "exfil"
    (udp_number,) = read_rules(
        [
            rule(
                "dns",
                9,
                "allow",
                destIpRanges=["8.8.8.8/32"],
                l4=[{"ipProtocol": "17", "ports": ["53"]}],
            )
        ]
    )
    assert tcp_ports(udp_number) is None


def test_an_unreadable_disabled_or_direction_keeps_an_allow_and_drops_a_deny() -> None:
    for field, value in (
        ("disabled", "sandboxkit-offline-unknown-secret"),
        ("disabled", "true"),
        ("direction", "sandboxkit-offline-unknown-secret"),
    ):
        name, allow = rule("allow", 10, "allow", destFqdns=["a.example"])
        _, deny = rule("deny", 5, "deny", destIpRanges=["0.0.0.0/0"])
        allow[field] = deny[field] = value
        read = read_rules([(name, allow), ("deny", deny)])
        assert [r.name for r in read] == ["allow"], (field, value)


def test_ingress_and_disabled_rules_never_decide_egress() -> None:
    name, disabled = rule("off", 1, "allow", destIpRanges=["0.0.0.0/0"])
    ingress = {**disabled, "direction": "INGRESS", "disabled": False}
    assert read_rules([(name, {**disabled, "disabled": True}), ("in", ingress)]) == []


def test_unknown_match_fields_and_targeted_rules_are_reported_not_guessed() -> None:
    targeted = rule("sa-only", 5, "deny", destIpRanges=["0.0.0.0/0"])
    targeted[1]["targetServiceAccounts"] = ["a@example.iam.gserviceaccount.com"]
    rules = read_rules([CONTEXT_EGRESS, targeted, rule("deny", 9000, "deny", destFqdns=["x.io"])])
    assert rules[0].unmodelled == ("match.destNetworkContext",)
    assert rules[1].unmodelled == ("targetServiceAccounts",)
    decision = decide(rules, to(address="10.100.0.1"))
    assert decision == Decision(True, None, False, ("sa-only", "test-rule"))


def test_rule_name_falls_back_to_the_resource_name() -> None:
    name, inputs = rule("resource-name", 1, "deny", destIpRanges=["::/0"])
    (read,) = read_rules([(name, inputs)])
    assert isinstance(read, FirewallRule)
    assert read.name == "resource-name"
    assert decide([read], to(address="2001:db8::1")).allowed is False
    assert decide([read], to(address="192.0.2.1")).allowed is True


def test_a_name_resolving_to_a_private_address_meets_the_ranges_too() -> None:
    rules = read_rules(
        [
            rule("deny-private", 900, "deny", destIpRanges=["10.0.0.0/8"]),
            rule("allow-pypi", 1000, "allow", destFqdns=["pypi.org"]),
        ]
    )
    rebound = Probe(port=443, name="pypi.org", address=ipaddress.ip_address("10.8.0.5"))
    assert decide(rules, rebound) == Decision(False, "deny-private", False, ())
    public = Probe(port=443, name="pypi.org", address=ipaddress.ip_address("151.101.0.223"))
    assert decide(rules, public) == Decision(True, "allow-pypi", True, ())


V4 = frozenset({4})
NET = ipaddress.ip_network


def test_allowed_takes_out_what_earlier_denies_cover() -> None:
    rules = read_rules(
        [
            rule("deny-private", 900, "deny", destIpRanges=["10.0.0.0/8", "169.254.0.0/16"]),
            rule("allow-pypi", 1000, "allow", destFqdns=["pypi.org"], l4=[tcp(443)]),
            rule("allow-ip", 1001, "allow", destIpRanges=["93.184.216.34/32"], l4=[tcp(443)]),
            rule("deny-all-ipv4", 65000, "deny", destIpRanges=["0.0.0.0/0"]),
            rule("deny-all-ipv6", 65001, "deny", destIpRanges=["::/0"]),
        ]
    )
    assert allowed(rules, V4) == [
        Allowed("allow-pypi", frozenset({443}), fqdn="pypi.org"),
        Allowed("allow-ip", frozenset({443}), block=NET("93.184.216.34/32")),
    ]


def test_the_implied_allow_keeps_what_no_deny_covers() -> None:
    rules = read_rules(
        [
            rule("deny-private", 900, "deny", destIpRanges=["10.0.0.0/8"]),
            rule("deny-web", 950, "deny", destIpRanges=["0.0.0.0/0"], l4=[tcp(80)]),
        ]
    )
    assert allowed(rules, V4) == [
        Allowed(None, "any", block=NET("0.0.0.0/0"), excluded=(NET("10.0.0.0/8"),)),
        Allowed(None, "any", block=NET("::/0")),
    ]


def test_a_deny_on_some_ports_takes_those_ports_out_of_a_held_range() -> None:
    rules = read_rules(
        [
            rule("deny-80", 900, "deny", destIpRanges=["0.0.0.0/0"], l4=[tcp(80)]),
            rule("allow", 1000, "allow", destIpRanges=["203.0.113.0/24"], l4=[tcp(80, 443)]),
            rule("allow-names", 1001, "allow", destFqdns=["a.example"], l4=[tcp(80, 443)]),
            rule("deny-all", 65000, "deny", destIpRanges=["0.0.0.0/0", "::/0"]),
        ]
    )
    assert allowed(rules, V4)[:2] == [
        Allowed("allow", frozenset({443}), block=NET("203.0.113.0/24")),
        Allowed("allow-names", frozenset({443}), fqdn="a.example"),
    ]


def test_names_leaving_by_ipv6_too_need_both_families_denied() -> None:
    rules = read_rules(
        [
            rule("deny-v4", 10, "deny", destIpRanges=["0.0.0.0/0"]),
            rule("allow-name", 20, "allow", destFqdns=["a.example"], l4=[tcp(443)]),
        ]
    )
    assert [a.fqdn for a in allowed(rules, V4) if a.fqdn] == []
    assert [a.fqdn for a in allowed(rules, frozenset({4, 6})) if a.fqdn] == ["a.example"]


def test_an_allow_rule_the_model_cannot_read_is_refused_not_skipped() -> None:
    # A source filter on an allow rule: skipped, the rule's exfil.example.net vanished from
    # what the readers saw (failing input of a review).
    source = rule("allow-src", 999, "allow", destFqdns=["exfil.example.net"], l4=[tcp(443)])
    source[1]["match"]["srcIpRanges"] = ["0.0.0.0/0"]
    targeted = rule("allow-sa", 998, "allow", destFqdns=["exfil.example.net"], l4=[tcp(443)])
    targeted[1]["targetServiceAccounts"] = ["sandbox@example.iam.gserviceaccount.com"]
    inspected = rule("inspect", 997, "apply_security_profile_group", destIpRanges=["0.0.0.0/0"])
    deny_all = rule("deny-all", 65000, "deny", destIpRanges=["0.0.0.0/0", "::/0"])
    with pytest.raises(ValueError) as refused:
        allowed(read_rules([source, deny_all]), V4)
    assert str(refused.value) == (
        "firewall policy rule allow-src: allows with match.srcIpRanges, which the model does "
        "not read, so what it admits is unknown"
    )
    with pytest.raises(ValueError) as refused:
        allowed(read_rules([targeted, deny_all]), V4)
    assert str(refused.value) == (
        "firewall policy rule allow-sa: allows with targetServiceAccounts, which the model does "
        "not read, so what it admits is unknown"
    )
    with pytest.raises(ValueError) as refused:
        allowed(read_rules([inspected, deny_all]), V4)
    assert str(refused.value) == (
        "firewall policy rule inspect: action 'apply_security_profile_group' is none of allow, "
        "deny and goto_next, so what it admits is unknown"
    )


def test_a_deny_the_model_cannot_read_is_skipped_so_the_result_is_wider() -> None:
    narrowed = rule("deny-sa", 10, "deny", destIpRanges=["0.0.0.0/0", "::/0"])
    narrowed[1]["targetServiceAccounts"] = ["other@example.iam.gserviceaccount.com"]
    assert allowed(read_rules([narrowed]), V4) == [
        Allowed(None, "any", block=NET("0.0.0.0/0")),
        Allowed(None, "any", block=NET("::/0")),
    ]


def test_udp_only_rules_open_no_tcp() -> None:
    (only,) = read_rules([rule("dns", 10, "allow", destIpRanges=["8.8.8.8/32"], l4=[udp()])])
    assert tcp_ports(only) is None
    assert allowed([only], V4)[0].rule is None


def udp() -> dict[str, Any]:
    return {"ipProtocol": "udp", "ports": ["53"]}
