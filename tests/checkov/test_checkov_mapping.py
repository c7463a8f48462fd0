"""The mapping table covers every type the components create, and the Terraform conversion
follows the plan's shape (snake_case, blocks as lists, maps untouched, secrets replaced)."""

from __future__ import annotations

import importlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import BaseModel

from sandboxkit.checkov_bridge.exporters import (
    SECRET_PLACEHOLDER,
    TF_PLAN_FILE,
    UndeclaredNestingError,
    export_resources,
    export_stack,
    snake_case,
    terraform_values,
)
from sandboxkit.checkov_bridge.mapping import (
    NOT_EXPORTED,
    NOT_EXPORTED_PREFIXES,
    TYPES,
    TerraformType,
    UnmappedTypeError,
    export_type,
)
from sandboxkit.config import ConfigSource, read_stack_file
from sandboxkit.profile import SandboxProfile
from sandboxkit.project import list_stacks, stack_file
from sandboxkit.render import RenderedResource, RenderedStack, render_source, secret_wrap
from sandboxkit.targets import TARGET_MODULES, get_target

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _variants() -> list[tuple[str, ConfigSource]]:
    """Every shipped stack, plus variants of dev that reach the components' optional children.

    Variants render under the stack name ``dev``: the program reads which config paths are
    secrets from the stack file of the stack it runs as.
    """
    out = []
    for stack in list_stacks(PROJECT_DIR):
        out.append((stack, read_stack_file(stack_file(PROJECT_DIR, stack))))
    dev = read_stack_file(stack_file(PROJECT_DIR, "dev"))
    k8s = dict(dev.values["kubernetes"])
    for settings in (
        {**k8s, "resolver": {**k8s["resolver"], "upstream": "node-local-dns"}},
        {**k8s, "runtimeClass": {"name": "gvisor", "create": False}},
    ):
        out.append(("dev", replace(dev, values={**dev.values, "kubernetes": settings})))
    return out


VARIANTS = _variants()


@pytest.fixture(scope="module")
def rendered() -> list[RenderedStack]:
    return [render_source(PROJECT_DIR, name, source) for name, source in VARIANTS]


def test_every_type_the_components_create_is_mapped_or_excluded_with_a_reason(
    rendered: list[RenderedStack],
) -> None:
    unmapped = set()
    for stack in rendered:
        for resource in stack.resources:
            try:
                export_type(resource.type)
            except UnmappedTypeError:
                unmapped.add(resource.type)
    assert unmapped == set(), f"declare these types in their target's catalog.py: {unmapped}"


def test_every_stack_exports_strictly_and_every_mapped_resource_is_exported(
    rendered: list[RenderedStack],
) -> None:
    for stack in rendered:
        export = export_stack(stack, strict=True)
        exported = {e.urn for e in export.resources}
        mapped = {r.urn for r in stack.resources if export_type(r.type) is not None}
        assert exported == mapped, stack.stack


def test_the_variants_reach_the_optional_kubernetes_children(rendered: list[RenderedStack]) -> None:
    types = {r.type for stack in rendered for r in stack.resources}
    assert "kubernetes:cilium.io/v2:CiliumNetworkPolicy" in types
    assert {
        "kubernetes:core/v1:ConfigMap",
        "kubernetes:apps/v1:Deployment",
        "kubernetes:core/v1:Service",
    } <= types


def test_exclusions_carry_reasons_and_do_not_overlap_the_table() -> None:
    for reason in (*NOT_EXPORTED.values(), *NOT_EXPORTED_PREFIXES.values()):
        assert len(reason.split()) >= 6
    assert not set(NOT_EXPORTED) & set(TYPES)
    assert not [t for t in TYPES if t.startswith(tuple(NOT_EXPORTED_PREFIXES))]


def test_an_unknown_type_is_refused_by_name() -> None:
    with pytest.raises(UnmappedTypeError, match="aws:s3/bucket:Bucket"):
        export_type("aws:s3/bucket:Bucket")


@pytest.mark.parametrize(
    ("camel", "snake"),
    [
        ("vpcConfig", "vpc_config"),
        ("ipv6CidrBlocks", "ipv6_cidr_blocks"),
        ("name", "name"),
        ("kmsKeyArn", "kms_key_arn"),
    ],
)
def test_snake_case_inverts_the_bridge_camel_case(camel: str, snake: str) -> None:
    assert snake_case(camel) == snake


SPEC = TerraformType(
    "aws_thing",
    "registry.terraform.io/hashicorp/aws",
    blocks=frozenset({"vpcConfig", "rules", "rules.matchSpec"}),
    objects=frozenset({"observability"}),
    maps=frozenset({"tags", "environment.variables"}),
    renames={"rules": "rule"},
)


