"""Each exporter against checkov itself: a known-bad input yields the expected CKV failure on the
right URN, the fixed input passes. One checkov run (its startup dominates) judges every case."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from checkov_support import require_checkov

from sandboxkit.checkov_bridge.exporters import arm_template, export_resources
from sandboxkit.checkov_bridge.runner import CheckovReport, scan
from sandboxkit.render import RenderedResource
from support import named, shipped_render

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkov_bin() -> Path:
    return require_checkov()


TEMPLATE = "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate"


def _resource(type_token: str, name: str, inputs: dict[str, Any]) -> RenderedResource:
    return RenderedResource(
        urn=f"urn:pulumi:t::sandboxkit::{type_token}::{name}",
        type=type_token,
        name=name,
        parent=None,
        custom=True,
        inputs=inputs,
    )


def _result(report: CheckovReport, check: str, urn: str) -> bool:
    found = {f.passed for f in report.findings if f.policy == check and f.urn == urn}
    assert len(found) == 1, f"{check} on {urn}: {found}"
    return found.pop()


def _templates() -> tuple[RenderedResource, RenderedResource]:
    template = named(shipped_render(PROJECT_DIR, "prod").resources, "kubernetes-template")
    writable = copy.deepcopy(dict(template.inputs))
    container = writable["spec"]["podTemplate"]["spec"]["containers"][0]
    container["securityContext"]["readOnlyRootFilesystem"] = False
    writable["metadata"]["name"] = "writable"
    return template, _resource(TEMPLATE, "bad", writable)


def test_kubernetes_template_with_writable_root_fails_ckv_k8s_22(report: CheckovReport) -> None:
    template, bad = _templates()
    assert _result(report, "CKV_K8S_22", template.urn) is True
    assert _result(report, "CKV_K8S_22", bad.urn) is False
    # The derived PodTemplate is what checkov judged; the finding names the template's URN.
    assert {f.resource for f in report.findings if f.urn == bad.urn} == {
        "PodTemplate.agent-sandboxes.writable",
        "SandboxTemplate.agent-sandboxes.writable",
    }


SG = "aws:ec2/securityGroup:SecurityGroup"


def _group(name: str, cidr: str) -> RenderedResource:
    return _resource(
        SG,
        name,
        {
            "description": "sandbox egress connector",
            "vpcId": "vpc-0123456789abcdef0",
            "egress": [
                {"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": [cidr]},
            ],
            "ingress": [
                {"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": [cidr]},
            ],
            "tags": {"managed-by": "sandboxkit"},
        },
    )


def test_terraform_plan_security_group_open_to_the_internet_fails_its_checks(
    report: CheckovReport,
) -> None:
    open_group, closed_group = _group("open", "0.0.0.0/0"), _group("closed", "10.20.0.0/16")
    for check in ("CKV_AWS_24", "CKV_AWS_382"):  # SSH from anywhere; all egress to anywhere
        assert _result(report, check, open_group.urn) is False, check
        assert _result(report, check, closed_group.urn) is True, check
    assert {f.resource for f in report.findings if f.urn == open_group.urn} == {
        "aws_security_group.open"
    }


POOL = "azure-native:app:ContainerAppsSessionPool"
# pulumi-azure-native's token of the 2024-02-02-preview API of the same resource.
VERSIONED_POOL = "azure-native:app/v20240202preview:ContainerAppsSessionPool"


def _pool(name: str, status: str, token: str = POOL) -> RenderedResource:
    return _resource(
        token,
        name,
        {
            "resourceGroupName": "rg-sandboxkit",
            "sessionPoolName": name,
            "location": "westeurope",
            "containerType": "PythonLTS",
            "poolManagementType": "Dynamic",
            "sessionNetworkConfiguration": {"status": status},
            "tags": {"managed-by": "sandboxkit"},
        },
    )


def test_arm_session_pool_with_egress_fails_the_kit_check(report: CheckovReport) -> None:
    open_pool, closed_pool = (
        _pool("open-pool", "EgressEnabled"),
        _pool("closed-pool", "EgressDisabled"),
    )
    assert _result(report, "CKV_SBX_9", open_pool.urn) is False
    assert _result(report, "CKV_SBX_9", closed_pool.urn) is True
    assert {f.resource for f in report.findings if f.urn == open_pool.urn} == {
        "Microsoft.App/sessionPools.open-pool"
    }


def _verdicts(report: CheckovReport, urn: str) -> dict[str, bool]:
    return {f.policy: f.passed for f in report.findings if f.urn == urn}


def test_a_versioned_session_pool_gets_every_checkov_verdict_of_the_plain_one(
    report: CheckovReport,
) -> None:
    for status in ("EgressEnabled", "EgressDisabled"):
        name = "open-pool" if status == "EgressEnabled" else "closed-pool"
        plain, versioned = _pool(name, status), _pool(f"v-{name}", status, VERSIONED_POOL)
        assert _verdicts(report, versioned.urn) == _verdicts(report, plain.urn)
        assert _verdicts(report, plain.urn)
    assert _result(report, "CKV_SBX_9", _pool("v-open-pool", "", VERSIONED_POOL).urn) is False


def test_the_arm_export_of_a_versioned_token_names_its_api_version() -> None:
    template, ids = arm_template(
        [_pool("p", "EgressDisabled"), _pool("v", "EgressDisabled", VERSIONED_POOL)]
    )
    assert set(ids) == {"Microsoft.App/sessionPools.p", "Microsoft.App/sessionPools.v"}
    bodies = {body["name"]: body for body in template["resources"]}
    assert bodies["p"]["apiVersion"] == "2025-02-02-preview"
    assert bodies["v"]["apiVersion"] == "2024-02-02-preview"
    rest = ("name", "apiVersion")
    assert {k: v for k, v in bodies["v"].items() if k not in rest} == {
        k: v for k, v in bodies["p"].items() if k not in rest
    }


@pytest.fixture(scope="module")
def report(checkov_bin: Path) -> CheckovReport:
    resources = [
        *_templates(),
        _group("open", "0.0.0.0/0"),
        _group("closed", "10.20.0.0/16"),
        _pool("open-pool", "EgressEnabled"),
        _pool("closed-pool", "EgressDisabled"),
        _pool("v-open-pool", "EgressEnabled", VERSIONED_POOL),
        _pool("v-closed-pool", "EgressDisabled", VERSIONED_POOL),
    ]
    return scan(
        PROJECT_DIR,
        [export_resources("t", resources)],
        include_project_files=False,
        executable=checkov_bin,
        baseline=(),
    )
