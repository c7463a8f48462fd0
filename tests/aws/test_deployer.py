"""The aws-microvm deployer's IAM policy document, derived from the render and checked against
the providers' own calls and botocore's service models."""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import botocore.session
import pytest

from sandboxkit.aws import firewall_policy, microvm_image
from sandboxkit.aws.deployer import GRANTS, deployer_policy, grants_for, plan_deployer_policy
from sandboxkit.aws.dynamic_api import ApiProvider
from sandboxkit.aws.type_tokens import FIREWALL_POLICY_DOCUMENT, KIT_MICROVM_IMAGE
from sandboxkit.type_tokens import TypeToken
from support import shipped_render

T = "aws-microvm"
# IAM prefix -> the botocore services whose operations are that prefix's actions.
SERVICES = {
    "ec2": ("ec2",),
    "logs": ("logs",),
    "iam": ("iam",),
    "lambda": ("lambda", "lambda-core", "lambda-microvms"),
    "network-firewall": ("network-firewall",),
    "route53resolver": ("route53resolver",),
    "secretsmanager": ("secretsmanager",),
    "sts": ("sts",),
}
# Actions that authorize a call without being one: PassRole and PassNetworkConnector are
# checked when a role or connector is handed to a service; API Gateway's actions are the
# HTTP verbs of its management API; the *LogDelivery actions are CloudWatch Logs' permissions
# for vended logs, with no API of that name (CloudWatch Logs user guide, "Enabling logging from
# AWS services").
PERMISSION_ONLY = {
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "iam:PassRole",
    "lambda:PassNetworkConnector",
    "apigateway:GET",
    "apigateway:POST",
    "apigateway:PATCH",
    "apigateway:DELETE",
}
# Statements whose calls take no resource (STS identity, vended-log delivery).
NO_RESOURCE = {"ReadIdentity", "VendedLogDelivery"}


def document_for(project_dir: Path, stack: str) -> tuple[list[str], dict[str, Any]]:
    rendered = shipped_render(project_dir, stack)
    types = [r.type for r in rendered.resources if rendered.target_of(r) == T]
    plan = rendered.spec.plans[T]
    return types, plan_deployer_policy(types, plan, stack=stack, component=T)


def granted(document: dict[str, Any]) -> set[str]:
    return {action for s in document["Statement"] for action in s["Action"]}


def provider_calls(module: ModuleType, service: str) -> set[str]:
    """The IAM actions of every ``client.<method>(...)`` call in the provider's module."""
    client = boto3.Session(
        aws_access_key_id="a", aws_secret_access_key="b", region_name="eu-west-1"
    ).client(service)
    prefix = client.meta.service_model.signing_name
    tree = ast.parse(inspect.getsource(module))
    methods = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "client"
    }
    assert methods, f"no client calls found in {module.__name__}"
    return {f"{prefix}:{client.meta.method_to_api_mapping[m]}" for m in methods}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_rendered_type_has_its_permissions(project_dir: Path, stack: str) -> None:
    types, document = document_for(project_dir, stack)
    actions = granted(document)
    for resource_type in set(types):
        for grant in grants_for(resource_type):
            assert set(grant.actions) <= actions, resource_type
    # The dynamic providers: what their code calls (read from the code) is granted.
    assert provider_calls(firewall_policy, "network-firewall") <= actions
    assert provider_calls(microvm_image, "lambda-microvms") <= actions


@pytest.mark.parametrize(
    ("token", "provider"),
    [
        (FIREWALL_POLICY_DOCUMENT, firewall_policy.FirewallPolicyProvider),
        (KIT_MICROVM_IMAGE, microvm_image.MicrovmImageProvider),
    ],
    ids=["firewall-policy", "microvm-image"],
)
def test_a_dynamic_resource_is_granted_exactly_its_providers_calls(
    token: TypeToken, provider: type[ApiProvider]
) -> None:
    # Two sources apart: the grants table and the client calls in the provider's code. An
    # action granted that no call needs, or a call left out of the table, fails here; the
    # permission-only actions (PassRole, PassNetworkConnector) authorize no call of their own.
    granted_to = {action for grant in grants_for(token.token) for action in grant.actions}
    calls = provider_calls(sys.modules[provider.__module__], provider.service)
    assert granted_to - PERMISSION_ONLY == calls


