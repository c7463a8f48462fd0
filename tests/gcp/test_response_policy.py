"""The sandbox network's response policy: the rules for each mode, and what they answer."""

from __future__ import annotations

import re

import pytest

from sandboxkit.egress_contract import parse_rule
from sandboxkit.gcp.cloud_dns import Outcome, PolicyRule, answer
from sandboxkit.gcp.response_policy import (
    CATCH_ALL_RULE,
    REFUSAL_TEXT,
    ResponseRule,
    response_rules,
    rule_name,
)

ALLOWLIST = [
    parse_rule(e)
    for e in ("pypi.org", "files.pythonhosted.org", "api.example.com:8443", "pypi.org:80")
]
ALLOWLIST_WITH_IP = [*ALLOWLIST, parse_rule("93.184.216.34"), parse_rule("*.pythonhosted.org")]


def as_rendered(rules: tuple[ResponseRule, ...]) -> list[PolicyRule]:
    """The rules in the wire form the component renders them in, read back by the model."""
    return [
        PolicyRule.from_inputs(
            {"dnsName": r.dns_name, "behavior": "bypassResponsePolicy"}
            if r.bypass
            else {
                "dnsName": r.dns_name,
                "localData": {"localDatas": [{"type": "TXT", "rrdatas": [REFUSAL_TEXT]}]},
            }
        )
        for r in rules
    ]


def test_allowlist_bypasses_each_listed_name_once_and_answers_the_rest() -> None:
    rules = response_rules("allowlist", ALLOWLIST)
    assert [(r.dns_name, r.bypass) for r in rules] == [
        ("*.", False),
        ("api.example.com.", True),
        ("files.pythonhosted.org.", True),
        ("metadata.google.internal.", True),
        ("pypi.org.", True),
    ]
    assert rules[0].rule_name == CATCH_ALL_RULE


def test_ip_entries_need_no_dns_and_wildcards_bypass_below_their_base() -> None:
    selectors = {r.dns_name for r in response_rules("allowlist", ALLOWLIST_WITH_IP)}
    assert "*.pythonhosted.org." in selectors
    assert "pythonhosted.org." not in selectors
    assert not any("93.184" in s for s in selectors)


def test_deny_resolves_nothing_but_the_metadata_server_and_open_has_no_policy() -> None:
    assert [(r.dns_name, r.bypass) for r in response_rules("deny", ALLOWLIST)] == [
        ("*.", False),
        ("metadata.google.internal.", True),
    ]
    assert response_rules("open", ALLOWLIST) == ()
    with pytest.raises(ValueError, match="deny, allowlist or open"):
        response_rules("closed", ())


def test_cname_chain_names_are_bypassed_in_allowlist_only() -> None:
    chain = ["dualstack.python.map.fastly.net"]
    assert "dualstack.python.map.fastly.net." in {
        r.dns_name for r in response_rules("allowlist", ALLOWLIST, chain)
    }
    assert "dualstack.python.map.fastly.net." not in {
        r.dns_name for r in response_rules("deny", ALLOWLIST, chain)
    }


@pytest.mark.parametrize(
    ("qname", "outcome"),
    [
        ("pypi.org", Outcome.RESOLVED),
        ("files.pythonhosted.org", Outcome.RESOLVED),
        ("api.example.com", Outcome.RESOLVED),
        ("metadata.google.internal", Outcome.RESOLVED),
        # The tunnel: answered inside Cloud DNS, never sent to attacker.example's servers.
        ("x.attacker.example", Outcome.NO_DATA),
        ("c2VjcmV0.x.attacker.example", Outcome.NO_DATA),
        # One and two labels below a listed name, and its apex: not listed, not resolved.
        ("x.pypi.org", Outcome.NO_DATA),
        ("a.b.pypi.org", Outcome.NO_DATA),
        ("pythonhosted.org", Outcome.NO_DATA),
        ("example.com", Outcome.NO_DATA),
        ("169.254.169.254.nip.io", Outcome.NO_DATA),
    ],
)
def test_what_a_sandbox_query_gets_from_the_allowlist_policy(qname: str, outcome: Outcome) -> None:
    policy = as_rendered(response_rules("allowlist", ALLOWLIST))
    assert answer(policy, qname, "A") is outcome
    assert answer(policy, qname, "AAAA") is outcome


def test_the_refusal_answers_txt_queries_only() -> None:
    policy = as_rendered(response_rules("deny", ()))
    assert answer(policy, "x.attacker.example", "TXT") is Outcome.LOCAL_DATA
    assert answer(policy, "x.attacker.example", "HTTPS") is Outcome.NO_DATA


def test_rule_names_are_short_labels_distinct_for_names_with_one_slug() -> None:
    long_name = ".".join(["label"] * 40) + ".example.com."
    names = [rule_name(n) for n in ("a-b.com.", "a.b-com.", "*.a.b-com.", long_name)]
    assert names[0].startswith("allow-a-b-com-")
    assert names[2].startswith("allow-any-a-b-com-")
    assert len(set(names)) == 4
    for name in names:
        assert len(name) <= 63
        assert re.fullmatch(r"[a-z][-a-z0-9]*[a-z0-9]", name)
    assert rule_name("pypi.org.") == rule_name("pypi.org.")
