"""The sandbox-guard checks of what the gcp-gke target creates: the GKE cluster and its gVisor
node pool; the agent-sandbox objects on it are the kubernetes target's, re-exported here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sandboxkit.contract import NODE_POOL_LABEL, SYSTEM_NODE_POOL
from sandboxkit.gcp import guard as gcp_guard
from sandboxkit.guard import CheckContext, Handler, dig
from sandboxkit.guard_checks import identity_allowed
from sandboxkit.kubernetes import guard as kubernetes_guard

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"


# --- SBX-NET-003 -------------------------------------------------------------------------------


def _datapath(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if props.get("datapathProvider") != "ADVANCED_DATAPATH":
        yield (
            f"GKE cluster {ctx.name} does not use Dataplane V2, so sandbox network and FQDN "
            "policies are not enforced; set datapathProvider to ADVANCED_DATAPATH."
        )


# --- SBX-IAM-002 -------------------------------------------------------------------------------


def _node_metadata(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    mode = dig(props, "nodeConfig.workloadMetadataConfig.mode")
    if mode != "GKE_METADATA" and not identity_allowed(ctx):
        yield (
            f"Node pool {ctx.name} has workload metadata mode {mode}, so pods can read the "
            "node's credentials; set nodeConfig.workloadMetadataConfig.mode to GKE_METADATA."
        )


# --- SBX-K8S-004 -------------------------------------------------------------------------------


def _gvisor_pool(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # The system pool runs GKE's pods, kube-dns and the kit's resolver; sandbox pods select the
    # gVisor node label, which only GKE Sandbox pools carry, so none can land there.
    if (dig(props, "nodeConfig.labels", {}) or {}).get(NODE_POOL_LABEL) == SYSTEM_NODE_POOL:
        return
    sandbox = dig(props, "nodeConfig.sandboxConfig", {}) or {}
    kind = str(sandbox.get("type") or sandbox.get("sandboxType") or "")
    if kind.upper() != "GVISOR":
        yield (
            f"Node pool {ctx.name} does not run GKE Sandbox; set "
            "nodeConfig.sandboxConfig.type to GVISOR."
        )


HANDLERS = (
    *gcp_guard.HANDLERS,
    *kubernetes_guard.HANDLERS,
    Handler("SBX-NET-003", (CLUSTER,), _datapath),
    Handler("SBX-IAM-002", (NODE_POOL,), _node_metadata),
    Handler("SBX-K8S-004", (NODE_POOL,), _gvisor_pool),
)
