"""Resource types of the ``gcp-gke`` target, with the shared Google Cloud plumbing and the
``kubernetes`` objects it deploys on the cluster.

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from sandboxkit.catalog import TAGS, TF_GOOGLE, ResourceKind, TerraformType
from sandboxkit.gcp.catalog import KINDS as GCP_KINDS
from sandboxkit.gcp.type_tokens import (
    CLUSTER,
    NODE_POOL,
)
from sandboxkit.kubernetes.catalog import KINDS as KUBERNETES_KINDS

# A documentation-range address and a placeholder certificate: the cluster is never reached.
MOCK_GKE_ENDPOINT = "192.0.2.10"
MOCK_GKE_DNS_ENDPOINT = "gke-0123456789abcdef0123456789abcdef-000000000000.us-central1.gke.goog"
MOCK_GKE_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCm1vY2sKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="


def _gke_cluster(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    endpoints = dict(args.inputs.get("controlPlaneEndpointsConfig") or {})
    dns = {**dict(endpoints.get("dnsEndpointConfig") or {}), "endpoint": MOCK_GKE_DNS_ENDPOINT}
    return {
        "endpoint": MOCK_GKE_ENDPOINT,
        "controlPlaneEndpointsConfig": {**endpoints, "dnsEndpointConfig": dns},
        "masterAuth": {"clusterCaCertificate": MOCK_GKE_CA},
    }


KINDS: tuple[ResourceKind, ...] = (
    *GCP_KINDS,
    *KUBERNETES_KINDS,
    ResourceKind(
        CLUSTER.token,
        export=TerraformType(
            "google_container_cluster",
            TF_GOOGLE,
            blocks=frozenset(
                {
                    "addonsConfig",
                    "addonsConfig.agentSandboxConfig",
                    "controlPlaneEndpointsConfig",
                    "controlPlaneEndpointsConfig.dnsEndpointConfig",
                    "releaseChannel",
                    "ipAllocationPolicy",
                    "masterAuthorizedNetworksConfig",
                    "masterAuthorizedNetworksConfig.cidrBlocks",
                    "nodeConfig",
                    "nodeConfig.shieldedInstanceConfig",
                    "nodeConfig.workloadMetadataConfig",
                    "privateClusterConfig",
                    "workloadIdentityConfig",
                }
            ),
            maps=frozenset({*TAGS, "nodeConfig.metadata", "nodeConfig.resourceLabels"}),
        ),
        mock_outputs=_gke_cluster,
    ),
    ResourceKind(
        NODE_POOL.token,
        export=TerraformType(
            "google_container_node_pool",
            TF_GOOGLE,
            blocks=frozenset(
                {
                    "autoscaling",
                    "management",
                    "nodeConfig",
                    "nodeConfig.sandboxConfig",
                    "nodeConfig.shieldedInstanceConfig",
                    "nodeConfig.workloadMetadataConfig",
                }
            ),
            maps=frozenset(
                {*TAGS, "nodeConfig.labels", "nodeConfig.metadata", "nodeConfig.resourceLabels"}
            ),
        ),
    ),
)
