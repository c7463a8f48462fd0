"""SBX-NET-008: each target's egress, read from the stack's resources, is the stack's contract.

``sandboxkit check`` gives the pack the stack's contracts (``explain.contracts_config``); a pack
run without them (``pulumi preview --policy-pack`` with no such config) still reports what no
contract expresses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import empty_pb2

import support as testing
from sandboxkit import gate
from sandboxkit.explain import contracts_config
from sandboxkit.gate.crossguard import CONTRACT_POLICY, analyze, configure
from sandboxkit.gate.pack_config import policy_config
from sandboxkit.render import RenderedStack

PROJECT = Path(__file__).resolve().parents[2]
NAME_RULES = "aws-microvm-fw-domains"
RULES_STRING = ("ruleGroup", "rulesSource", "rulesString")


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


@pytest.fixture(scope="module")
def dev() -> RenderedStack:
    return testing.render_values(PROJECT, "dev", testing.stack_values(PROJECT, "dev"))


def _rules(rendered: RenderedStack) -> list[str]:
    return str(
        testing.named(rendered.resources, NAME_RULES).inputs["ruleGroup"]["rulesSource"][
            "rulesString"
        ]
    ).splitlines()


def _with_rules(rendered: RenderedStack, lines: list[str]) -> RenderedStack:
    return testing.with_input(rendered, NAME_RULES, RULES_STRING, "\n".join(lines))


def contract_reports(
    analyzer: gate.InProcessAnalyzer, rendered: RenderedStack, contracts: bool
) -> list[tuple[str, str]]:
    """SBX-NET-008's (message, resource name) reports, with or without the stack's contracts."""
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    config = policy_config(info, {}, "test")
    level, props = config[CONTRACT_POLICY]
    if contracts:
        config[CONTRACT_POLICY] = (level, {**props, "contracts": contracts_config(rendered)})
    configure(analyzer, config)
    return [
        (d.message.removeprefix(f"{d.description}\n"), d.urn.rsplit("::", 1)[-1])
        for d in analyze(analyzer, rendered)
        if d.policyName == CONTRACT_POLICY
    ]


def test_the_shipped_dev_stack_is_its_contract(
    analyzer: gate.InProcessAnalyzer, dev: RenderedStack
) -> None:
    assert contract_reports(analyzer, dev, contracts=True) == []


def test_contracts_config_is_each_listed_targets_profile_and_control_plane(
    dev: RenderedStack,
) -> None:
    assert contracts_config(dev)["aws-microvm"] == {
        "mode": "allowlist",
        "allow": ["pypi.org:443", "*.pythonhosted.org:443"],
        "controlPlane": ["agents.dev.example.com:443"],
    }
    assert tuple(contracts_config(dev)) == tuple(dev.spec.targets)


def test_a_dropped_entry_is_narrower_only_against_the_stacks_contract(
    analyzer: gate.InProcessAnalyzer, dev: RenderedStack
) -> None:
    narrowed = _with_rules(dev, [line for line in _rules(dev) if "pythonhosted" not in line])
    assert contract_reports(analyzer, narrowed, contracts=False) == []
    reports = contract_reports(analyzer, narrowed, contracts=True)
    assert {resource for _, resource in reports} == {"aws-microvm"}
    assert (
        "aws-microvm differs from the stack's egress contract: narrower: "
        "sbx-probe.pythonhosted.org:443 (one-below of *.pythonhosted.org:443) is refused; the "
        "contract admits it; deploy the target's component unchanged for this profile "
        "(sandboxkit preview --explain-egress shows every probe).",
        "aws-microvm",
    ) in reports


def test_a_rule_for_an_unlisted_host_is_wider_on_the_rule_group(
    analyzer: gate.InProcessAnalyzer, dev: RenderedStack
) -> None:
    extra = (
        "pass tls $HOME_NET any -> $EXTERNAL_NET 443 (flow:to_server, established; "
        'ssl_state:client_hello; tls.sni; content:"exfil.example.net"; nocase; startswith; '
        "endswith; sid:1999999;)"
    )
    widened = _with_rules(dev, [*_rules(dev), extra])
    assert contract_reports(analyzer, widened, contracts=False) == []
    [(message, resource)] = contract_reports(analyzer, widened, contracts=True)
    assert resource == NAME_RULES
    assert message.startswith(
        "aws-microvm differs from the stack's egress contract: wider: exfil.example.net:443 "
        f"(grant of aws:networkfirewall/ruleGroup:RuleGroup {NAME_RULES}) is admitted by "
        "exfil.example.net (exact) on 443"
    )


def test_a_wildcard_admitting_its_apex_is_reported_without_a_contract(
    analyzer: gate.InProcessAnalyzer, dev: RenderedStack
) -> None:
    apex = [
        line.replace('content:".pythonhosted.org"', 'dotprefix; content:".pythonhosted.org"')
        for line in _rules(dev)
    ]
    assert apex != _rules(dev)
    reports = contract_reports(analyzer, _with_rules(dev, apex), contracts=False)
    assert reports
    assert {resource for _, resource in reports} == {NAME_RULES}
    assert all(
        message.startswith(
            "aws-microvm grants what no egress contract expresses: connect pythonhosted.org "
            "(exact-and-below) on 443"
        )
        for message, _ in reports
    )
