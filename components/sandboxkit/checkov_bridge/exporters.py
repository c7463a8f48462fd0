"""Exports of a rendered stack in the formats checkov reads.

- Terraform plan JSON (``terraform show -json`` shape: ``planned_values.root_module.resources``
  with ``address``, ``mode``, ``type``, ``name``, ``provider_name``, ``values``, plus a
  ``resource_changes`` entry per resource with action ``create``) for bridged resources;
- an ARM deployment template for azure-native resources;
- multi-document YAML manifests for Kubernetes objects.

A secret's value never reaches an export: it is replaced by ``SECRET_PLACEHOLDER``. Values
unknown at render time are left out, as a plan leaves them out of ``planned_values``.

Each exported resource carries the id checkov reports it under, so findings map back to URNs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from sandboxkit.checkov_bridge.mapping import (
    ARM_ENVELOPE,
    ArmType,
    KubernetesType,
    TerraformType,
    export_type,
)
from sandboxkit.errors import REDACTED
from sandboxkit.guard import owner_of
from sandboxkit.render import (
    UNKNOWN_TEXT,
    RenderedResource,
    RenderedStack,
    stack_resources,
    to_display,
)

SECRET_PLACEHOLDER = REDACTED
TF_PLAN_FILE = "terraform.tfplan.json"
ARM_FILE = "azure.arm.json"
K8S_FILE = "kubernetes.yaml"  # per target: kubernetes.<target>.yaml
ARM_SCHEMA = "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#"
# Marks a PodTemplate the export derives from a custom resource's pod template.
DERIVED_ANNOTATION = "sandboxkit.io/derived-from"
# Kinds whose spec.template checkov checks as a nested Pod, which it names after the parent and
# the template's labels (checkov kubernetes_utils SUPPORTED_POD_CONTAINERS_TYPES and
# build_resource_id_from_labels).
POD_CONTROLLERS = frozenset(
    {"Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "ReplicationController"}
)

# libyaml's dumper when PyYAML was built with it: ten times faster on large stacks.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_-]")
# An id or ARN the render's mock cloud gave another resource: ``<logical name>-<12 hex>`` at
# the end of the value (sandboxkit.mockcloud.CloudMocks.new_resource).
# An azure-native API version's module (app/v20240202preview): the ARM apiVersion it is
# (2024-02-02-preview), https://www.pulumi.com/registry/packages/azure-native/version-guide/.
_ARM_VERSION_MODULE = re.compile(r"^azure-native:[^:/]+/v(\d{4})(\d{2})(\d{2})([a-z]*):")
_MOCK_ID = re.compile(r"(?:^|[:/])(?P<name>[A-Za-z0-9_.-]+)-[0-9a-f]{12}$")


class UndeclaredNestingError(ValueError):
    """A nested input the type's ``TerraformType`` does not declare as block, object or map."""


@dataclass(frozen=True)
class ExportedResource:
    """One exported object and where checkov reports on it.

    Attributes:
        urn: the Pulumi URN of the resource it came from.
        type: the Pulumi type token.
        framework: ``terraform_plan``, ``arm`` or ``kubernetes``.
        file: the export file, relative to the stack's export folder.
        checkov_id: the ``resource`` value checkov reports, e.g. ``aws_lambda_function.fn``.
    """

    urn: str
    type: str
    framework: str
    file: str
    checkov_id: str


@dataclass(frozen=True)
class StackExport:
    """Every export of one stack.

    Attributes:
        stack: the stack name.
        files: export file name -> content.
        resources: what each file holds, with the checkov id of each object.
    """

    stack: str
    files: Mapping[str, str]
    resources: tuple[ExportedResource, ...]

    def write(self, folder: Path) -> None:
        """Write every file into ``folder`` (created if missing)."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in self.files.items():
            (folder / name).write_text(text)


def snake_case(key: str) -> str:
    """``vpcConfig`` -> ``vpc_config``; the inverse of the bridge's camelCasing."""
    return _CAMEL_BOUNDARY.sub("_", key).lower()


