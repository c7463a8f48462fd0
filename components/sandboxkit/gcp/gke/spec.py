"""Settings, plan, enforcement map and factory of ``gcp-gke`` (no SDK import here).

GKE Agent Sandbox: the cluster add-on installs the kubernetes-sigs/agent-sandbox controller and
CRDs; sandbox pods run on a gVisor node pool
(https://cloud.google.com/kubernetes-engine/docs/how-to/how-install-agent-sandbox).
"""

from __future__ import annotations

import ipaddress
import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, ClassVar, Final, Literal

from pydantic import AfterValidator, Field, model_validator

from sandboxkit.deployer import DeployerPolicy
from sandboxkit.effective_egress import ResourceView
from sandboxkit.errors import FieldError
from sandboxkit.gcp.deployer import apply_hint, gcp_document
from sandboxkit.gcp.gke.plan import (
    GVISOR_NODE_LABEL,
    GVISOR_TOLERATION,
    MAX_AUTHORIZED_NETWORKS,
    MAX_OBJECT_NAME,
    GkeAgentSandboxArgs,
    cluster_reference,
)
from sandboxkit.gcp.settings import (
    GCP_SDKS,
    LOG_RETENTION_CAP,
    AuthorizedNetwork,
    GcpSettings,
    PrivateCidr,
)
from sandboxkit.kubernetes.deployer import binding_hint, deployer_cluster_role
from sandboxkit.kubernetes.spec import (
    KUBERNETES_CAPS,
    KUBERNETES_SDKS,
    RuntimeClassSettings,
    SandboxObjectSettings,
    check_names_enforceable,
    kubernetes_enforcement,
    resolver_plan,
    sandbox_args,
)
from sandboxkit.profile import SandboxProfile
from sandboxkit.targets import (
    Cap,
    EgressAcceptance,
    Enforcement,
    KitComponent,
    KitContext,
    TargetSpec,
)

TARGET = "gcp-gke"

