"""Resource types of the ``kubernetes`` target (also rendered by ``gcp-gke``).

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from sandboxkit.catalog import KubernetesType, ResourceKind


def _kubernetes_metadata(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    metadata = dict(args.inputs.get("metadata") or {})
    metadata.setdefault("name", resource_id)
    return {"metadata": metadata}


KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        "kubernetes:core/v1:Namespace",
        export=KubernetesType("Namespace"),
    ),
    ResourceKind(
        "kubernetes:core/v1:ResourceQuota",
        export=KubernetesType("ResourceQuota"),
    ),
    ResourceKind(
        "kubernetes:node.k8s.io/v1:RuntimeClass",
        export=KubernetesType("RuntimeClass"),
    ),
    ResourceKind(
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
        export=KubernetesType("NetworkPolicy"),
    ),
    ResourceKind(
        "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate",
        export=KubernetesType("SandboxTemplate", pod_template="spec.podTemplate"),
    ),
    ResourceKind(
        "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool",
        export=KubernetesType("SandboxWarmPool"),
    ),
    ResourceKind(
        "kubernetes:cilium.io/v2:CiliumNetworkPolicy",
        export=KubernetesType("CiliumNetworkPolicy"),
    ),
    ResourceKind(
        "kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy",
        export=KubernetesType("FQDNNetworkPolicy"),
    ),
    ResourceKind(
        "pulumi:providers:kubernetes",
        not_exported=(
            "provider configuration (kubeconfig context), not a cluster object; checkov has "
            "no checks for it"
        ),
    ),
    ResourceKind(
        "kubernetes:",
        mock_outputs=_kubernetes_metadata,
    ),
)
