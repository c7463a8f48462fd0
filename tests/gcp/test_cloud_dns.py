"""The readers' model of Cloud DNS response policies, on the documentation's own examples."""

from __future__ import annotations

from sandboxkit.gcp.cloud_dns import Outcome, PolicyRule, answer, matching_rule

# pulumi-gcp / terraform-provider-google example "dns_response_policy_rule_basic".
BASIC = {
    "dnsName": "dns.example.com.",
    "localData": {
        "localDatas": [
            {"name": "dns.example.com.", "type": "A", "ttl": 300, "rrdatas": ["192.0.2.91"]}
        ]
    },
}
# The provider's bypass test: the same selector with behavior instead of data.
BYPASS = {"dnsName": "dns.example.com.", "behavior": "bypassResponsePolicy"}
# gcloud dns response-policies rules create examples: local data CNAME, and a bypass.
GCLOUD_CNAME = {
    "dnsName": "www.zone.com.",
    "localData": {
        "localDatas": [
            {"name": "www.zone.com.", "type": "CNAME", "ttl": 21600, "rrdatas": ["zone.com."]}
        ]
    },
}


def rules(*inputs: dict) -> list[PolicyRule]:
    return [PolicyRule.from_inputs(i) for i in inputs]


def test_the_basic_example_answers_its_name_with_its_local_data() -> None:
    policy = rules(BASIC)
    assert PolicyRule.from_inputs(BASIC).records == {"A": ("192.0.2.91",)}
    assert answer(policy, "dns.example.com") is Outcome.LOCAL_DATA
    # An exact selector matches its own name only.
    assert answer(policy, "x.dns.example.com") is Outcome.RESOLVED
    assert answer(policy, "example.com") is Outcome.RESOLVED
    # The name exists in the policy with an A record only: AAAA gets no data, not the internet.
    assert answer(policy, "dns.example.com", "AAAA") is Outcome.NO_DATA


def test_a_bypass_lets_the_query_continue() -> None:
    assert answer(rules(BYPASS), "dns.example.com") is Outcome.RESOLVED


def test_the_gcloud_cname_example() -> None:
    policy = rules(GCLOUD_CNAME)
    assert answer(policy, "www.zone.com", "CNAME") is Outcome.LOCAL_DATA
    assert answer(policy, "www.zone.com", "A") is Outcome.NO_DATA
    assert answer(policy, "zone.com") is Outcome.RESOLVED


def test_a_bypass_exempts_a_subdomain_from_a_broader_wildcard() -> None:
    # The REST reference: bypassResponsePolicy "when used with wildcard selectors, lets you
    # exempt specific subdomains from a broader Response Policy Rule".
    wildcard = {**BASIC, "dnsName": "*.example.com."}
    policy = rules(wildcard, BYPASS)
    assert answer(policy, "dns.example.com") is Outcome.RESOLVED
    assert answer(policy, "other.example.com") is Outcome.LOCAL_DATA
    assert answer(policy, "a.b.example.com") is Outcome.LOCAL_DATA
    # Below the bypassed name, the longest matching suffix is the wildcard again.
    assert answer(policy, "x.dns.example.com") is Outcome.LOCAL_DATA
    # A wildcard never matches its own base name.
    assert answer(policy, "example.com") is Outcome.RESOLVED


def test_the_longest_suffix_wins_whatever_the_order() -> None:
    catch_all = {"dnsName": "*.", "localData": {"localDatas": [{"type": "TXT", "rrdatas": ["x"]}]}}
    narrow = {"dnsName": "*.pythonhosted.org.", "behavior": "bypassResponsePolicy"}
    for order in ((catch_all, narrow), (narrow, catch_all)):
        policy = rules(*order)
        assert matching_rule(policy, "files.pythonhosted.org") == PolicyRule.from_inputs(narrow)
        assert matching_rule(policy, "pythonhosted.org") == PolicyRule.from_inputs(catch_all)
        assert answer(policy, "a.b.pythonhosted.org") is Outcome.RESOLVED
        assert answer(policy, "pythonhosted.org") is Outcome.NO_DATA
        assert answer(policy, "x.attacker.example") is Outcome.NO_DATA
        assert answer(policy, "x.attacker.example", "TXT") is Outcome.LOCAL_DATA


def test_names_are_compared_without_case_and_with_or_without_the_final_dot() -> None:
    policy = rules({**BYPASS, "dnsName": "DNS.Example.COM"})
    assert policy[0].dns_name == "dns.example.com."
    assert matching_rule(policy, "dns.EXAMPLE.com.") is policy[0]
    assert matching_rule([], "anything.example") is None