# Agent Sandbox's v1beta1 API needs GKE 1.36.3-gke.1767000 or later (how-install-agent-sandbox,
# "Before you begin"): the floor of minMasterVersion's minor version.
AGENT_SANDBOX_VERSION = "1.36.3-gke.1767000"
# A minor version, never a patch: GKE resolves "1.X" to the newest patch of that minor its
# release channel offers, while a pinned patch release leaves GKE's supported versions within
# months and creating the cluster then fails
# (https://cloud.google.com/kubernetes-engine/versioning#specifying_cluster_version).
DEFAULT_MIN_MASTER_VERSION = "1.36"
# Automatic control plane and node upgrades on GKE's default channel
# (https://cloud.google.com/kubernetes-engine/docs/concepts/release-channels).
DEFAULT_RELEASE_CHANNEL: Final = "REGULAR"
# The deployer reaches the control plane through its DNS-based endpoint, authorized by IAM
# (container.clusters.connect) from wherever it runs, so the Kubernetes objects created in the
# same `pulumi up` reach a private control plane
# (https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation#dns-based_endpoint).
DEFAULT_CONTROL_PLANE_ACCESS: Final = "dns"
MIN_MASTER_VERSION_SOURCE = (
    "https://cloud.google.com/kubernetes-engine/docs/how-to/how-install-agent-sandbox, "
    '"Before you begin"'
)
# Four vCPU and 16 GB hold a few default-sized sandboxes per node after system pods.
DEFAULT_MACHINE_TYPE = "e2-standard-4"
DEFAULT_MIN_NODES = 1
DEFAULT_MAX_NODES = 10
# The untainted pool for kube-dns, the Agent Sandbox controller, the kit's resolver and GKE's
# own pods: GKE Sandbox needs one besides the gVisor pool ("GKE-managed system workloads must
# run separately from untrusted sandboxed workloads",
# https://cloud.google.com/kubernetes-engine/docs/how-to/sandbox-pods). Two vCPU per node hold
# them; one node per zone of the regional cluster.
DEFAULT_SYSTEM_MACHINE_TYPE = "e2-standard-2"
DEFAULT_SYSTEM_NODES = 1
# GKE runs at most 1,000 nodes per node pool per zone (GKE quotas and limits,
# cloud.google.com/kubernetes-engine/quotas: "Nodes per node pool zone").
MAX_NODES_PER_ZONE = 1000
# Ranges of the cluster's own subnet (nodes), pods and services, and the control plane's /28.
DEFAULT_SUBNET_CIDR = "10.10.0.0/20"
DEFAULT_PODS_CIDR = "10.16.0.0/14"
DEFAULT_SERVICES_CIDR = "10.20.0.0/20"
DEFAULT_MASTER_CIDR = "172.16.0.16/28"
# The control plane's range is exactly a /28 (GKE API v1 PrivateClusterConfig
# masterIpv4CidrBlock; "the range must be a /28",
# https://cloud.google.com/kubernetes-engine/docs/how-to/legacy/network-isolation).
MASTER_CIDR_PREFIX = 28
MASTER_CIDR_SOURCE = (
    "GKE PrivateClusterConfig.masterIpv4CidrBlock is a /28: "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/legacy/network-isolation"
)
# Each node takes a /24 of the pods range at GKE's default of 110 Pods per node, which the
# kit's node pools keep (https://cloud.google.com/kubernetes-engine/docs/how-to/flexible-pod-cidr,
# "CIDR ranges for Standard clusters"); a regional cluster's pools run in three zones of the
# region (https://cloud.google.com/kubernetes-engine/docs/concepts/regional-clusters).
NODE_POD_RANGE_PREFIX = 24
REGIONAL_ZONES = 3
PODS_CIDR_SOURCE = (
    "a /24 per node at GKE's default 110 Pods per node: "
    "https://cloud.google.com/kubernetes-engine/docs/how-to/flexible-pod-cidr"
)
# The settings naming the four ranges, which must not overlap.
_RANGE_KEYS = {
    "subnet_cidr": "subnetCidr",
    "pods_cidr": "podsCidr",
    "services_cidr": "servicesCidr",
    "master_cidr": "masterCidr",
}
# GKE version forms with a number in every part: 1.X, 1.X.Y and 1.X.Y-gke.N
# (https://cloud.google.com/kubernetes-engine/versioning#specifying_cluster_version).
# ASCII digits only: int() reads other scripts' digits (1.\u0661\u0669 as 1.19).
_GKE_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+)(?:-gke\.(\d+))?)?$", re.ASCII)
_MINOR_VERSION = re.compile(r"^\d+\.\d+$", re.ASCII)


def gke_version(text: str) -> tuple[int, int, int, int]:
    """``(major, minor, patch, gke)`` of ``1.X``, ``1.X.Y`` or ``1.X.Y-gke.N``, compared as
    numbers; a missing part counts as 0, the lowest version the prefix may resolve to.

    Raises:
        ValueError: for any other form (``latest``, ``1.36.3-gke``, ``v1.36``).
    """
    match = _GKE_VERSION.match(text)
    if match is None:
        raise ValueError(f"a GKE minor version such as {DEFAULT_MIN_MASTER_VERSION} (1.X)")
    major, minor, patch, gke = (int(part or 0) for part in match.groups())
    return major, minor, patch, gke


def _control_plane_range(value: str) -> str:
    network = ipaddress.ip_network(value)
    if network.prefixlen != MASTER_CIDR_PREFIX:
        raise ValueError(
            f"a /{MASTER_CIDR_PREFIX} such as {DEFAULT_MASTER_CIDR}, not a /{network.prefixlen}: "
            f"write the 16 addresses the control plane takes as a /28 ({MASTER_CIDR_SOURCE})"
        )
    return value


def _supports_agent_sandbox(text: str) -> str:
    gke_version(text)
    if not _MINOR_VERSION.match(text):
        raise ValueError(
            f"a minor version such as {DEFAULT_MIN_MASTER_VERSION} (1.X): GKE resolves it to the "
            "newest patch its release channel offers, while a patch release leaves GKE's "
            "supported versions and creating the cluster then fails "
            "(https://cloud.google.com/kubernetes-engine/versioning#specifying_cluster_version)"
        )
    if gke_version(text)[:2] < gke_version(AGENT_SANDBOX_VERSION)[:2]:
        raise ValueError(
            f"{DEFAULT_MIN_MASTER_VERSION} or later: Agent Sandbox's v1beta1 API needs "
            f"{AGENT_SANDBOX_VERSION} (source: {MIN_MASTER_VERSION_SOURCE})"
        )
    return text


