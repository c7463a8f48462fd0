"""The kit's Pulumi resource types as checkov knows them, from every target's catalog.

checkov has no Pulumi framework, but every resource the kit creates has an exact counterpart it
does read: bridged AWS, GCP and Cloudflare resources are Terraform resources (same schema,
attribute names camelCased by the bridge), azure-native resources are ARM resources (inputs are
the ARM body with ``properties`` flattened), and Kubernetes objects are manifests.

Each target declares its types in its own ``catalog.py`` (``sandboxkit.catalog.ResourceKind``):
the export type, or why it is not exported, and why an exported type has no check. Every type
token a component registers must be declared; ``tests/checkov/test_checkov_mapping.py`` renders
every stack and fails on a type no catalog declares.
"""

from __future__ import annotations

from sandboxkit.catalog import (
    ARM_ENVELOPE,
    ArmType,
    ExportType,
    KubernetesType,
    TerraformType,
    all_kinds,
)

__all__ = [
    "ARM_ENVELOPE",
    "NOT_EXPORTED",
    "NOT_EXPORTED_PREFIXES",
    "TYPES",
    "UNCHECKED",
    "ArmType",
    "ExportType",
    "KubernetesType",
    "TerraformType",
    "UnmappedTypeError",
    "export_type",
]

_KINDS = all_kinds()
# Exported types, by token.
TYPES: dict[str, ExportType] = {k.type: k.export for k in _KINDS if k.export is not None}
# Types deliberately not exported, with the reason; prefixes cover families of types.
NOT_EXPORTED: dict[str, str] = {
    k.type: k.not_exported for k in _KINDS if k.not_exported and not k.is_prefix
}
NOT_EXPORTED_PREFIXES: dict[str, str] = {
    k.type: k.not_exported for k in _KINDS if k.not_exported and k.is_prefix
}
# Exported types that neither checkov 3.3.30 nor a kit check evaluates, with the reason: plumbing
# whose only settings are references to other resources, or a value that is a secret.
# tests/checkov/test_checkov_baseline.py fails when this list and the coverage disagree.
UNCHECKED: dict[str, str] = {k.type: k.unchecked for k in _KINDS if k.unchecked}


class UnmappedTypeError(LookupError):
    """A resource type no target's catalog declares."""

    def __init__(self, type_token: str) -> None:
        super().__init__(
            f"resource type {type_token} has no checkov mapping: declare it in the catalog.py "
            "of the target that creates it (sandboxkit.catalog.ResourceKind: its export, or "
            "why it is not exported)"
        )
        self.type_token = type_token


def export_type(type_token: str) -> ExportType | None:
    """The export of ``type_token``; ``None`` when deliberately not exported.

    Raises:
        UnmappedTypeError: when the type is in neither table.
    """
    if type_token in TYPES:
        return TYPES[type_token]
    if type_token in NOT_EXPORTED or any(type_token.startswith(p) for p in NOT_EXPORTED_PREFIXES):
        return None
    raise UnmappedTypeError(type_token)
