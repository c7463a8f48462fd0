"""What a target declares about each resource type it creates.

A target's folder holds a ``catalog.py`` whose ``KINDS`` lists every resource type (or type-token
prefix) its components register: the plausible outputs a cloud would return (for the offline
render's mocks), how checkov reads it (a Terraform, ARM or Kubernetes export), or why it is not
exported or not checked. Its ``CALLS`` lists the provider functions (invokes) the components
call, with a plausible result. The offline render (``mockcloud``) and the checkov bridge
(``checkov_bridge.mapping``) read every target's catalog through ``targets.target_parts``, so a
new target adds its types in its own folder, never in a central table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pulumi.runtime import MockCallArgs, MockResourceArgs

from sandboxkit.targets import target_parts
from sandboxkit.type_tokens import without_version

_T = TypeVar("_T")

# Mock outputs of one resource: (the registration, the id the mock assigned) -> attributes a
# real provider would compute (ARNs, endpoints, ...), merged over the inputs.
OutputRule = Callable[[MockResourceArgs, str], dict[str, Any]]

# Terraform provider addresses as `terraform show -json` writes them (``provider_name``).
TF_AWS = "registry.terraform.io/hashicorp/aws"
TF_GOOGLE = "registry.terraform.io/hashicorp/google"
TF_CLOUDFLARE = "registry.terraform.io/cloudflare/cloudflare"
# Map attributes of tagged and labelled resources (AWS tags, GCP labels).
TAGS = ("tags", "tagsAll", "labels", "resourceLabels")
# Resource envelope keys of an ARM resource: everything else an azure-native resource takes
# goes into ``properties``.
ARM_ENVELOPE = frozenset(
    {"location", "tags", "identity", "sku", "kind", "zones", "extendedLocation"}
)


class ResourceArgs(MockResourceArgs):
    """A registration as an ``OutputRule`` sees it: the mock's args, the inputs of the
    resource's explicit provider (an ``aws.Provider``'s ``region``, say) and the stack name,
    so mock outputs follow the stack's own settings instead of one fixed region.

    Args:
        args: the registration.
        provider_inputs: the inputs the resource's explicit provider was registered with
            (empty for the default provider).
        stack: the stack being rendered.
    """

    def __init__(
        self, args: MockResourceArgs, provider_inputs: Mapping[str, Any], stack: str
    ) -> None:
        super().__init__(
            args.typ, args.name, args.inputs, args.provider, args.resource_id, args.custom
        )
        self.provider_inputs = provider_inputs
        self.stack = stack


def setting_of(args: MockResourceArgs, key: str, default: str) -> str:
    """The resource's own ``key`` input, else its explicit provider's, else ``default``.

    pulumi-aws 7 takes ``region`` on each resource as well as on the provider.
    """
    own = args.inputs.get(key)
    if isinstance(own, str) and own:
        return own
    found = args.provider_inputs.get(key) if isinstance(args, ResourceArgs) else None
    return found if isinstance(found, str) and found else default


def mock_hash(text: str) -> str:
    """Twelve hex characters of ``text``'s SHA-256: stable mock ids, names and endpoints."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class TerraformType:
    """A bridged resource and the Terraform resource it is.

    Paths below are dotted camelCase input paths as the engine sees them (list items add no
    segment: ``ingress.cidrBlocks``). Keys are snake_cased everywhere except inside ``maps``.

    Attributes:
        tf_type: the Terraform resource type, e.g. ``aws_lambda_function``.
        provider: the provider address, e.g. ``TF_AWS``.
        blocks: inputs that are nested blocks: a plan holds each as a list of objects, also for
            blocks of at most one item, which the bridge flattens to a single object.
        objects: inputs that are object-typed attributes (plugin-framework nested attributes):
            kept as one object with snake_cased keys.
        maps: inputs that are map attributes (tags, labels, environment variables): keys kept.
        renames: inputs whose Terraform name is not the snake_cased Pulumi name (the bridge
            pluralises repeated blocks: ``rules`` is Terraform's ``rule``).
        omit: inputs a plan does not hold as values (assets and archives: a plan holds a file
            name or hash).
    """

    tf_type: str
    provider: str
    blocks: frozenset[str] = frozenset()
    objects: frozenset[str] = frozenset()
    maps: frozenset[str] = frozenset(TAGS)
    renames: Mapping[str, str] = field(default_factory=dict)
    omit: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ArmType:
    """An azure-native resource and the ARM resource it is.

    Attributes:
        arm_type: the ARM resource type, e.g. ``Microsoft.App/sessionPools``.
        api_version: the API version the azure-native SDK module targets.
        name_input: the input holding the resource name (e.g. ``sessionPoolName``); when the
            engine auto-names the resource (no such input), the logical name is used.
        path_params: inputs that are URL path parameters, not body properties.
        envelope: inputs that sit beside ``properties`` in the ARM resource (besides
            ``ARM_ENVELOPE``), e.g. ``scope`` of an extension resource.
    """

    arm_type: str
    api_version: str
    name_input: str
    path_params: frozenset[str] = frozenset({"resourceGroupName"})
    envelope: frozenset[str] = frozenset()