def plain(value: Any) -> Any:
    """A wire-form value for an export: secrets replaced, unknowns ``None``, ints kept."""
    shown = to_display(value)
    return _drop_unknown(shown)


def _drop_unknown(value: Any) -> Any:
    if value == UNKNOWN_TEXT:
        return None
    if isinstance(value, dict):
        return {k: _drop_unknown(v) for k, v in value.items() if v != UNKNOWN_TEXT}
    if isinstance(value, list):
        return [_drop_unknown(v) for v in value if v != UNKNOWN_TEXT]
    return value


# --- Terraform plan ------------------------------------------------------------------------


def terraform_values(
    inputs: Mapping[str, Any], spec: TerraformType, *, strict: bool = False
) -> dict[str, Any]:
    """The plan's ``values`` for one resource: snake_case keys, blocks as lists.

    Args:
        inputs: the resource's wire-form inputs.
        spec: its mapping.
        strict: raise on a nested input ``spec`` does not declare (the mapping test); otherwise
            treat it as a block, the commonest nesting in Terraform schemas.

    Raises:
        UndeclaredNestingError: with ``strict``, naming the type and the input path.
    """
    return _tf_object(plain(inputs), "", spec, strict)


def _tf_object(obj: Mapping[str, Any], prefix: str, spec: TerraformType, strict: bool) -> dict:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        path = f"{prefix}{key}"
        name = spec.renames.get(path, snake_case(key))
        if value is None or path in spec.omit:
            continue
        if path in spec.maps:
            out[name] = value
        elif isinstance(value, dict):
            converted = _tf_object(value, f"{path}.", spec, strict)
            if path in spec.objects:
                out[name] = converted
            else:
                _require_declared(path, spec, strict)
                out[name] = [converted]
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
            if path not in spec.objects:
                _require_declared(path, spec, strict)
            out[name] = [_tf_object(v, f"{path}.", spec, strict) for v in value]
        else:
            out[name] = value
    return out


def _require_declared(path: str, spec: TerraformType, strict: bool) -> None:
    if strict and path not in spec.blocks:
        raise UndeclaredNestingError(
            f"{spec.tf_type}: input {path!r} is nested but not declared in blocks, objects or "
            "maps of its TerraformType"
        )


def _identifier(name: str, taken: set[str]) -> str:
    base = _NOT_IDENTIFIER.sub("_", name)
    if not base[:1].isalpha() and base[:1] != "_":
        base = f"r_{base}"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    taken.add(candidate)
    return candidate


_Export = TypeVar("_Export", TerraformType, ArmType, KubernetesType)


def exported_as(
    resources: Iterable[RenderedResource], kind: type[_Export]
) -> Iterator[tuple[RenderedResource, _Export]]:
    """Each of ``resources`` that is exported as a ``kind`` (``mapping.export_type``), with
    its export, in order.

    Raises:
        UnmappedTypeError: for a type no registered target's catalog declares.
    """
    for resource in resources:
        spec = export_type(resource.type)
        if isinstance(spec, kind):
            yield resource, spec


def terraform_plan(
    resources: Iterable[RenderedResource], *, strict: bool = False
) -> tuple[dict[str, Any], dict[str, RenderedResource]]:
    """A Terraform plan JSON document for the bridged resources among ``resources``.

    A top-level input holding another exported resource's id or ARN (what the render's mock
    cloud returned) becomes what a real plan holds for a resource yet to be created: no value in
    ``planned_values``, and a reference in ``configuration`` (``aws_vpc.x.id``), so checkov's
    graph checks see the connection (a flow log on its VPC, a logging configuration on its
    firewall).

    Returns:
        The plan document and a map from each resource address to the resource.
    """
    chosen: list[tuple[RenderedResource, TerraformType, str]] = []
    taken: dict[str, set[str]] = {}
    for resource, spec in exported_as(resources, TerraformType):
        name = _identifier(resource.name, taken.setdefault(spec.tf_type, set()))
        chosen.append((resource, spec, name))
    by_name = {r.name: f"{spec.tf_type}.{name}" for r, spec, name in chosen}
    planned: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    configured: list[dict[str, Any]] = []
    addresses: dict[str, RenderedResource] = {}
    for resource, spec, name in chosen:
        address = f"{spec.tf_type}.{name}"
        values = terraform_values(resource.inputs, spec, strict=strict)
        expressions = {}
        for key, value in list(values.items()):
            references = _references(value, by_name)
            if references:
                del values[key]
                expressions[key] = {"references": references}
        head = {"address": address, "mode": "managed", "type": spec.tf_type, "name": name}
        planned.append(
            {**head, "provider_name": spec.provider, "schema_version": 0, "values": values}
        )
        changes.append(
            {
                **head,
                "provider_name": spec.provider,
                "change": {"actions": ["create"], "before": None, "after": values},
            }
        )
        configured.append({**head, "expressions": expressions})
        addresses[address] = resource
    plan = {
        "format_version": "1.2",
        "terraform_version": "1.9.0",
        "planned_values": {"root_module": {"resources": planned}},
        "resource_changes": changes,
        "configuration": {"root_module": {"resources": configured}},
    }
    return plan, addresses


