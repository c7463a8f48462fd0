"""SBX-NET-008: each target's egress, read from the stack's resources, is the stack's contract.

``sandboxkit check`` gives the pack the stack's contracts (``pack_config.contracts_config``); a pack
run without them (``pulumi preview --policy-pack`` with the plain config/<environment>.json)
reports each listed target's missing contract (run ``sandboxkit pack-config``) and still what no
contract expresses.
"""

from __future__ import annotations

import dataclasses
import json
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import empty_pb2
from pulumi.runtime import rpc
from typer.testing import CliRunner

import support as testing
from sandboxkit import gate
from sandboxkit.boundary import NON_PUBLIC_IPV4
from sandboxkit.cli import app
from sandboxkit.gate.crossguard import analyze, configure
from sandboxkit.gate.pack_config import CONTRACT_POLICY, contracts_config, policy_config
from sandboxkit.render import RenderedStack, secret_wrap
from sandboxkit.secrets import UNKNOWN_SECRET
from sandboxkit.targets import TARGET_MODULES

TARGET_ORDER = list(TARGET_MODULES)

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
    analyzer: gate.InProcessAnalyzer,
    rendered: RenderedStack,
    contracts: bool,
    document: dict[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """SBX-NET-008's (message, resource name) reports, with or without the stack's contracts,
    the pack configured from ``document`` (a pack config file's object) as the Pulumi CLI does."""
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    config = policy_config(info, document or {}, "test")
    level, props = config[CONTRACT_POLICY]
    if contracts:
        config[CONTRACT_POLICY] = (level, {**props, "contracts": contracts_config(rendered)})
    configure(analyzer, config)
    return [
        (d.message.removeprefix(f"{d.description}\n"), d.urn.rsplit("::", 1)[-1])
        for d in analyze(analyzer, rendered)
        if d.policyName == CONTRACT_POLICY
    ]


def no_contract(target: str) -> tuple[str, str]:
    """SBX-NET-008's report on a listed target the pack config gives no contract (stack-wide)."""
    return (
        f"{target} has no egress contract in the pack config, so its egress cannot be compared "
        "with the stack's profile; run the pack with the config `sandboxkit pack-config --stack "
        "<stack> --out <file>` writes (pulumi preview/up --policy-pack-config <file>), which "
        "holds every target's contract.",
        "",
    )


DEV_WITHOUT_CONTRACTS = [no_contract(t) for t in ("kubernetes", "aws-microvm", "local")]


def test_the_plain_prod_config_reports_every_missing_contract_as_mandatory(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    # README's prod `pulumi up` passed config/prod.json, which holds no contracts: SBX-NET-008
    # compared nothing and said nothing.
    prod = testing.shipped_render(PROJECT, "prod")
    document = json.loads((gate.pack_dir(PROJECT) / "config" / "prod.json").read_text())
    assert contract_reports(analyzer, prod, contracts=False, document=document) == [
        no_contract(target) for target in sorted(prod.spec.targets, key=TARGET_ORDER.index)
    ]
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert policy_config(info, document, "prod.json")[CONTRACT_POLICY][0] == "mandatory"
    assert contract_reports(analyzer, prod, contracts=True, document=document) == []


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


def _narrowed(dev: RenderedStack) -> RenderedStack:
    return _with_rules(dev, [line for line in _rules(dev) if "pythonhosted" not in line])


def test_a_dropped_entry_is_narrower_only_against_the_stacks_contract(
    analyzer: gate.InProcessAnalyzer, dev: RenderedStack
) -> None:
    narrowed = _narrowed(dev)
    assert contract_reports(analyzer, narrowed, contracts=False) == DEV_WITHOUT_CONTRACTS
    reports = contract_reports(analyzer, narrowed, contracts=True)
    assert {resource for _, resource in reports} == {"aws-microvm"}
    assert (
        "aws-microvm differs from the stack's egress contract: narrower: "
        "sbx-probe.pythonhosted.org:443 over tls (one-below of *.pythonhosted.org:443) is refused; "
        "the contract admits it; deploy the target's component unchanged for this profile "
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
    assert contract_reports(analyzer, widened, contracts=False) == DEV_WITHOUT_CONTRACTS
    [(message, resource)] = contract_reports(analyzer, widened, contracts=True)
    assert resource == NAME_RULES
    assert message.startswith(
        "aws-microvm differs from the stack's egress contract: wider: exfil.example.net:443 "
        f"over tls (grant of aws:networkfirewall/ruleGroup:RuleGroup {NAME_RULES}) is admitted by "
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
    assert [r for r in reports if r in DEV_WITHOUT_CONTRACTS] == DEV_WITHOUT_CONTRACTS
    reports = [r for r in reports if r not in DEV_WITHOUT_CONTRACTS]
    assert reports
    assert {resource for _, resource in reports} == {NAME_RULES}
    assert all(
        message.startswith(
            "aws-microvm grants what no egress contract expresses: connect pythonhosted.org "
            "(exact-and-below) on 443"
        )
        for message, _ in reports
    )


def test_pack_config_writes_the_environments_config_with_the_stacks_contracts(
    analyzer: gate.InProcessAnalyzer, dev: RenderedStack, tmp_path: Path
) -> None:
    out = tmp_path / "dev.json"
    result = CliRunner().invoke(
        app, ["pack-config", "--stack", "dev", "--out", str(out), "--project-dir", str(PROJECT)]
    )
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"wrote {out}; use it with: pulumi preview --stack dev --policy-pack "
        f"policy-packs/sandbox-guard --policy-pack-config {out}\n"
    )
    written = json.loads(out.read_text())
    environment = json.loads((gate.pack_dir(PROJECT) / "config" / "dev.json").read_text())
    assert {k: v for k, v in written.items() if k != CONTRACT_POLICY} == {
        k: v for k, v in environment.items() if k != CONTRACT_POLICY
    }
    assert written[CONTRACT_POLICY]["contracts"] == contracts_config(dev)
    # The written file alone, as the Pulumi CLI reads it, finds what sandboxkit check finds.
    reports = contract_reports(analyzer, _narrowed(dev), contracts=False, document=written)
    assert {resource for _, resource in reports} == {"aws-microvm"}


def test_pack_config_keeps_a_policy_level_given_as_a_string(tmp_path: Path) -> None:
    given = tmp_path / "given.json"
    given.write_text(json.dumps({"all": "advisory", CONTRACT_POLICY: "mandatory"}))
    out = tmp_path / "out.json"
    args = ["pack-config", "--stack", "dev", "--out", str(out), "--project-dir", str(PROJECT)]
    result = CliRunner().invoke(app, [*args, "--policy-pack-config", str(given)])
    assert result.exit_code == 0, result.output
    entry = json.loads(out.read_text())[CONTRACT_POLICY]
    assert set(entry) == {"enforcementLevel", "contracts"}
    assert entry["enforcementLevel"] == "mandatory"


def test_pack_config_refuses_a_pack_config_naming_an_unknown_policy(tmp_path: Path) -> None:
    given = tmp_path / "given.json"
    given.write_text(json.dumps({"sbx-net-999": "mandatory"}))
    out = tmp_path / "out.json"
    args = ["pack-config", "--stack", "dev", "--out", str(out), "--project-dir", str(PROJECT)]
    result = CliRunner().invoke(app, [*args, "--policy-pack-config", str(given)])
    assert result.exit_code == 2
    assert f"{given}: sbx-net-999: got 'mandatory'; expected a policy of the pack or 'all'" in (
        result.output
    )
    assert "Traceback" not in result.output
    assert not out.exists()


UNCHANGED = (
    "deploy the target's component unchanged (SBX-NET-001 and SBX-NET-002 name inputs that "
    "widen egress)"
)
PLAIN_CONFIG = (
    "the reader met a Pulumi secret the offline render cannot read: give that input as plain "
    "config (it is not a credential)"
)


def _unreadable(policy: str, subject: str, refusal: str, fix: str = UNCHANGED) -> str:
    return (
        f"Cannot verify {policy} on {subject}: its egress reader cannot read what the resources "
        f"grant ({refusal}), so what sandbox code may reach is unknown; {fix}."
    )


def test_a_target_its_reader_refuses_is_reported_not_skipped(
    analyzer: gate.InProcessAnalyzer, dev: RenderedStack
) -> None:
    # A domain list holding "*" (SBX-NET-002's, disabled here) is no name the reader can match:
    # the target was skipped, so the contract check passed it.
    everything = testing.with_input(
        dev,
        NAME_RULES,
        ("ruleGroup", "rulesSource"),
        {
            "rulesSourceList": {
                "generatedRulesType": "ALLOWLIST",
                "targetTypes": ["TLS_SNI"],
                "targets": ["*"],
            }
        },
    )
    off = {"sbx-net-001": "disabled", "sbx-net-002": "disabled"}
    refusal = "name grant *: host '*' goes with scope any, only"
    expected = [(_unreadable("SBX-NET-008", "aws-microvm", refusal), "aws-microvm")]
    assert contract_reports(analyzer, everything, contracts=True, document=off) == expected
    assert contract_reports(analyzer, everything, contracts=False, document=off) == [
        no_contract("kubernetes"),
        *expected,
        no_contract("local"),
    ]


def test_a_widened_target_with_an_unparsable_input_is_reported_when_net_005_is_off(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    # The failing input: staging's Cloud NGFW allow rule widened to exfil.example.net, and the
    # deny-all rule's priority a secret (the offline render keeps its stand-in text, which the
    # reader cannot parse as a number). SBX-NET-005, which crashes on the same input, is off in
    # the pack config; the widened stack passed SBX-NET-006 and SBX-NET-008 silently.
    staging = testing.shipped_render(PROJECT, "staging")
    allow = "gcp-cloudrun-allow-fqdn-443"
    names = list(testing.named(staging.resources, allow).inputs["match"]["destFqdns"])
    widened = testing.with_input(
        staging, allow, ("match", "destFqdns"), [*names, "exfil.example.net"]
    )
    widened = testing.with_input(
        widened, "gcp-cloudrun-deny-all-ipv4", ("priority",), secret_wrap(UNKNOWN_SECRET)
    )
    config = tmp_path / "pack.json"
    config.write_text(json.dumps({"all": "mandatory", "sbx-net-005": "disabled"}))
    before = gate.check_rendered(analyzer, staging, PROJECT, config)
    after = gate.check_rendered(analyzer, widened, PROJECT, config)
    known = {(v.policy, v.urn) for v in before.violations}
    refusal = f"invalid literal for int() with base 10: '{UNKNOWN_SECRET}'"
    assert [
        (v.policy, v.urn.rsplit("::", 1)[-1], v.message.rsplit("\n", 1)[-1])
        for v in after.violations
        if (v.policy, v.urn) not in known
    ] == [
        (policy, "gcp-cloudrun", _unreadable(policy, "gcp-cloudrun", refusal, PLAIN_CONFIG))
        for policy in ("SBX-NET-006", "SBX-NET-008")
    ]
    assert after.failed


ALLOW_FQDN = "gcp-cloudrun-allow-fqdn-443"


def _exfil_rule(rendered: RenderedStack, **extra: Any) -> RenderedStack:
    """A copy of the Cloud NGFW allow rule, beside it under the component, allowing
    exfil.example.net with ``extra`` inputs."""
    rule = testing.named(rendered.resources, ALLOW_FQDN)
    inputs = json.loads(json.dumps(dict(rule.inputs)))
    inputs.update(ruleName="allow-exfil", priority=999.0, **extra)
    inputs["match"]["destFqdns"] = ["exfil.example.net"]
    name = "gcp-cloudrun-allow-exfil"
    copy = dataclasses.replace(rule, name=name, urn=f"{rule.urn.rpartition('::')[0]}::{name}")
    copy = dataclasses.replace(copy, inputs=inputs)
    return dataclasses.replace(rendered, resources=(*rendered.resources, copy))


def _new_findings(
    analyzer: gate.InProcessAnalyzer, before: RenderedStack, after: RenderedStack
) -> list[tuple[str, str, str]]:
    """(policy, resource name, message) of each finding of ``after`` that ``before`` lacks,
    under the stack's shipped pack config."""
    known = {(v.policy, v.urn) for v in gate.check_rendered(analyzer, before, PROJECT).violations}
    return [
        (v.policy, v.urn.rsplit("::", 1)[-1], v.message.rsplit("\n", 1)[-1])
        for v in gate.check_rendered(analyzer, after, PROJECT).violations
        if (v.policy, v.urn) not in known
    ]


def test_an_allow_rule_its_reader_does_not_model_is_reported_by_every_reading_check(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    # Failing input of a review: a source filter made the reader skip the allow rule, so
    # exfil.example.net passed SBX-NET-005, 006 and 008.
    staging = testing.shipped_render(PROJECT, "staging")
    widened = _exfil_rule(staging)
    widened = testing.with_input(
        widened, "gcp-cloudrun-allow-exfil", ("match", "srcIpRanges"), ["0.0.0.0/0"]
    )
    refusal = (
        "firewall policy rule gcp-cloudrun-allow-exfil: allows with match.srcIpRanges, which "
        "the model does not read, so what it admits is unknown"
    )
    assert _new_findings(analyzer, staging, widened) == [
        (
            "SBX-NET-005",
            "gcp-cloudrun-service",
            _unreadable("SBX-NET-005", "Cloud Run service gcp-cloudrun-service", refusal),
        ),
        ("SBX-NET-006", "gcp-cloudrun", _unreadable("SBX-NET-006", "gcp-cloudrun", refusal)),
        ("SBX-NET-008", "gcp-cloudrun", _unreadable("SBX-NET-008", "gcp-cloudrun", refusal)),
    ]


def test_a_resource_with_an_asset_input_is_still_read(analyzer: gate.InProcessAnalyzer) -> None:
    # Failing input of a review: an asset anywhere in a resource's inputs left the whole
    # resource out of what the readers read, so its exfil.example.net passed SBX-NET-008.
    staging = testing.shipped_render(PROJECT, "staging")
    asset = {rpc._special_sig_key: rpc._special_asset_sig, "text": "x"}
    widened = _exfil_rule(staging, description=asset)
    assert ("SBX-NET-008", "gcp-cloudrun-allow-exfil") in {
        (policy, resource) for policy, resource, _ in _new_findings(analyzer, staging, widened)
    }


def test_an_allow_rule_whose_policy_is_an_unreadable_secret_counts(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    # Failing input of a review: the rule was linked to no policy, so no reader saw it.
    staging = testing.shipped_render(PROJECT, "staging")
    widened = testing.with_input(
        _exfil_rule(staging),
        "gcp-cloudrun-allow-exfil",
        ("firewallPolicy",),
        secret_wrap(UNKNOWN_SECRET),
    )
    found = {
        (policy, resource) for policy, resource, _ in _new_findings(analyzer, staging, widened)
    }
    assert ("SBX-NET-008", "gcp-cloudrun-allow-exfil") in found


def test_a_priority_that_is_no_number_is_reported_not_compared(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    # A review's input: with allow rules present (staging), SBX-NET-005 compared the deny-all's
    # text priority with the allows' numbers and crashed AnalyzeStack.
    staging = testing.shipped_render(PROJECT, "staging")
    text = testing.with_input(staging, "gcp-cloudrun-deny-all-ipv4", ("priority",), "last")
    refusal = "invalid literal for int() with base 10: 'last'"
    service = "gcp-cloudrun-service"
    assert _new_findings(analyzer, staging, text) == [
        (
            "SBX-NET-005",
            service,
            f"Cannot tell whether the deny-all egress rule for Cloud Run service {service} "
            "comes after every allow rule: the priority of gcp-cloudrun-deny-all-ipv4 is not a "
            "number; give each rule a numeric priority.",
        ),
        (
            "SBX-NET-005",
            service,
            _unreadable("SBX-NET-005", f"Cloud Run service {service}", refusal),
        ),
        ("SBX-NET-006", "gcp-cloudrun", _unreadable("SBX-NET-006", "gcp-cloudrun", refusal)),
        ("SBX-NET-008", "gcp-cloudrun", _unreadable("SBX-NET-008", "gcp-cloudrun", refusal)),
    ]


def test_a_block_grant_is_probed_at_a_public_address_it_admits(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    # A review's input: prod's NetworkPolicy opened to the two halves of the IPv4 space less
    # every non-public block (and 1.1.1.1): essentially the public internet, with no finding,
    # since block grants were left to SBX-NET-001, which flags 0.0.0.0/0 alone.
    prod = testing.shipped_render(PROJECT, "prod")

    def public_part(half: str, *more: str) -> dict[str, Any]:
        inside = [b for b in NON_PUBLIC_IPV4 if IPv4Network(b).subnet_of(IPv4Network(half))]
        return {"ipBlock": {"cidr": half, "except": [*inside, *more]}}

    halves = [public_part("0.0.0.0/1", "1.1.1.1/32"), public_part("128.0.0.0/1")]
    widened = testing.with_input(
        prod,
        "kubernetes-network-policy",
        ("spec", "egress"),
        [{"to": halves, "ports": [{"protocol": "TCP", "port": 443}]}],
    )
    reports = contract_reports(analyzer, widened, contracts=True)
    assert sorted(
        (message.split(" is admitted")[0], resource)
        for message, resource in reports
        if message.startswith("kubernetes differs")
    ) == [
        (
            "kubernetes differs from the stack's egress contract: wider: 1.0.0.0:443 "
            "over tcp (grant of NetworkPolicy kubernetes-network-policy)",
            "kubernetes-network-policy",
        ),
        (
            "kubernetes differs from the stack's egress contract: wider: 128.0.0.0:443 "
            "over tcp (grant of NetworkPolicy kubernetes-network-policy)",
            "kubernetes-network-policy",
        ),
    ]
