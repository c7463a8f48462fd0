"""What ``GkeAgentSandbox`` is built from: its inputs, as the ``gcp-gke`` spec plans them.

No SDK and no settings here: the component imports this module and nothing of the spec.
"""

from __future__ import annotations

from typing import TypedDict

from sandboxkit.kubernetes.plan import AgentSandboxArgs

# GKE creates both for gVisor node pools: the RuntimeClass "gvisor" and this node label/taint
# (https://cloud.google.com/kubernetes-engine/docs/how-to/sandbox-pods). The kit references them
# (the runtime class: ``spec.GVISOR_RUNTIME_CLASS``).
GVISOR_NODE_LABEL = {"sandbox.gke.io/runtime": "gvisor"}
GVISOR_TOLERATION = {
    "key": "sandbox.gke.io/runtime",
    "operator": "Equal",
    "value": "gvisor",
    "effect": "NoSchedule",
}


def cluster_reference(project: object, location: object, name: object) -> str:
    """A GKE cluster's resource name, ``projects/<project>/locations/<location>/clusters/<name>``:
    how ``acceptedExternalReferences`` of SBX-K8S-009 names an existing cluster, the same in
    preview's warning and the pack's finding."""
    return f"projects/{project}/locations/{location}/clusters/{name}"


# GKE's limit on authorized networks: MasterAuthorizedNetworksConfig.cidr_blocks "define up to 50
# external networks" (GKE API v1, google.cloud.container.v1 MasterAuthorizedNetworksConfig).
MAX_AUTHORIZED_NETWORKS = 50
# The longest object name, the prefix of the target's cloud names: ``<object_name>-nodes`` is a
# service account id (6 to 30 characters, IAM projects.serviceAccounts.create accountId).
MAX_OBJECT_NAME = 24
# What the cluster's description says after the kit's text when the stack acknowledges a public
# control-plane endpoint (publicEndpointReason); SBX-NET-009 reads it.
PUBLIC_ENDPOINT_MARK = "; public control-plane endpoint acknowledged: "


class GkeAgentSandboxArgs(TypedDict, total=False):
    """Inputs of ``GkeAgentSandbox``; ``spec.gke_args`` builds them from a profile and settings."""

    project: str
    """Project id of every cloud child."""
    region: str
    """Region of the (regional) cluster, subnet, router and log bucket."""
    object_name: str
    """Prefix of cloud resource names (at most 24; ``<object_name>-nodes`` is an account id)."""
    existing_cluster: str | None
    """Add the node pool to this cluster instead of creating network and cluster."""
    private_endpoint: bool
    """The control plane has no public endpoint."""
    public_endpoint_reason: str | None
    """Why the control plane keeps a public endpoint (``privateEndpoint: false``), written into
    the cluster's description after ``PUBLIC_ENDPOINT_MARK`` for SBX-NET-009; ``None`` when not
    acknowledged."""
    control_plane_access: str
    """``dns`` (the kubeconfig names the DNS-based endpoint, open to IAM-authorized traffic)
    or ``authorizedNetworks`` (the IP endpoint)."""
    release_channel: str
    """GKE release channel: ``RAPID``, ``REGULAR`` or ``STABLE``."""
    master_authorized_networks: tuple[str, ...]
    """CIDR blocks allowed to reach the control plane."""
    master_cidr: str
    """The control plane's private /28."""
    subnet_cidr: str
    """Nodes' private range."""
    pods_cidr: str
    """Pods' private secondary range."""
    services_cidr: str
    """Services' private secondary range."""
    min_master_version: str
    """Lowest GKE version of the cluster."""
    machine_type: str
    """Machine type of gVisor nodes."""
    min_nodes: int
    """Autoscaling minimum of the gVisor pool, per zone."""
    max_nodes: int
    """Autoscaling maximum of the gVisor pool, per zone."""
    system_machine_type: str
    """Machine type of the system pool (created cluster only)."""
    system_nodes: int
    """Nodes of the system pool, per zone."""
    log_retention_days: int
    """Days the audit log bucket keeps the sandbox namespace's container logs."""
    labels: dict[str, str]
    """The kit's labels."""
    sandbox: AgentSandboxArgs
    """The ``AgentSandbox`` inputs (gVisor runtime class, toleration, node selector)."""


def cluster_description(public_endpoint_reason: str | None) -> str:
    """The created cluster's description: the kit's text, then ``PUBLIC_ENDPOINT_MARK`` and the
    stack's reason when it acknowledges a public control-plane endpoint."""
    text = "sandboxkit: GKE Agent Sandbox"
    return (
        f"{text}{PUBLIC_ENDPOINT_MARK}{public_endpoint_reason}" if public_endpoint_reason else text
    )