def test_terraform_values_follow_the_plan_shape() -> None:
    inputs = {
        "functionName": "fn",
        "memorySize": 2048.0,
        "vpcConfig": {"subnetIds": ["subnet-1"], "securityGroupIds": ["sg-1"]},
        "rules": [{"ruleName": "a", "matchSpec": {"hostName": "example.com"}}],
        "observability": {"headSamplingRate": 1},
        "tags": {"managed-by": "sandboxkit", "camelKey": "kept"},
        "environment": {"variables": {"WORKER_KEY": secret_wrap("s3cr3t"), "logLevel": "info"}},
    }
    spec = TerraformType(**{**vars(SPEC), "blocks": SPEC.blocks | {"environment"}})
    assert terraform_values(inputs, spec, strict=True) == {
        "function_name": "fn",
        "memory_size": 2048,
        "vpc_config": [{"subnet_ids": ["subnet-1"], "security_group_ids": ["sg-1"]}],
        "rule": [{"rule_name": "a", "match_spec": [{"host_name": "example.com"}]}],
        "observability": {"head_sampling_rate": 1},
        "tags": {"managed-by": "sandboxkit", "camelKey": "kept"},
        "environment": [{"variables": {"WORKER_KEY": SECRET_PLACEHOLDER, "logLevel": "info"}}],
    }


def test_strict_export_names_an_undeclared_nested_input() -> None:
    with pytest.raises(UndeclaredNestingError, match="'deadLetterConfig'"):
        terraform_values({"deadLetterConfig": {"targetArn": "arn"}}, SPEC, strict=True)
    assert terraform_values({"deadLetterConfig": {"targetArn": "arn"}}, SPEC) == {
        "dead_letter_config": [{"target_arn": "arn"}]
    }


def test_no_export_holds_a_secret_value() -> None:
    group = RenderedResource(
        urn="urn:pulumi:t::sandboxkit::aws:ec2/securityGroup:SecurityGroup::sg",
        type="aws:ec2/securityGroup:SecurityGroup",
        name="sg",
        parent=None,
        custom=True,
        inputs={"description": secret_wrap("hunter2-secret"), "tags": {"k": "v"}},
    )
    pool = RenderedResource(
        urn="urn:pulumi:t::sandboxkit::azure-native:app:ContainerAppsSessionPool::pool",
        type="azure-native:app:ContainerAppsSessionPool",
        name="pool",
        parent=None,
        custom=True,
        inputs={"secrets": [{"name": "key", "value": secret_wrap("hunter2-secret")}]},
    )
    export = export_resources("t", [group, pool])
    text = "".join(export.files.values())
    assert "hunter2-secret" not in text
    # planned_values, resource_changes[].change.after and the ARM template.
    assert text.count(SECRET_PLACEHOLDER) == 3


def test_ids_of_other_resources_become_plan_references(rendered: list[RenderedStack]) -> None:
    plan = json.loads(export_stack(rendered[0]).files[TF_PLAN_FILE])
    by_address = {r["address"]: r for r in plan["configuration"]["root_module"]["resources"]}
    values = {r["address"]: r["values"] for r in plan["planned_values"]["root_module"]["resources"]}
    flow_log = "aws_flow_log.aws-microvm-flow-log"
    assert by_address[flow_log]["expressions"]["vpc_id"] == {
        "references": ["aws_vpc.aws-microvm-vpc.id", "aws_vpc.aws-microvm-vpc"]
    }
    assert "vpc_id" not in values[flow_log]
    assert values[flow_log]["traffic_type"] == "ALL"


def _has_key(model: type[BaseModel], path: list[str]) -> bool:
    """Whether ``model`` has the setting at the alias path (``runtimeClass.handler``)."""
    fields = {f.alias or name: f for name, f in model.model_fields.items()}
    found = fields.get(path[0])
    if found is None:
        return False
    if len(path) == 1:
        return True
    inner = found.annotation
    return isinstance(inner, type) and issubclass(inner, BaseModel) and _has_key(inner, path[1:])


def test_every_setting_a_checkov_finding_points_at_exists() -> None:
    # A misspelt key would silently point findings at the target's section instead. gcp-gke
    # re-exports the kubernetes kinds: a key is one of some target's that declares the kind.
    owners: dict[str, set[str]] = {}
    for target, module in TARGET_MODULES.items():
        catalog = importlib.import_module(f"{module.rpartition('.')[0]}.catalog")
        for kind in catalog.KINDS:
            for key in kind.settings.values():
                owners.setdefault(key, set()).add(target)
    assert "image" in owners
    for key, targets in owners.items():
        if key.startswith("profile."):
            assert _has_key(SandboxProfile, key.split(".")[1:]), key
        else:
            models = [get_target(t).settings_model for t in targets]
            assert any(_has_key(m, key.split(".")) for m in models), key
