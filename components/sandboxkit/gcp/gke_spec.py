"""Settings, enforcement map and factory of ``gcp-gke`` (no SDK import here).

GKE Agent Sandbox: the cluster add-on installs the kubernetes-sigs/agent-sandbox controller and
CRDs; sandbox pods run on a gVisor node pool
(https://cloud.google.com/kubernetes-engine/docs/how-to/how-install-agent-sandbox).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from sandboxkit.gcp.spec import LOG_RETENTION_CAP, Cidr, GcpSettings, PrivateCidr
from sandboxkit.kubernetes.spec import (
    KUBERNETES_CAPS,
    SandboxObjectSettings,
    kubernetes_enforcement,
)
from sandboxkit.profile import SandboxProfile
from sandboxkit.targets import Cap, Deployment, Enforcement, KitContext, TargetSettings, TargetSpec

TARGET = "gcp-gke"

# Agent Sandbox's v1beta1 API needs GKE 1.36.3-gke.1767000 or later (how-install-agent-sandbox,
# "Before you begin").
DEFAULT_MIN_MASTER_VERSION = "1.36.3-gke.1767000"
# Four vCPU and 16 GB hold a few default-sized sandboxes per node after system pods.
DEFAULT_MACHINE_TYPE = "e2-standard-4"
DEFAULT_MIN_NODES = 1
DEFAULT_MAX_NODES = 10
# Ranges of the cluster's own subnet (nodes), pods and services, and the control plane's /28.
DEFAULT_SUBNET_CIDR = "10.10.0.0/20"
DEFAULT_PODS_CIDR = "10.16.0.0/14"
DEFAULT_SERVICES_CIDR = "10.20.0.0/20"
DEFAULT_MASTER_CIDR = "172.16.0.16/28"


class GkeSettings(GcpSettings, SandboxObjectSettings):
    """``sandboxkit:gcp-gke`` settings: ``GcpSettings``, ``SandboxObjectSettings`` and these.

    Attributes:
        existingCluster: name of a cluster in ``region`` to add the gVisor node pool to, instead
            of creating one; it must already be private, on Dataplane V2 with FQDN network
            policy, with workload identity and the Agent Sandbox add-on.
        privateEndpoint: the control plane has no public endpoint (created cluster only).
        masterAuthorizedNetworks: CIDR blocks allowed to reach the control plane.
        masterCidr: the control plane's private /28.
        subnetCidr, podsCidr, servicesCidr: private ranges of nodes, pods and services.
        minMasterVersion: lowest GKE version the cluster runs.
        machineType: machine type of gVisor nodes.
        minNodes, maxNodes: autoscaling bounds of the gVisor pool, per zone.
    """

    existing_cluster: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")] | None = (
        Field(None, alias="existingCluster")
    )
    private_endpoint: bool = Field(True, alias="privateEndpoint")
    master_authorized_networks: Annotated[tuple[Cidr, ...], Field(strict=False)] = Field(
        (), alias="masterAuthorizedNetworks"
    )
    master_cidr: PrivateCidr = Field(DEFAULT_MASTER_CIDR, alias="masterCidr")
    subnet_cidr: PrivateCidr = Field(DEFAULT_SUBNET_CIDR, alias="subnetCidr")
    pods_cidr: PrivateCidr = Field(DEFAULT_PODS_CIDR, alias="podsCidr")
    services_cidr: PrivateCidr = Field(DEFAULT_SERVICES_CIDR, alias="servicesCidr")
    min_master_version: Annotated[str, Field(min_length=1)] = Field(
        DEFAULT_MIN_MASTER_VERSION, alias="minMasterVersion"
    )
    machine_type: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)+$")] = Field(
        DEFAULT_MACHINE_TYPE, alias="machineType"
    )
    min_nodes: Annotated[int, Field(ge=0)] = Field(DEFAULT_MIN_NODES, alias="minNodes")
    max_nodes: Annotated[int, Field(ge=1)] = Field(DEFAULT_MAX_NODES, alias="maxNodes")


class GkeTarget(TargetSpec):
    """The ``gcp-gke`` target."""

    name: ClassVar[str] = TARGET
    settings_model: ClassVar[type[TargetSettings]] = GkeSettings
    caps: ClassVar[tuple[Cap, ...]] = (LOG_RETENTION_CAP, *KUBERNETES_CAPS)

    def enforcement(
        self, profile: SandboxProfile, settings: TargetSettings
    ) -> dict[str, Enforcement]:
        """``kubernetes_enforcement`` with the GKE FQDN policy, plus the kit's log bucket."""
        assert isinstance(settings, GkeSettings)
        enforcement = kubernetes_enforcement(profile, "gke", self.name)
        enforcement["audit.logRetentionDays"] = Enforcement(
            "platform",
            "log bucket retentionDays, with a sink for the sandbox namespace's container logs",
        )
        return enforcement

    def build(
        self, profile: SandboxProfile, settings: TargetSettings, context: KitContext
    ) -> Deployment:
        """The ``GkeAgentSandbox`` component."""
        from sandboxkit.gcp.gke import GkeAgentSandbox, gke_args

        assert isinstance(settings, GkeSettings)
        component = GkeAgentSandbox(self.name, gke_args(profile, settings, context))
        return Deployment(component, component.outputs())


SPEC = GkeTarget()
