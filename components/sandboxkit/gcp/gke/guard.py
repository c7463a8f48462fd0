"""The sandbox-guard checks of what the gcp-gke target creates: the GKE cluster and its gVisor
node pool; the agent-sandbox objects on it are the kubernetes target's, re-exported here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sandboxkit.guard import CheckContext, Handler
from sandboxkit.kubernetes import guard as kubernetes_guard

CLUSTER = "gcp:container/cluster:Cluster"


# --- SBX-NET-003 -------------------------------------------------------------------------------


def _datapath(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if props.get("datapathProvider") != "ADVANCED_DATAPATH":
        yield (
            f"GKE cluster {ctx.name} does not use Dataplane V2, so sandbox network and FQDN "
            "policies are not enforced; set datapathProvider to ADVANCED_DATAPATH."
        )


HANDLERS = (
    *kubernetes_guard.HANDLERS,
    Handler("SBX-NET-003", (CLUSTER,), _datapath),
)
