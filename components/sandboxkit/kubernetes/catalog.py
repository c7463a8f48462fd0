"""Resource types of the ``kubernetes`` target (also rendered by ``gcp-gke``).

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from sandboxkit.catalog import KubernetesType, ResourceKind

# A cluster IP for the kit's resolver Service in the offline render (the API server assigns the
# real one from the cluster's service range).
MOCK_CLUSTER_IP = "10.96.0.53"


def _kubernetes_metadata(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    metadata = dict(args.inputs.get("metadata") or {})
    metadata.setdefault("name", resource_id)
    return {"metadata": metadata}


def _service(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    spec = {**dict(args.inputs.get("spec") or {}), "clusterIP": MOCK_CLUSTER_IP}
    return {**_kubernetes_metadata(args, resource_id), "spec": spec}


KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        "kubernetes:core/v1:Namespace",
        export=KubernetesType("Namespace"),
    ),
    ResourceKind(
        "kubernetes:core/v1:ResourceQuota",
        export=KubernetesType("ResourceQuota"),
        settings={"CKV_SBX_4": "profile.pool.maxConcurrent"},
    ),
    ResourceKind(
        "kubernetes:node.k8s.io/v1:RuntimeClass",
        export=KubernetesType("RuntimeClass"),
        settings={"CKV_SBX_5": "runtimeClass.handler"},
    ),
    ResourceKind(
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
        export=KubernetesType("NetworkPolicy"),
    ),
    ResourceKind(
        "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate",
        export=KubernetesType("SandboxTemplate", pod_template="spec.podTemplate"),
        # checkov's image checks (tag fixed, digest, pull policy for a tag) and high UID.
        settings={
            "CKV_K8S_14": "image",
            "CKV_K8S_15": "image",
            "CKV_K8S_43": "image",
            "CKV_K8S_40": "runAsUser",
        },
    ),
    ResourceKind(
        "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool",
        export=KubernetesType("SandboxWarmPool"),
        settings={"CKV_SBX_2": "profile.pool.ready"},
    ),
    ResourceKind(
        "kubernetes:core/v1:ConfigMap",
        export=KubernetesType("ConfigMap"),
    ),
    ResourceKind(
        "kubernetes:apps/v1:Deployment",
        export=KubernetesType("Deployment"),
    ),
    ResourceKind(
        "kubernetes:core/v1:Service",
        export=KubernetesType("Service"),
        mock_outputs=_service,
    ),
    ResourceKind(
        "kubernetes:cilium.io/v2:CiliumNetworkPolicy",
        export=KubernetesType("CiliumNetworkPolicy"),
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
