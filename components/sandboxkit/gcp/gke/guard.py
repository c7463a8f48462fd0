"""The sandbox-guard checks of what the gcp-gke target creates: the GKE cluster and its gVisor
node pool; the agent-sandbox objects on it are the kubernetes target's, re-exported here."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sandboxkit.addresses import private_use_reason
from sandboxkit.boundary import NODE_POOL_LABEL, SYSTEM_NODE_POOL
from sandboxkit.gcp import guard as gcp_guard
from sandboxkit.gcp.gke.plan import (
    MAX_AUTHORIZED_NETWORKS,
    PUBLIC_ENDPOINT_MARK,
    cluster_reference,
)
from sandboxkit.gcp.type_tokens import CLUSTER, NODE_POOL
from sandboxkit.guard import (
    CheckContext,
    Handler,
    StackHandler,
    StackResource,
    UnknownInputError,
    dig,
    items,
    number,
    of_kind,
)
from sandboxkit.guard_checks import identity_allowed, network_of, outside_the_stack
from sandboxkit.kubernetes import guard as kubernetes_guard
from sandboxkit.policy_rules import (
    CONTROL_PLANE_BOUNDED,
    DEFAULT_DENY,
    NO_GUEST_IDENTITY,
    OUTSIDE_THE_STACK,
    SANDBOXED_RUNTIME,
)

# --- SBX-NET-003 -------------------------------------------------------------------------------


def _datapath(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if props.get("datapathProvider") != "ADVANCED_DATAPATH":
        yield (
            f"GKE cluster {ctx.name} does not use Dataplane V2, so sandbox network and FQDN "
            "policies are not enforced; set datapathProvider to ADVANCED_DATAPATH."
        )


# --- SBX-NET-009 -------------------------------------------------------------------------------


def _control_plane(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if dig(props, "privateClusterConfig.enablePrivateEndpoint") is not True:
        description = props.get("description")
        if not (isinstance(description, str) and PUBLIC_ENDPOINT_MARK in description):
            yield (
                f"GKE cluster {ctx.name} has a public control-plane endpoint, reachable from "
                "the internet by whoever holds a credential and an authorized address; set "
                "sandboxkit:gcp-gke.privateEndpoint to true, or acknowledge it with "
                "sandboxkit:gcp-gke.publicEndpointReason."
            )
    blocks = [
        b.get("cidrBlock")
        for b in items(dig(props, "masterAuthorizedNetworksConfig.cidrBlocks"))
        if isinstance(b, Mapping)
    ]
    if len(blocks) > MAX_AUTHORIZED_NETWORKS:
        yield (
            f"GKE cluster {ctx.name} lists {len(blocks)} master authorized networks; GKE takes "
            f"at most {MAX_AUTHORIZED_NETWORKS} (GKE API v1 MasterAuthorizedNetworksConfig."
            "cidr_blocks); list only the networks that administer the cluster."
        )
    networks = [n for n in map(network_of, map(str, blocks)) if n is not None]
    public = [n for n in networks if private_use_reason(n) is not None]
    # The union, not each entry: overlapping or adjacent blocks count once.
    ipv4 = ipaddress.collapse_addresses(n for n in public if isinstance(n, ipaddress.IPv4Network))
    ipv6 = ipaddress.collapse_addresses(n for n in public if isinstance(n, ipaddress.IPv6Network))
    bounds = (
        (ipv4, ctx.setting("maxAuthorizedIpv4Addresses"), "public IPv4 addresses"),
        (ipv6, 2 ** (128 - int(ctx.setting("minAuthorizedIpv6Prefix"))), "IPv6 addresses"),
    )
    for union, bound, what in bounds:
        held: int = sum(n.num_addresses for n in union)
        if held > bound:
            yield (
                f"GKE cluster {ctx.name}'s master authorized networks together hold {held} "
                f"{what}, more than the {number(bound)} sbx-net-009 allows, so the control "
                "plane faces that much of the internet however narrow each entry is; list only "
                "the networks that administer the cluster in "
                "sandboxkit:gcp-gke.masterAuthorizedNetworks."
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


# --- SBX-K8S-009 -------------------------------------------------------------------------------

# What the gate checks on a cluster the stack creates (SBX-NET-003, checkov's GKE checks and the
# kit's own settings in ``cluster.py``), and so cannot check on an existing one.
CLUSTER_UNSEEN = (
    "whether it enforces network policy with Dataplane V2 (SBX-NET-003), has private nodes, a "
    "private endpoint and master authorized networks, workload identity, shielded nodes, legacy "
    "ABAC off, the Agent Sandbox add-on and a system node pool without GKE Sandbox"
)


def _known(props: Mapping[str, Any], key: str) -> Any:
    """``props[key]``, or ``None`` while it is unknown (computed from a resource of the stack,
    so not an outside reference)."""
    try:
        return props.get(key)
    except UnknownInputError:
        return None


def _external_clusters(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    created = {_known(c.props, "name") for c in of_kind(resources, CLUSTER)}
    reported: set[str] = set()
    for pool in of_kind(resources, NODE_POOL):
        cluster = _known(pool.props, "cluster")
        if cluster is None or cluster in created:
            continue
        project, location = _known(pool.props, "project"), _known(pool.props, "location")
        reference = cluster_reference(project, location, cluster)
        if reference in reported:
            continue
        reported.add(reference)
        message = outside_the_stack(
            ctx,
            reference,
            f"GKE cluster {reference}, which node pool {pool.name} joins",
            CLUSTER_UNSEEN,
            "remove sandboxkit:gcp-gke.existingCluster so the kit creates the cluster with them",
        )
        if message:
            yield message, pool.urn


SECRET_SINKS = (*gcp_guard.SECRET_SINKS, *kubernetes_guard.SECRET_SINKS)

HANDLERS = (
    *gcp_guard.HANDLERS,
    *kubernetes_guard.HANDLERS,
    Handler(DEFAULT_DENY, (CLUSTER,), _datapath, "GKE clusters: ADVANCED_DATAPATH (Dataplane V2)"),
    Handler(
        NO_GUEST_IDENTITY,
        (NODE_POOL,),
        _node_metadata,
        "GKE node pools: workload metadata GKE_METADATA",
    ),
    Handler(SANDBOXED_RUNTIME, (NODE_POOL,), _gvisor_pool, "GKE node pools: GKE Sandbox (gVisor)"),
    StackHandler(
        OUTSIDE_THE_STACK,
        _external_clusters,
        "an existingCluster the stack uses but does not create",
    ),
    Handler(
        CONTROL_PLANE_BOUNDED,
        (CLUSTER,),
        _control_plane,
        "GKE clusters: private endpoint and master authorized networks",
    ),
)