def test_a_type_without_permissions_cannot_ship() -> None:
    with pytest.raises(LookupError, match=r"aws:sqs/queue:Queue: sandboxkit\.aws\.deployer"):
        deployer_policy(["aws:sqs/queue:Queue"], region="eu-west-1", component=T, stack="s")


def test_every_action_is_an_operation_of_its_service() -> None:
    session = botocore.session.get_session()
    operations: dict[str, set[str]] = {
        prefix: {op for name in names for op in session.get_service_model(name).operation_names}
        for prefix, names in SERVICES.items()
    }
    for resource_type, grants in GRANTS.items():
        for grant in grants:
            for action in grant.actions:
                if action in PERMISSION_ONLY:
                    continue
                prefix, operation = action.split(":")
                assert operation in operations[prefix], (resource_type, action)


def test_resources_are_scoped_to_the_kit_and_the_region(project_dir: Path) -> None:
    _, document = document_for(project_dir, "prod")
    by_sid = {s["Sid"]: s for s in document["Statement"]}
    for sid, statement in by_sid.items():
        if statement["Resource"] == ["*"]:
            assert sid in NO_RESOURCE or statement["Condition"] == {
                "StringEquals": {"aws:RequestedRegion": "eu-west-1"}
            }, sid
        else:
            regional = (":eu-west-1:", "arn:aws:iam::", "arn:aws:apigateway:eu-west-1::")
            assert all(any(p in r for p in regional) for r in statement["Resource"]), sid
    assert by_sid["KitRoles"]["Resource"] == ["arn:aws:iam::*:role/aws-microvm-*"]
    assert by_sid["KitLogGroups"]["Resource"] == [
        "arn:aws:logs:eu-west-1:*:log-group:/sandboxkit/prod/aws-microvm/*",
        "arn:aws:logs:eu-west-1:*:log-group:/sandboxkit/prod/aws-microvm/*:*",
    ]
    # The image build's connector, and the first firewall's service-linked role.
    assert by_sid["PassBuildConnector"]["Resource"] == [
        "arn:aws:lambda:eu-west-1:aws:network-connector:aws-network-connector:INTERNET_EGRESS"
    ]
    assert by_sid["FirstFirewallServiceRole"] == {
        "Sid": "FirstFirewallServiceRole",
        "Effect": "Allow",
        "Action": ["iam:CreateServiceLinkedRole"],
        "Resource": [
            "arn:aws:iam::*:role/aws-service-role/network-firewall.amazonaws.com/"
            "AWSServiceRoleForNetworkFirewall"
        ],
    }
    # Was missing from docs/running-for-real.md: the vended-log delivery of the firewall and
    # API Gateway logs.
    assert by_sid["VendedLogDelivery"]["Action"] == [
        "logs:CreateLogDelivery",
        "logs:DeleteLogDelivery",
        "logs:DescribeLogGroups",
        "logs:DescribeResourcePolicies",
        "logs:GetLogDelivery",
        "logs:ListLogDeliveries",
        "logs:PutResourcePolicy",
        "logs:UpdateLogDelivery",
    ]


def test_launcher_layers_are_readable() -> None:
    layer = "arn:aws:lambda:eu-west-1:123456789012:layer:tools:3"
    document = deployer_policy(
        ["aws:lambda/function:Function"], region="eu-west-1", component=T, stack="s", layers=[layer]
    )
    assert document["Statement"][-1] == {
        "Sid": "LauncherLayers",
        "Effect": "Allow",
        "Action": ["lambda:GetLayerVersion"],
        "Resource": [layer],
    }