def _references(value: Any, by_name: Mapping[str, str]) -> list[str]:
    """``[address.attr, address]`` per mock id/ARN in ``value`` (a string or list of them)."""
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in items:
        found = _MOCK_ID.search(item) if isinstance(item, str) else None
        if found is None or found["name"] not in by_name:
            return []
        address = by_name[found["name"]]
        out += [f"{address}.{'arn' if item.startswith('arn:') else 'id'}", address]
    return out


# --- ARM -----------------------------------------------------------------------------------


def arm_api_version(type_token: str, spec: ArmType) -> str:
    """The ARM ``apiVersion`` of a resource of ``type_token``: the API version its token names
    (``azure-native:app/v20240202preview:ContainerAppsSessionPool`` is ``2024-02-02-preview``),
    else the one the default token's SDK module targets (``spec.api_version``)."""
    found = _ARM_VERSION_MODULE.match(type_token)
    if found is None:
        return spec.api_version
    year, month, day, stage = found.groups()
    return f"{year}-{month}-{day}" + (f"-{stage}" if stage else "")


def arm_template(
    resources: Iterable[RenderedResource],
) -> tuple[dict[str, Any], dict[str, RenderedResource]]:
    """An ARM deployment template for the azure-native resources among ``resources``.

    Returns:
        The template and a map from each checkov id (``<type>.<name>``) to the resource.
    """
    out: list[dict[str, Any]] = []
    ids: dict[str, RenderedResource] = {}
    for resource, spec in exported_as(resources, ArmType):
        inputs = plain(resource.inputs)
        name = inputs.get(spec.name_input) or resource.name
        version = arm_api_version(resource.type, spec)
        body: dict[str, Any] = {"type": spec.arm_type, "apiVersion": version, "name": name}
        properties: dict[str, Any] = {}
        for key, value in inputs.items():
            if key == spec.name_input or key in spec.path_params or value is None:
                continue
            (body if key in ARM_ENVELOPE | spec.envelope else properties)[key] = value
        body["properties"] = properties
        identity = body.get("identity")
        if isinstance(identity, dict) and isinstance(identity.get("userAssignedIdentities"), list):
            # azure-native takes a list of identity ids; ARM holds a map from id to {}.
            identity["userAssignedIdentities"] = {i: {} for i in identity["userAssignedIdentities"]}
        out.append(body)
        ids[f"{spec.arm_type}.{name}"] = resource
    template = {"$schema": ARM_SCHEMA, "contentVersion": "1.0.0.0", "resources": out}
    return template, ids


# --- Kubernetes ----------------------------------------------------------------------------


