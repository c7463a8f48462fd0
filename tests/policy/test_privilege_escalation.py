"""SBX-IAM-001 judges privilege escalation without a wildcard: known escalation methods
(cloudsplaining's maintained list) allowed on a wide resource, and refuses to pass a policy whose
``Resource`` it cannot read (a secret in the offline render)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pack_calls import resource_reports

import support as testing
from sandboxkit import gate
from sandboxkit.aws.guard import escalation_methods
from sandboxkit.config import ConfigSource
from sandboxkit.render import render_source
from sandboxkit.secrets import UNKNOWN_SECRET

PROJECT = Path(__file__).resolve().parents[2]
POLICY_TYPE = "aws:iam/policy:Policy"
EXECUTION_POLICY = "aws-microvm-execution-policy"
# Issue 15's execution role: no wildcard action, yet it can mint keys for any user.
ESCALATING = ["iam:CreateAccessKey", "iam:PassRole", "sts:AssumeRole"]


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


def _document(actions: list[str], resource: Any = "*", key: str = "Resource") -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": actions, key: resource}],
    }


def _findings(
    analyzer: gate.InProcessAnalyzer,
    document: dict[str, Any],
    secret_paths: frozenset[str] = frozenset(),
) -> set[tuple[str, str, str]]:
    values = testing.stack_values(PROJECT, "prod")
    for target in set(values["targets"]) - {"aws-microvm"}:
        del values[target]
    values["targets"] = ["aws-microvm"]
    values["aws-microvm"]["executionRolePolicy"] = document
    rendered = render_source(
        PROJECT, "prod", ConfigSource(values=values, secret_paths=secret_paths)
    )
    result = gate.check_rendered(analyzer, rendered, PROJECT)
    return {
        (v.policy, v.enforcement, v.message) for v in result.violations if v.policy == "SBX-IAM-001"
    }


def test_the_list_is_the_maintained_one() -> None:
    methods = escalation_methods()
    assert methods["CreateAccessKey"] == {"iam:createaccesskey"}
    assert methods["PassExistingRoleToNewLambdaThenInvoke"] == {
        "iam:passrole",
        "lambda:createfunction",
        "lambda:invokefunction",
    }
    assert len(methods) >= 21  # Rhino Security Labs' original 21 methods, at least


def test_an_escalating_execution_role_fails_prod(analyzer: gate.InProcessAnalyzer) -> None:
    assert _findings(analyzer, _document(ESCALATING)) == {
        (
            "SBX-IAM-001",
            "mandatory",
            f"IAM policy {EXECUTION_POLICY} lets its holder escalate privileges on every "
            "resource: CreateAccessKey (iam:createaccesskey); scope these actions to the named "
            "resources the role needs, or remove them (written in "
            "sandboxkit:aws-microvm.executionRolePolicy).",
        )
    }


def test_the_same_actions_on_named_resources_are_silent(analyzer: gate.InProcessAnalyzer) -> None:
    named = ["arn:aws:iam::123456789012:user/sandbox-ci"]
    assert _findings(analyzer, _document(ESCALATING, named)) == set()


def test_a_secret_resource_cannot_be_verified(analyzer: gate.InProcessAnalyzer) -> None:
    path = "aws-microvm.executionRolePolicy.Statement[0].Resource"
    found = _findings(analyzer, _document(ESCALATING, UNKNOWN_SECRET), frozenset({path}))
    assert found == {
        (
            "SBX-IAM-001",
            "mandatory",
            f"Cannot verify SBX-IAM-001 on aws:iam/rolePolicy:RolePolicy {EXECUTION_POLICY}: "
            "input policy.Statement[0].Resource is a Pulumi secret the offline render cannot "
            "read, and the verdict depends on it; give the value as plain config (it is not a "
            "credential) so the gate can read it.",
        )
    }


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            _document(["iam:PassRole", "lambda:CreateFunction", "lambda:InvokeFunction"]),
            "PassExistingRoleToNewLambdaThenInvoke (iam:passrole, lambda:createfunction, "
            "lambda:invokefunction)",
        ),
        (
            _document(["iam:PutRolePolicy"], ["arn:aws:iam::1:role/x"], "NotResource"),
            "PutRolePolicy (iam:putrolepolicy)",
        ),
        (
            _document(["iam:AttachRolePolicy"], "arn:aws:iam::1:role/*"),
            "AttachRolePolicy (iam:attachrolepolicy)",
        ),
    ],
    ids=["pass-role-to-lambda", "not-resource", "wildcard-arn"],
)
def test_methods_on_wide_resources_are_named(document: dict[str, Any], expected: str) -> None:
    (message,) = resource_reports("sbx-iam-001", POLICY_TYPE, {"policy": json.dumps(document)}, "p")
    assert message.endswith(
        f"resource: {expected}; scope these actions to the named resources "
        "the role needs, or remove them."
    )


@pytest.mark.parametrize(
    "document",
    [
        _document(["iam:PassRole", "lambda:CreateFunction"]),  # half a method
        _document(["iam:CreateAccessKey"], "arn:aws:iam::1:user/ci"),
        {"Statement": [{"Effect": "Deny", "Action": ["iam:CreateAccessKey"], "Resource": "*"}]},
    ],
    ids=["incomplete-method", "named-user", "deny"],
)
def test_no_method_on_a_wide_resource_is_silent(document: dict[str, Any]) -> None:
    assert resource_reports("sbx-iam-001", POLICY_TYPE, {"policy": json.dumps(document)}) == []
