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

import functools

from sandboxkit.catalog import (
    ARM_ENVELOPE,
    ArmType,
    ExportType,
    KubernetesType,
    ResourceKind,
    TerraformType,
    all_kinds,
)
from sandboxkit.targets import TARGET_MODULES

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
    "catalog_kinds",
    "export_type",
    "setting_for",
]


@functools.cache
def _kinds(registry: tuple[tuple[str, str], ...]) -> tuple[ResourceKind, ...]:
    # Keyed by the registry's contents: a target registered later (a test's fake one) counts.
    del registry
    return tuple(all_kinds())


def catalog_kinds() -> tuple[ResourceKind, ...]:
    """Every resource kind the registered targets declare (see ``catalog.all_kinds``)."""
    return _kinds(tuple(TARGET_MODULES.items()))


_KINDS = catalog_kinds()
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


def setting_for(type_token: str, check: str) -> str | None:
    """The stack-file setting that decides ``check``'s verdict on ``type_token``, as its
    catalog declares it (``ResourceKind.settings``: ``image``, ``profile.pool.ready``), else
    ``None``."""
    kind = next((k for k in catalog_kinds() if not k.is_prefix and k.covers(type_token)), None)
    return kind.settings.get(check) if kind is not None else None


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
    """The export of ``type_token`` (any API version of a declared type: ``ResourceKind.covers``);
    ``None`` when deliberately not exported.

    Raises:
        UnmappedTypeError: when no registered target's catalog declares the type.
    """
    kinds = catalog_kinds()
    exact = next((k for k in kinds if not k.is_prefix and k.covers(type_token)), None)
    if exact is not None:
        return exact.export
    if any(k.is_prefix and k.not_exported and k.covers(type_token) for k in kinds):
        return None
    raise UnmappedTypeError(type_token)