def _dig(document: Mapping[str, Any], dotted: str) -> Any:
    value: Any = document
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def kubernetes_manifests(
    resources: Iterable[RenderedResource],
) -> tuple[list[dict[str, Any]], dict[str, RenderedResource]]:
    """Manifests for the Kubernetes objects among ``resources``.

    A custom resource whose ``KubernetesType`` names a pod template is followed by a
    ``v1/PodTemplate`` holding that template (annotated ``sandboxkit.io/derived-from``).

    Returns:
        The manifests and a map from each checkov id (``<kind>.<namespace>.<name>``, namespace
        ``default`` when unset; for a Deployment also its nested ``Pod`` id) to the resource.
    """
    documents: list[dict[str, Any]] = []
    ids: dict[str, RenderedResource] = {}
    for resource, spec in exported_as(resources, KubernetesType):
        manifest = plain(resource.inputs)
        metadata = manifest.setdefault("metadata", {})
        metadata.setdefault("name", resource.name)
        documents.append(manifest)
        namespace = metadata.get("namespace") or "default"
        ids[f"{spec.kind}.{namespace}.{metadata['name']}"] = resource
        if spec.kind in POD_CONTROLLERS:
            labels = _dig(manifest, "spec.template.metadata.labels") or {}
            nested = ".".join(f"{key}-{value}" for key, value in labels.items()) or "default"
            ids[f"Pod.{namespace}.{metadata['name']}.{nested}"] = resource
        template = _dig(manifest, spec.pod_template) if spec.pod_template else None
        if template is not None:
            derived_meta = {
                "name": metadata["name"],
                "annotations": {DERIVED_ANNOTATION: f"{spec.kind}/{metadata['name']}"},
            }
            if "namespace" in metadata:
                derived_meta["namespace"] = metadata["namespace"]
            if "labels" in metadata:
                derived_meta["labels"] = metadata["labels"]
            documents.append(
                {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": derived_meta,
                    "template": template,
                }
            )
            ids[f"PodTemplate.{namespace}.{metadata['name']}"] = resource
    return documents, ids


# --- A whole stack -------------------------------------------------------------------------


def export_resources(
    stack: str, resources: Iterable[RenderedResource], *, strict: bool = False
) -> StackExport:
    """Every export of ``resources`` (each type must be mapped; see ``mapping.export_type``).

    Raises:
        UnmappedTypeError: for a type in no table.
        UndeclaredNestingError: with ``strict``, for undeclared nesting in a bridged type.
    """
    resources = tuple(resources)
    for resource in resources:
        export_type(resource.type)
    files: dict[str, str] = {}
    exported: list[ExportedResource] = []

    plan, addresses = terraform_plan(resources, strict=strict)
    if addresses:
        files[TF_PLAN_FILE] = json.dumps(plan, indent=1) + "\n"
        exported += [_entry(r, "terraform_plan", TF_PLAN_FILE, a) for a, r in addresses.items()]
    template, arm_ids = arm_template(resources)
    if arm_ids:
        files[ARM_FILE] = json.dumps(template, indent=1) + "\n"
        exported += [_entry(r, "arm", ARM_FILE, i) for i, r in arm_ids.items()]
    # One manifest file per target: two targets' objects live in different clusters and may
    # share a kind, namespace and name (checkov's id).
    for root, members in _by_root(resources).items():
        manifests, k8s_ids = kubernetes_manifests(members)
        if k8s_ids:
            name = K8S_FILE.replace(".yaml", f".{root}.yaml")
            files[name] = yaml.dump_all(manifests, Dumper=_DUMPER, sort_keys=False)
            exported += [_entry(r, "kubernetes", name, i) for i, r in k8s_ids.items()]
    return StackExport(stack=stack, files=files, resources=tuple(exported))


def _by_root(resources: tuple[RenderedResource, ...]) -> dict[str, list[RenderedResource]]:
    """Resources grouped by the logical name of their top-level ancestor (the target)."""
    groups: dict[str, list[RenderedResource]] = {}
    for view in stack_resources(resources):
        groups.setdefault(_NOT_IDENTIFIER.sub("_", owner_of(view)), []).append(view.resource)
    return groups


def export_stack(rendered: RenderedStack, *, strict: bool = False) -> StackExport:
    """Every export of a rendered stack (see ``export_resources``)."""
    return export_resources(rendered.stack, rendered.resources, strict=strict)


def _entry(
    resource: RenderedResource, framework: str, file: str, checkov_id: str
) -> ExportedResource:
    return ExportedResource(
        urn=resource.urn, type=resource.type, framework=framework, file=file, checkov_id=checkov_id
    )