class GkeSettings(GcpSettings, SandboxObjectSettings):
    """``sandboxkit:gcp-gke`` settings: ``GcpSettings``, ``SandboxObjectSettings`` and these.

    Attributes:
        existingCluster: name of a cluster in ``region`` to add the gVisor node pool to, instead
            of creating one; it must already be private, on Dataplane V2, with workload
            identity, the Agent Sandbox add-on and a node pool without GKE Sandbox for system
            pods. The kit cannot see them: the gate reports the cluster as cannot verify
            (SBX-K8S-009, mandatory in prod) unless the pack config accepts
            ``projects/<project>/locations/<region>/clusters/<name>``.
        privateEndpoint: the control plane has no public endpoint (created cluster only). A
            public one is a finding of SBX-NET-009 (mandatory in prod) unless
            ``publicEndpointReason`` acknowledges it.
        publicEndpointReason: why the control plane keeps a public endpoint (10 to 500
            characters), only with ``privateEndpoint: false``; written into the cluster's
            description, where the gate reads it.
        controlPlaneAccess: how the deployer's ``pulumi up`` reaches the control plane to
            create the Kubernetes objects. ``dns`` (default): through the cluster's DNS-based
            endpoint (``controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic``),
            authorized by IAM (``container.clusters.connect``) from wherever the deployer runs,
            the IP endpoints staying private and behind ``masterAuthorizedNetworks``.
            ``authorizedNetworks``: through an IP endpoint from one of
            ``masterAuthorizedNetworks``; refused with ``privateEndpoint`` true on a created
            cluster, whose private endpoint lies in the VPC this stack creates, which no
            outside network reaches during the same ``pulumi up``.
        releaseChannel: GKE release channel, ``RAPID``, ``REGULAR`` (default) or ``STABLE``:
            GKE upgrades the control plane and nodes within it (created cluster only).
        masterAuthorizedNetworks: CIDR blocks allowed to reach the control plane, at most 50
            (GKE API v1 ``MasterAuthorizedNetworksConfig.cidr_blocks``: "up to 50 external
            networks"), each at most a /8 (IPv4) or /32 (IPv6) wide (``0.0.0.0/0``, ``::/0``
            and other blocks that wide are refused) and of public or private-use space only:
            loopback, link-local, documentation and other special-purpose blocks of IANA's
            registry are refused. The gate bounds the union of the public ones (SBX-NET-009),
            so many entries cannot add up to a wide control plane.
        masterCidr: the control plane's private range, exactly a /28 (GKE's
            ``masterIpv4CidrBlock``; a bare address or another size is refused); none of the
            four ranges (this one, ``subnetCidr``, ``podsCidr``, ``servicesCidr``) may overlap
            another. Each of the four lies inside one private-use (RFC 1918) block of IANA's
            special-purpose registry (``0.0.0.0/16``, ``127.0.0.0/16``, ``169.254.0.0/16``
            are refused).
        subnetCidr: private range of the nodes' subnet.
        podsCidr: private secondary range of the pods, wide enough for a /24 per node (GKE's
            default 110 Pods per node) for every node the pools may reach, ``(maxNodes +
            systemNodes)`` in each of three zones (created cluster only): with the default
            ``maxNodes`` 10 at least a /18.
        servicesCidr: private secondary range of the services.
        minMasterVersion: lowest GKE minor version the cluster runs, ``1.X``, at least
            ``1.36`` (Agent Sandbox v1beta1 needs 1.36.3-gke.1767000); GKE resolves it to the
            newest patch of that minor in ``releaseChannel``. A patch (``1.36.3``,
            ``1.36.3-gke.1767000``) is refused: it ages out of GKE's supported versions.
        machineType: machine type of gVisor nodes.
        minNodes: lower autoscaling bound of the gVisor pool, per zone (at most ``maxNodes``).
        maxNodes: upper autoscaling bound of the gVisor pool, per zone, at most 1000 (GKE's
            nodes per node pool per zone).
        systemMachineType: machine type of the system pool (created cluster only): the
            untainted, non-sandboxed nodes for kube-dns, the Agent Sandbox controller and the
            kit's resolver.
        systemNodes: nodes of the system pool per zone, 1 to 10.

    Raises (as a config error on the key): an authorized network wider than /8 (IPv4) or /32
    (IPv6); a ``minMasterVersion`` below ``DEFAULT_MIN_MASTER_VERSION``; ``minNodes`` above
    ``maxNodes``; two of the four ranges overlapping; a ``masterCidr`` other than a /28; a
    ``podsCidr`` too small for the nodes.
    """

    existing_cluster: Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")] | None = (
        Field(None, alias="existingCluster")
    )
    private_endpoint: bool = Field(True, alias="privateEndpoint")
    public_endpoint_reason: Annotated[str, Field(min_length=10, max_length=500)] | None = Field(
        None, alias="publicEndpointReason"
    )
    control_plane_access: Literal["dns", "authorizedNetworks"] = Field(
        DEFAULT_CONTROL_PLANE_ACCESS, alias="controlPlaneAccess"
    )
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] = Field(
        DEFAULT_RELEASE_CHANNEL, alias="releaseChannel"
    )
    master_authorized_networks: Annotated[
        tuple[AuthorizedNetwork, ...], Field(strict=False, max_length=MAX_AUTHORIZED_NETWORKS)
    ] = Field((), alias="masterAuthorizedNetworks")
    master_cidr: Annotated[PrivateCidr, AfterValidator(_control_plane_range)] = Field(
        DEFAULT_MASTER_CIDR, alias="masterCidr"
    )
    subnet_cidr: PrivateCidr = Field(DEFAULT_SUBNET_CIDR, alias="subnetCidr")
    pods_cidr: PrivateCidr = Field(DEFAULT_PODS_CIDR, alias="podsCidr")
    services_cidr: PrivateCidr = Field(DEFAULT_SERVICES_CIDR, alias="servicesCidr")
    min_master_version: Annotated[str, AfterValidator(_supports_agent_sandbox)] = Field(
        DEFAULT_MIN_MASTER_VERSION, alias="minMasterVersion"
    )
    machine_type: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)+$")] = Field(
        DEFAULT_MACHINE_TYPE, alias="machineType"
    )
    min_nodes: Annotated[int, Field(ge=0)] = Field(DEFAULT_MIN_NODES, alias="minNodes")
    max_nodes: Annotated[int, Field(ge=1, le=MAX_NODES_PER_ZONE)] = Field(
        DEFAULT_MAX_NODES, alias="maxNodes"
    )
    system_machine_type: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)+$")] = Field(
        DEFAULT_SYSTEM_MACHINE_TYPE, alias="systemMachineType"
    )
    system_nodes: Annotated[int, Field(ge=1, le=10)] = Field(
        DEFAULT_SYSTEM_NODES, alias="systemNodes"
    )

    @model_validator(mode="after")
    def _deployer_reaches_the_control_plane(self) -> GkeSettings:
        created = self.existing_cluster is None
        if created and self.private_endpoint and self.control_plane_access != "dns":
            raise FieldError(
                ".controlPlaneAccess",
                self.control_plane_access,
                "dns with privateEndpoint true on a cluster this stack creates: its private "
                "endpoint lies in the VPC the same pulumi up creates, which no "
                "masterAuthorizedNetworks network reaches before the Kubernetes objects are "
                "created. Alternatives: controlPlaneAccess dns (IAM-authorized DNS-based "
                "endpoint, from anywhere), privateEndpoint false with the deployer's public "
                "range in masterAuthorizedNetworks, or existingCluster on a network the "
                "deployer already reaches",
            )
        if self.control_plane_access != "dns" and not self.master_authorized_networks:
            raise FieldError(
                ".masterAuthorizedNetworks",
                [],
                "the deployer's range with controlPlaneAccess authorizedNetworks (no network "
                "may reach the IP endpoint otherwise), or controlPlaneAccess dns",
            )
        return self

    @model_validator(mode="after")
    def _reason_for_a_public_endpoint(self) -> GkeSettings:
        if self.public_endpoint_reason is not None and self.private_endpoint:
            raise FieldError(
                ".publicEndpointReason",
                self.public_endpoint_reason,
                "no reason while privateEndpoint is true (the reason acknowledges a public "
                "control-plane endpoint, privateEndpoint: false)",
            )
        return self

    @model_validator(mode="after")
    def _min_nodes_within_max(self) -> GkeSettings:
        if self.min_nodes > self.max_nodes:
            raise FieldError(".minNodes", self.min_nodes, f"at most maxNodes ({self.max_nodes})")
        return self

    @model_validator(mode="after")
    def _pods_range_holds_every_node(self) -> GkeSettings:
        # A cluster the stack reuses keeps its own pods range: the kit creates none there.
        if self.existing_cluster is not None:
            return self
        nodes = (self.max_nodes + self.system_nodes) * REGIONAL_ZONES
        network = ipaddress.ip_network(self.pods_cidr)
        held = 2 ** max(0, NODE_POD_RANGE_PREFIX - network.prefixlen)
        if network.prefixlen > NODE_POD_RANGE_PREFIX or held < nodes:
            widest = NODE_POD_RANGE_PREFIX - (nodes - 1).bit_length()
            raise FieldError(
                ".podsCidr",
                self.pods_cidr,
                f"a range of at least /{widest}: it holds a /{NODE_POD_RANGE_PREFIX} for each "
                f"of the {nodes} nodes (maxNodes {self.max_nodes} + systemNodes "
                f"{self.system_nodes}, in each of {REGIONAL_ZONES} zones) the pools may reach; "
                f"widen podsCidr or lower maxNodes ({PODS_CIDR_SOURCE})",
            )
        return self

    @model_validator(mode="after")
    def _ranges_disjoint(self) -> GkeSettings:
        for first, second in itertools.combinations(_RANGE_KEYS, 2):
            ranges = {key: getattr(self, key) for key in (first, second)}
            if ipaddress.ip_network(ranges[first]).overlaps(ipaddress.ip_network(ranges[second])):
                # Point at the range the stack set, so a default is never blamed.
                named, other = (
                    (second, first)
                    if second in self.model_fields_set and first not in self.model_fields_set
                    else (first, second)
                )
                raise FieldError(
                    f".{_RANGE_KEYS[named]}",
                    ranges[named],
                    f"a range that does not overlap {_RANGE_KEYS[other]} ({ranges[other]}): "
                    "nodes, pods, services and the control plane each need their own addresses",
                )
        return self


