"""What the identity applying the kit's Kubernetes objects needs: one ``RbacGrant`` per object
type (``deployer.cluster_role`` turns them into a ClusterRole). Shared by ``gcp-gke``, which
creates the same objects in its cluster.

API resources (plural names) and groups: Kubernetes API reference
(https://kubernetes.io/docs/reference/kubernetes-api/), Cilium's ``ciliumnetworkpolicies``
CRD and the agent-sandbox CRDs (``../shared/reference``: ``sandboxtemplates``,
``sandboxwarmpools``). The reads are pulumi-kubernetes' await logic: a Deployment is ready when
its ReplicaSet's Pods are; a Service when its Endpoints list addresses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sandboxkit.deployer import DeployerPolicy, RbacGrant, cluster_role, granted
from sandboxkit.effective_egress import ResourceView
from sandboxkit.kubernetes.type_tokens import (
    CILIUM_POLICY,
    CONFIG_MAP,
    DEPLOYMENT,
    NAMESPACE,
    NETWORK_POLICY,
    RESOURCE_QUOTA,
    RUNTIME_CLASS,
    SANDBOX_TEMPLATE,
    SERVICE,
    WARM_POOL,
)
from sandboxkit.type_tokens import TypeToken

GRANTS: dict[TypeToken, RbacGrant] = {
    NAMESPACE: RbacGrant("namespaces"),
    RESOURCE_QUOTA: RbacGrant("resourcequotas"),
    CONFIG_MAP: RbacGrant("configmaps"),
    SERVICE: RbacGrant(
        "services", reads=(("", "endpoints"), ("discovery.k8s.io", "endpointslices"))
    ),
    DEPLOYMENT: RbacGrant(
        "deployments", reads=(("apps", "replicasets"), ("", "pods"), ("", "events"))
    ),
    RUNTIME_CLASS: RbacGrant("runtimeclasses"),
    NETWORK_POLICY: RbacGrant("networkpolicies"),
    CILIUM_POLICY: RbacGrant("ciliumnetworkpolicies"),
    SANDBOX_TEMPLATE: RbacGrant("sandboxtemplates"),
    WARM_POOL: RbacGrant("sandboxwarmpools"),
}

# The ClusterRole's name: one per stack, so two stacks' deployers stay apart.
ROLE_PREFIX = "sandboxkit-deployer-"


def kubernetes_objects(resources: list[ResourceView]) -> list[ResourceView]:
    """The Kubernetes objects among ``resources`` (``kubernetes:`` type tokens)."""
    return [r for r in resources if r.type.startswith("kubernetes:")]


def deployer_cluster_role(
    target: str, stack: str, resources: Sequence[ResourceView]
) -> dict[str, Any]:
    """The ClusterRole ``sandboxkit-deployer-<stack>`` for the Kubernetes objects of
    ``resources``.

    Raises:
        MissingGrantError: for a Kubernetes object type ``GRANTS`` lacks.
    """
    objects = [r for r in resources if r.type.startswith("kubernetes:")]
    return cluster_role(f"{ROLE_PREFIX}{stack}", granted(target, GRANTS, objects))


def binding_hint(role: str) -> str:
    """How to bind ClusterRole ``role`` to the deployer."""
    return (
        f"`kubectl create clusterrolebinding {role} --clusterrole {role} --user DEPLOYER` "
        "(or --serviceaccount NAMESPACE:NAME)"
    )


def kubernetes_policy(target: str, stack: str, resources: Sequence[ResourceView]) -> DeployerPolicy:
    """The ``kubernetes`` target's deployer policy: the ClusterRole, to bind to the deployer."""
    role = deployer_cluster_role(target, stack, resources)
    return DeployerPolicy(
        target,
        role,
        f"apply it with `kubectl apply -f FILE`, then {binding_hint(role['metadata']['name'])}",
    )
