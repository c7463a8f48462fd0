"""Findings the checkov baseline accepts, in every format of ``check`` (issue 31 item 18): at
the level they would fail at, said to be accepted with the baseline entry's reason (JSON),
suppressed in SARIF's own place for it (``result.suppressions``), and the text pointing at the
reasons only when there are some. Built from ``CheckResult`` directly: no checkov run."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from sandboxkit import gate
from sandboxkit.checkov_bridge.baseline import Accepted
from sandboxkit.checkov_bridge.runner import CheckovFinding
from sandboxkit.gate.checkov_merge import with_checkov
from sandboxkit.gate.results import CheckResult, Violation

TEMPLATE = "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate"
URN = f"urn:pulumi:prod::sandboxkit::{TEMPLATE}::t"
REASON = "The kit sets the sandbox's CPU limit in the profile; the request follows it by design."


def finding(policy: str, accepted: bool) -> CheckovFinding:
    return CheckovFinding(
        policy=policy,
        name=f"Check {policy}",
        passed=False,
        urn=URN,
        type=TEMPLATE,
        file="export.yaml",
        resource="SandboxTemplate.t",
        accepted=(
            Accepted(check=policy, selector="resource_type", pattern="*", reason=REASON)
            if accepted
            else None
        ),
        framework="kubernetes",
    )


def prod(*findings: CheckovFinding) -> CheckResult:
    empty = CheckResult(stack="prod", environment="prod", stack_file="stacks/Pulumi.prod.yaml",
                        violations=())  # fmt: skip
    return with_checkov(empty, findings, "mandatory")


def test_an_accepted_finding_keeps_prods_level_and_says_it_is_accepted() -> None:
    result = prod(finding("CKV_K8S_8", accepted=True), finding("CKV_K8S_22", accepted=False))
    document = gate.format_json(result)
    [accepted] = document["accepted"]
    assert (accepted["policy"], accepted["enforcement"], accepted["accepted"]) == (
        "CKV_K8S_8",
        "mandatory",
        True,
    )
    assert accepted["reason"] == REASON
    [violation] = document["violations"]
    assert "accepted" not in violation and "reason" not in violation
    # Accepted, it never fails the gate: one mandatory violation, the unaccepted one.
    assert document["summary"]["mandatory"] == 1 and result.failed


def test_accepted_alone_passes_the_gate() -> None:
    result = prod(finding("CKV_K8S_8", accepted=True))
    assert not result.failed and gate.exit_code([result]) == 0


def test_sarif_suppresses_an_accepted_finding_at_its_level(shared_dir: Path) -> None:
    result = prod(finding("CKV_K8S_8", accepted=True), finding("CKV_K8S_22", accepted=False))
    log = gate.format_sarif([result])
    schema = json.loads((shared_dir / "reference/sarif/sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    [run] = [r for r in log["runs"] if r["tool"]["driver"]["name"] == "checkov"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert by_rule["CKV_K8S_8"]["level"] == "error"
    assert by_rule["CKV_K8S_8"]["suppressions"] == [
        {"kind": "external", "status": "accepted", "justification": REASON}
    ]
    assert "suppressions" not in by_rule["CKV_K8S_22"]


def test_text_points_at_the_reasons_only_when_there_are_some() -> None:
    with_reasons = gate.format_text([prod(finding("CKV_K8S_8", accepted=True))])
    assert "  checkov: 0 passed, 0 failed, 1 accepted by the baseline (reasons: --format json)" in (
        with_reasons.splitlines()
    )
    without = gate.format_text([prod(finding("CKV_K8S_22", accepted=False))])
    assert "  checkov: 0 passed, 1 failed, 0 accepted by the baseline" in without.splitlines()
    assert "reasons" not in without


def test_a_violation_without_a_reason_is_not_accepted() -> None:
    plain = Violation("SBX-NET-001", "high", "mandatory", URN, "m", "crossguard")
    assert not plain.accepted and plain.mandatory and "accepted" not in plain.document()
