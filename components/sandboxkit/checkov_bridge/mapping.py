"""The one table from the kit's Pulumi resource types to the types checkov knows.

checkov has no Pulumi framework, but every resource the kit creates has an exact counterpart it
does read: bridged AWS, GCP and Cloudflare resources are Terraform resources (same schema,
attribute names camelCased by the bridge), azure-native resources are ARM resources (inputs are
the ARM body with ``properties`` flattened), and Kubernetes objects are manifests.

Every type token a component registers must appear either in ``TYPES`` or, with the reason, in
``NOT_EXPORTED`` / ``NOT_EXPORTED_PREFIXES``; ``tests/checkov/test_checkov_mapping.py`` renders
every stack and fails on a type in neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Terraform provider addresses as `terraform show -json` writes them (``provider_name``).
TF_AWS = "registry.terraform.io/hashicorp/aws"
TF_GOOGLE = "registry.terraform.io/hashicorp/google"
TF_CLOUDFLARE = "registry.terraform.io/cloudflare/cloudflare"


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
    """

    tf_type: str
    provider: str
    blocks: frozenset[str] = frozenset()
    objects: frozenset[str] = frozenset()
    maps: frozenset[str] = frozenset()
    renames: Mapping[str, str] = field(default_factory=dict)


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

# Resource envelope keys of an ARM resource: everything else an azure-native resource takes
# goes into ``properties``.
ARM_ENVELOPE = frozenset(
    {"location", "tags", "identity", "sku", "kind", "zones", "extendedLocation"}
)

TYPES: dict[str, ExportType] = {
    # --- kubernetes target (sandboxkit.kubernetes.agent_sandbox) ---
    "kubernetes:core/v1:Namespace": KubernetesType("Namespace"),
    "kubernetes:core/v1:ResourceQuota": KubernetesType("ResourceQuota"),
    "kubernetes:node.k8s.io/v1:RuntimeClass": KubernetesType("RuntimeClass"),
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": KubernetesType("NetworkPolicy"),
    "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate": KubernetesType(
        "SandboxTemplate", pod_template="spec.podTemplate"
    ),
    "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool": KubernetesType(
        "SandboxWarmPool"
    ),
    "kubernetes:cilium.io/v2:CiliumNetworkPolicy": KubernetesType("CiliumNetworkPolicy"),
    "kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy": KubernetesType("FQDNNetworkPolicy"),
    # --- aws-microvm target: the egress connector's security group (terraform aws_security_group)
    "aws:ec2/securityGroup:SecurityGroup": TerraformType(
        "aws_security_group",
        TF_AWS,
        blocks=frozenset({"ingress", "egress"}),
        maps=frozenset({"tags", "tagsAll"}),
    ),
    # --- azure-sessions target (azure-native app module, API 2025-02-02-preview) ---
    "azure-native:app:ContainerAppsSessionPool": ArmType(
        "Microsoft.App/sessionPools", "2025-02-02-preview", "sessionPoolName"
    ),
    "azure-native:app:ManagedEnvironment": ArmType(
        "Microsoft.App/managedEnvironments", "2025-02-02-preview", "environmentName"
    ),
    "azure-native:operationalinsights:Workspace": ArmType(
        "Microsoft.OperationalInsights/workspaces", "2023-09-01", "workspaceName"
    ),
    "azure-native:resources:ResourceGroup": ArmType(
        "Microsoft.Resources/resourceGroups", "2024-03-01", "resourceGroupName", frozenset()
    ),
    "azure-native:authorization:RoleAssignment": ArmType(
        "Microsoft.Authorization/roleAssignments",
        "2022-04-01",
        "roleAssignmentName",
        frozenset(),
        envelope=frozenset({"scope"}),
    ),
}

# Types deliberately not exported, with the reason.
NOT_EXPORTED: dict[str, str] = {
    "pulumi:providers:kubernetes": (
        "provider configuration (kubeconfig context), not a cluster object; checkov has no "
        "checks for it"
    ),
    "pulumi:providers:azure-native": (
        "provider configuration (subscription, location), not an Azure resource; an ARM "
        "template has no counterpart"
    ),
}
NOT_EXPORTED_PREFIXES: dict[str, str] = {
    "sandboxkit:index:": (
        "the kit's component resources only group their children, which are exported; they "
        "create nothing in a cloud"
    ),
}


class UnmappedTypeError(LookupError):
    """A resource type with no entry in ``TYPES`` nor ``NOT_EXPORTED``."""

    def __init__(self, type_token: str) -> None:
        super().__init__(
            f"resource type {type_token} has no checkov mapping: add it to TYPES or, with the "
            "reason, to NOT_EXPORTED in sandboxkit/checkov_bridge/mapping.py"
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