# GKE's own runtime class for gVisor node pools (sandbox-pods docs): referenced, never created.
GVISOR_RUNTIME_CLASS = RuntimeClassSettings(name="gvisor", handler="runsc", create=False)


def gke_args(
    profile: SandboxProfile, settings: GkeSettings, context: KitContext
) -> GkeAgentSandboxArgs:
    """Map the profile and ``sandboxkit:gcp-gke`` settings to component inputs.

    Sandbox DNS goes to the kit's resolver, which forwards to the metadata server
    (``169.254.169.254``, the VPC resolver every GKE node has, also behind Cloud DNS for GKE)
    unless ``resolver.upstream`` says otherwise.

    Raises:
        ConfigError: see ``check_names_enforceable`` and ``resolver_plan``.
    """
    check_names_enforceable(profile, "gke", None, TARGET)
    sandbox = sandbox_args(
        profile,
        settings,
        context,
        fqdn_policy="gke",
        runtime_class=GVISOR_RUNTIME_CLASS,
        resolver=resolver_plan(profile, settings.resolver, "metadata-server", TARGET),
    )
    sandbox["tolerations"] = [dict(GVISOR_TOLERATION)]
    sandbox["node_selector"] = dict(GVISOR_NODE_LABEL)
    return GkeAgentSandboxArgs(
        project=settings.project,
        region=settings.region,
        object_name=context.object_name("sbx-", MAX_OBJECT_NAME),
        existing_cluster=settings.existing_cluster,
        private_endpoint=settings.private_endpoint,
        public_endpoint_reason=settings.public_endpoint_reason,
        control_plane_access=settings.control_plane_access,
        release_channel=settings.release_channel,
        master_authorized_networks=settings.master_authorized_networks,
        master_cidr=settings.master_cidr,
        subnet_cidr=settings.subnet_cidr,
        pods_cidr=settings.pods_cidr,
        services_cidr=settings.services_cidr,
        min_master_version=settings.min_master_version,
        machine_type=settings.machine_type,
        min_nodes=settings.min_nodes,
        max_nodes=settings.max_nodes,
        system_machine_type=settings.system_machine_type,
        system_nodes=settings.system_nodes,
        log_retention_days=profile.audit.log_retention_days,
        labels=context.labels(),
        sandbox=sandbox,
    )


