"""Resource types of the ``kubernetes`` target (also rendered by ``gcp-gke``).

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from sandboxkit.catalog import KubernetesType, ResourceKind
from sandboxkit.kubernetes.type_tokens import (
    CILIUM_POLICY,
    CONFIG_MAP,
    DEPLOYMENT,
    NAMESPACE,
    NETWORK_POLICY,
    PROVIDER,
    RESOURCE_QUOTA,
    RUNTIME_CLASS,
    SANDBOX_TEMPLATE,
    SERVICE,
    WARM_POOL,
)

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
        NAMESPACE.token,
        export=KubernetesType(NAMESPACE.name),
    ),
    ResourceKind(
        RESOURCE_QUOTA.token,
        export=KubernetesType(RESOURCE_QUOTA.name),
        settings={"CKV_SBX_4": "profile.pool.maxConcurrent"},
    ),
    ResourceKind(
        RUNTIME_CLASS.token,
        export=KubernetesType(RUNTIME_CLASS.name),
        settings={"CKV_SBX_5": "runtimeClass.handler"},
    ),
    ResourceKind(
        NETWORK_POLICY.token,
        export=KubernetesType(NETWORK_POLICY.name),
    ),
    ResourceKind(
        SANDBOX_TEMPLATE.token,
        export=KubernetesType(SANDBOX_TEMPLATE.name, pod_template="spec.podTemplate"),
        # checkov's image checks (tag fixed, digest, pull policy for a tag) and high UID.
        settings={
            "CKV_K8S_14": "image",
            "CKV_K8S_15": "image",
            "CKV_K8S_43": "image",
            "CKV_K8S_40": "runAsUser",
        },
    ),
    ResourceKind(
        WARM_POOL.token,
        export=KubernetesType(WARM_POOL.name),
        settings={"CKV_SBX_2": "profile.pool.ready"},
    ),
    ResourceKind(
        CONFIG_MAP.token,
        export=KubernetesType(CONFIG_MAP.name),
    ),
    ResourceKind(
        DEPLOYMENT.token,
        export=KubernetesType(DEPLOYMENT.name),
    ),
    ResourceKind(
        SERVICE.token,
        export=KubernetesType(SERVICE.name),
        mock_outputs=_service,
    ),
    ResourceKind(
        CILIUM_POLICY.token,
        export=KubernetesType(CILIUM_POLICY.name),
    ),
    ResourceKind(
        PROVIDER.token,
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