@dataclass(frozen=True)
class KubernetesType:
    """A Kubernetes object; its inputs are the manifest (apiVersion, kind, metadata, ...).

    Attributes:
        kind: the object kind.
        pod_template: for a custom resource that carries a pod template, the dotted path to it;
            the export adds a ``v1/PodTemplate`` of it so checkov's pod checks evaluate what
            the controller will run.
    """

    kind: str
    pod_template: str | None = None


ExportType = TerraformType | ArmType | KubernetesType


@dataclass(frozen=True)
class ResourceKind:
    """One resource type a target creates, or a family of types sharing a token prefix.

    Attributes:
        type: an exact type token from the target's ``type_tokens.py``
            (``aws:lambda/function:Function``; it covers every API version of the type, as
            ``TypeToken.matches`` does), or a prefix ending in ``:`` (``aws:``,
            ``sandboxkit:index:``) that covers every type starting with it.
        export: how checkov reads an exact type; ``None`` when it is not exported.
        not_exported: why it is not exported (required for an exact type without ``export``).
        unchecked: why no checkov check (built-in or kit) evaluates an exported type, if none
            does; ``tests/checkov`` fails when coverage and these reasons disagree.
        mock_outputs: the attributes a real provider computes for it, for the offline render;
            the rule of the longest matching type or prefix applies.
        settings: the stack-file setting that decides a checkov check's verdict on this type,
            where the kit knows it: check id -> ``profile.<path>`` for the sandbox profile, or a
            key of the target's own section (``image``, ``runtimeClass.handler``); a finding of
            that check points there instead of at the target's section.

    Raises:
        ValueError: for an exact type with neither ``export`` nor ``not_exported``, or both.
    """

    type: str
    export: ExportType | None = None
    not_exported: str = ""
    unchecked: str = ""
    mock_outputs: OutputRule | None = None
    settings: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.is_prefix and (self.export is None) == (not self.not_exported):
            raise ValueError(
                f"{self.type}: give exactly one of export (how checkov reads it) or "
                "not_exported (why it is not exported)"
            )

    @property
    def is_prefix(self) -> bool:
        """Whether ``type`` is a prefix covering a family of types."""
        return self.type.endswith(":")

    def covers(self, type_token: str) -> bool:
        """Whether this kind describes ``type_token`` (an exact kind: any API version of it)."""
        if self.is_prefix:
            return type_token.startswith(self.type)
        return without_version(type_token) == without_version(self.type)


@dataclass(frozen=True)
class MockCall:
    """A provider function (invoke) a component calls, with a plausible result.

    Attributes:
        token: the invoke token, e.g. ``azure-native:operationalinsights:getSharedKeys``.
        result: the values the mock returns beside the call's arguments.
    """

    token: str
    result: Callable[[MockCallArgs], dict[str, Any]]


# The kit's own component types, whatever the target: they only group their children.
COMPONENT_KINDS = (
    ResourceKind(
        "sandboxkit:index:",
        not_exported="the kit's component resources only group their children, which are "
        "exported; they create nothing in a cloud",
    ),
)


def all_kinds() -> list[ResourceKind]:
    """Every kind every registered target declares, plus the component kinds.

    Raises:
        ValueError: when two targets declare the same type differently.
    """
    kinds = [*COMPONENT_KINDS, *target_parts("catalog", "KINDS")]
    return _unique(kinds, lambda k: k.type, "resource type")


def all_calls() -> list[MockCall]:
    """Every invoke every registered target declares.

    Raises:
        ValueError: when two targets declare the same token differently.
    """
    return _unique(target_parts("catalog", "CALLS"), lambda c: c.token, "invoke")


def _unique(items: Iterable[_T], key: Callable[[_T], str], what: str) -> list[_T]:
    found: dict[str, _T] = {}
    for item in items:
        known = found.setdefault(key(item), item)
        if known != item:
            raise ValueError(f"{what} {key(item)} is declared twice, differently")
    return list(found.values())


def kind_of(type_token: str, kinds: Iterable[ResourceKind]) -> ResourceKind | None:
    """The kind describing ``type_token``: the exact type (any API version of it), else the
    longest matching prefix."""
    matches = [k for k in kinds if k.covers(type_token)]
    return max(matches, key=lambda k: (not k.is_prefix, len(k.type)), default=None)