class GkeTarget(TargetSpec[GkeSettings, GkeAgentSandboxArgs]):
    """The ``gcp-gke`` target."""

    name: ClassVar[str] = TARGET
    sdks: ClassVar[Mapping[str, float]] = {**GCP_SDKS, **KUBERNETES_SDKS}
    # GKE FQDNNetworkPolicy cannot enforce the kit's resolver's answers: IP entries only
    # (``check_names_enforceable``).
    accepts: ClassVar[EgressAcceptance | None] = EgressAcceptance(names=False, wildcards=False)
    settings_model = GkeSettings
    caps: ClassVar[tuple[Cap, ...]] = (LOG_RETENTION_CAP, *KUBERNETES_CAPS)

    def plan(
        self, profile: SandboxProfile, settings: GkeSettings, context: KitContext
    ) -> GkeAgentSandboxArgs:
        """The ``GkeAgentSandbox`` inputs (see ``gke_args``)."""
        return gke_args(profile, settings, context)

    def enforcement(
        self, profile: SandboxProfile, settings: GkeSettings, plan: GkeAgentSandboxArgs | None
    ) -> dict[str, Enforcement]:
        """``kubernetes_enforcement`` with the GKE FQDN policy, plus the kit's log bucket."""
        enforcement = kubernetes_enforcement(profile, "gke")
        enforcement["audit.logRetentionDays"] = Enforcement(
            "platform",
            "log bucket retentionDays, with a sink for the sandbox namespace's container logs",
        )
        return enforcement

    def deployer_policy(
        self, context: KitContext, settings: GkeSettings, resources: Sequence[ResourceView]
    ) -> DeployerPolicy:
        """The roles and APIs of the rendered GCP resources (``gcp.deployer``) and, under
        ``kubernetes``, the ClusterRole of the cluster objects (``kubernetes.deployer``): what a
        deployer needs in the cluster when its IAM role is narrower than
        ``roles/container.admin`` (which alone grants every Kubernetes object). With
        ``existingCluster``, ``roles/container.clusterViewer`` lets the deployer fetch the
        cluster's endpoint and credentials."""
        document = gcp_document(self.name, settings.project, resources)
        if settings.existing_cluster is not None:
            document["roles"] = sorted({*document["roles"], "roles/container.clusterViewer"})
        role = deployer_cluster_role(self.name, context.stack, resources)
        document["kubernetes"] = role
        return DeployerPolicy(
            self.name,
            document,
            f"{apply_hint(document)}; in the cluster, apply the `kubernetes` ClusterRole with "
            f"`kubectl apply -f FILE`, then {binding_hint(role['metadata']['name'])}",
        )

    def unseen(self, settings: GkeSettings) -> tuple[str, ...]:
        """The existing cluster (``existingCluster``), whose settings its owner decides."""
        if settings.existing_cluster is None:
            return ()
        reference = cluster_reference(settings.project, settings.region, settings.existing_cluster)
        return (
            f"sandboxkit:gcp-gke.existingCluster is set: the kit cannot see how cluster "
            f"{reference} is configured (Dataplane V2, private nodes and endpoint, master "
            "authorized networks, workload identity, the Agent Sandbox add-on, a system node "
            "pool); the policy gate reports it as cannot verify (SBX-K8S-009, mandatory in prod "
            "unless the pack config accepts it)",
        )

    def component(self, plan: GkeAgentSandboxArgs) -> KitComponent:
        """The ``GkeAgentSandbox`` component."""
        from sandboxkit.gcp.gke.cluster import GkeAgentSandbox

        return GkeAgentSandbox(self.name, plan)


SPEC = GkeTarget()
