"""Settings, plan, enforcement map and factory of the ``kubernetes`` target (no SDK import here)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Annotated, ClassVar, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from sandboxkit.boundary import LINK_LOCAL_RESOLVERS
from sandboxkit.deployer import DeployerPolicy
from sandboxkit.effective_egress import ResourceView
from sandboxkit.egress_contract import EgressRule
from sandboxkit.errors import ConfigError, FieldError, Problem
from sandboxkit.kubernetes.cilium import (
    MINIMUM_VERSION,
    MULTI_LABEL_PATTERNS,
    CiliumVersion,
    parse_version,
)
from sandboxkit.kubernetes.deployer import kubernetes_policy
from sandboxkit.kubernetes.plan import AgentSandboxArgs, ResolverArgs
from sandboxkit.kubernetes.resolver import resolver_config
from sandboxkit.profile import SandboxProfile
from sandboxkit.targets import (
    Cap,
    EgressAcceptance,
    Enforcement,
    KitComponent,
    KitContext,
    TargetSettings,
    TargetSpec,
)
from sandboxkit.value_formats import ImageReference

# gVisor intercepts every syscall in a user-space kernel: the sandbox wall the controller's
# docs recommend. GKE names its runtime class "gvisor" with handler "runsc".
DEFAULT_RUNTIME_CLASS = "gvisor"
DEFAULT_RUNTIME_HANDLER: Final = "runsc"
# A namespace of its own, so the kit's ResourceQuota and policies bound only sandboxes.
DEFAULT_NAMESPACE = "agent-sandboxes"
# The sandbox router is the one documented entry path; it runs in its own namespace.
DEFAULT_ENTRY_NAMESPACE = "agent-sandbox-router"
DEFAULT_ENTRY_PORT = 8888
# 65532 is the conventional "nonroot" user of distroless images.
DEFAULT_RUN_AS_USER = 65532
# kube-dns's Service address on kubeadm and kind clusters (their default service CIDR
# 10.96.0.0/12, tenth address); other clusters set resolver.kubeDnsAddress.
DEFAULT_KUBE_DNS_ADDRESS = "10.96.0.10"
# Two resolver pods: one answers while the other restarts or moves.
DEFAULT_RESOLVER_REPLICAS = 2
# The newest Cilium release whose name matching the kit has read (see kubernetes/cilium.py).
DEFAULT_CILIUM_VERSION = "1.19"

_NAME = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]
# CRI handlers that put a kernel boundary between the sandbox and the node: gVisor and Kata
# Containers. A class named "gvisor" that runs plain runc would be a silent downgrade.
SandboxHandler = Literal["runsc", "kata", "kata-qemu", "kata-clh", "kata-fc"]
# Namespaces the cluster itself or a shared add-on uses, refused for the sandboxes and for the
# entry path: a quota and deny-all policy there would break the cluster, sandboxes there would
# sit among system workloads, and an entry namespace there would let every system pod reach
# the sandboxes. Sources: Kubernetes ships default, kube-system, kube-public and
# kube-node-lease and reserves the kube- prefix for system namespaces
# (kubernetes.io/docs/concepts/overview/working-with-objects/namespaces, "Initial namespaces");
# GKE runs its managed components in gke-* namespaces (gke-managed-system ...), Managed Service
# for Prometheus in gmp-system and gmp-public (cloud.google.com/stackdriver/docs/
# managed-prometheus), Config Sync in config-management-system; the install namespace each
# add-on's own install guide creates: istio-system (Istio), calico-system and tigera-operator
# (Calico operator), cilium-secrets (Cilium), cert-manager, gatekeeper-system (OPA Gatekeeper),
# kyverno, linkerd, and agent-sandbox-system (the kubernetes-sigs/agent-sandbox controller's
# manifest). The add-ons are a partial list by nature: name a namespace of the kit's own.
SYSTEM_NAMESPACE_PREFIXES = ("kube-", "gke-", "gmp-")
SYSTEM_NAMESPACES = frozenset(
    {
        "default",
        "istio-system",
        "calico-system",
        "tigera-operator",
        "cilium-secrets",
        "cert-manager",
        "gatekeeper-system",
        "kyverno",
        "linkerd",
        "config-management-system",
        "agent-sandbox-system",
    }
)
# Kubernetes designs for at most 150,000 pods per cluster ("Considerations for large clusters",
# kubernetes.io/docs/setup/best-practices/cluster-large); the kit's pod quota is
# maxConcurrent + ready.
MAX_CLUSTER_PODS = 150_000
_LARGE_CLUSTERS = (
    "Kubernetes supports at most 150,000 pods per cluster "
    "(kubernetes.io/docs/setup/best-practices/cluster-large)"
)
# CPU seconds to import what the kit uses of pulumi_kubernetes (``TargetSpec.sdks``; gcp-gke
# renders with it too).
KUBERNETES_SDKS: Final[Mapping[str, float]] = {"pulumi_kubernetes": 0.2}
# Linux user ids are 32-bit; 4294967295 is (uid_t) -1, "no user" (setresuid(2)).
MAX_UID = 2**32 - 2
# The smallest memory limit runc and containerd start a container with, MiB.
MIN_CONTAINER_MEMORY_MIB = 6
# Kubernetes CPU quantities are precise to 1m: a smaller vCPU would render as "0m" (no limit),
# one between two millicores as the nearer (0.0015 as 2m, a third more than asked).
KUBERNETES_CAPS = (
    Cap(
        "limits.vcpu",
        0.001,
        None,
        "Kubernetes resource units: CPU precision finer than 1m is not allowed "
        "(kubernetes.io/docs/concepts/configuration/manage-resources-containers)",
        step=0.001,
    ),
    Cap(
        "limits.memoryMiB",
        MIN_CONTAINER_MEMORY_MIB,
        None,
        "container runtimes refuse a memory limit below 6 MiB: the pod fails with "
        "CreateContainerError (kubernetes/kubernetes#124841; sig-node: a runtime requirement)",
    ),
    Cap("pool.maxConcurrent", None, MAX_CLUSTER_PODS, _LARGE_CLUSTERS),
    Cap("pool.ready", None, MAX_CLUSTER_PODS, _LARGE_CLUSTERS),
)


def _not_a_system_namespace(value: str) -> str:
    if value in SYSTEM_NAMESPACES or value.startswith(SYSTEM_NAMESPACE_PREFIXES):
        raise ValueError(
            "a namespace of the kit's own, not one the cluster or a shared add-on uses "
            f"({', '.join(f'{p}*' for p in SYSTEM_NAMESPACE_PREFIXES)}, "
            f"{', '.join(sorted(SYSTEM_NAMESPACES))})"
        )
    return value


KitNamespace = Annotated[_NAME, AfterValidator(_not_a_system_namespace)]


class RuntimeClassSettings(BaseModel):
    """``sandboxkit:kubernetes.runtimeClass``: the runtime class sandbox pods use.

    Attributes:
        name: the RuntimeClass name.
        handler: the CRI handler, one that puts a kernel boundary between sandbox and node:
            ``runsc`` (gVisor) or a Kata Containers handler (``kata``, ``kata-qemu``,
            ``kata-clh``, ``kata-fc``); used only when ``create`` is true.
        create: create the RuntimeClass; ``false`` references an existing class (GKE supplies
            one), whose handler the kit cannot see: the gate reports it as cannot verify
            (SBX-K8S-009, mandatory in prod) unless the pack config accepts
            ``RuntimeClass/<name>``.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    name: _NAME = DEFAULT_RUNTIME_CLASS
    handler: SandboxHandler = DEFAULT_RUNTIME_HANDLER
    create: bool = True


ResolverUpstream = Literal["kube-dns", "node-local-dns", "metadata-server"]


_SERVICE_ADDRESS = (
    "the IPv4 address of the kube-dns Service (kubectl -n kube-system get service kube-dns)"
)


def _ipv4(value: str) -> str:
    try:
        address = ipaddress.IPv4Address(value)
    except ValueError:
        raise ValueError(_SERVICE_ADDRESS) from None
    # A Service's ClusterIP is a unicast address of the service range: 0.0.0.0, loopback
    # (the pod itself), link-local, multicast and 240.0.0.0/4 never name the cluster's DNS.
    if (
        address.is_unspecified
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
    ):
        raise ValueError(
            f"{_SERVICE_ADDRESS}: a unicast ClusterIP, never an unspecified, loopback, "
            "link-local, multicast or reserved address"
        )
    return str(address)


class ResolverSettings(BaseModel):
    """``resolver``: the kit's DNS resolver for sandbox pods (dnsmasq, ``images/resolver``).

    Sandbox pods send DNS only to it (``dnsPolicy: None``); it forwards the names the egress
    profile lets resolve and answers everything else NXDOMAIN itself. Deployed with egress
    ``open`` and with an ``allowlist`` that names hosts; with ``deny`` (or IP entries only)
    sandbox pods get no DNS at all.

    Attributes:
        image: the resolver image, an OCI image reference: build ``images/resolver`` and pin it
            by digest. Required when the resolver is deployed.
        upstream: the cluster resolver it forwards to, and the only peer its NetworkPolicy
            admits (UDP and TCP 53): ``kube-dns`` (kube-dns pods in kube-system, at
            ``kubeDnsAddress``), ``node-local-dns`` (NodeLocal DNSCache, ``169.254.20.10/32``)
            or ``metadata-server`` (Cloud DNS for GKE and the Google Cloud VPC resolver,
            ``169.254.169.254/32``; every other port of that address stays refused). Default:
            ``kube-dns`` on target kubernetes, ``metadata-server`` on gcp-gke.
        kubeDnsAddress: the kube-dns Service's IPv4 address, with ``upstream: kube-dns``
            (default ``10.96.0.10``, kubeadm's and kind's).
        replicas: resolver pods, 1 to 5.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)

    image: ImageReference | None = None
    upstream: ResolverUpstream | None = None
    kube_dns_address: Annotated[str, AfterValidator(_ipv4)] = Field(
        DEFAULT_KUBE_DNS_ADDRESS, alias="kubeDnsAddress"
    )
    replicas: Annotated[int, Field(ge=1, le=5)] = DEFAULT_RESOLVER_REPLICAS


class SandboxObjectSettings(TargetSettings):
    """Settings of the agent-sandbox objects, shared by every target that deploys them.

    Attributes:
        image: the sandbox container image, an OCI image reference pinned by digest or tag
            (``name[:tag][@digest]``; see ``sandboxkit.value_formats``).
        namespace: namespace of the sandbox objects; never one the cluster or a shared add-on
            uses (``default``, ``kube-*``, ``gke-*``, ``gmp-*``, ``istio-system`` and the
            other names of ``SYSTEM_NAMESPACES``), whether created or existing.
        createNamespace: create it (with Pod Security ``restricted``) or use an existing one.
        entryNamespace: namespace of the sandbox router, the only ingress source; never the
            sandboxes' own ``namespace``, nor a system or shared namespace (the same list as
            ``namespace``: every pod there could reach the sandboxes).
        entryPort: the sandbox port the router reaches.
        runAsUser: UID of the sandbox process, 1 to 4294967294 (Linux user ids are 32-bit;
            4294967295 means no user).
        resolver: see ``ResolverSettings``.
    """

    image: ImageReference
    namespace: KitNamespace = DEFAULT_NAMESPACE

    @model_validator(mode="after")
    def _entry_path_is_another_namespace(self) -> SandboxObjectSettings:
        if self.entry_namespace == self.namespace:
            # Ingress is admitted from the whole entry namespace: the sandboxes' own would let
            # every sandbox reach every other one.
            raise FieldError(
                ".entryNamespace",
                self.entry_namespace,
                f"the sandbox router's namespace, not the sandboxes' own ({self.namespace})",
            )
        return self

    create_namespace: bool = Field(True, alias="createNamespace")
    entry_namespace: KitNamespace = Field(DEFAULT_ENTRY_NAMESPACE, alias="entryNamespace")
    entry_port: Annotated[int, Field(ge=1, le=65535)] = Field(DEFAULT_ENTRY_PORT, alias="entryPort")
    run_as_user: Annotated[int, Field(ge=1, le=MAX_UID)] = Field(
        DEFAULT_RUN_AS_USER, alias="runAsUser"
    )
    resolver: ResolverSettings = ResolverSettings()


def _cilium_version(value: str) -> str:
    if parse_version(value) < MINIMUM_VERSION:
        raise ValueError(
            f"Cilium {MINIMUM_VERSION[0]}.{MINIMUM_VERSION[1]} or later: the first release that "
            "enforces TLS serverNames (cilium/cilium PR #22398), which the kit needs to match "
            "names at L7"
        )
    return value


class KubernetesSettings(SandboxObjectSettings):
    """``sandboxkit:kubernetes`` settings: ``SandboxObjectSettings`` plus the following.

    Attributes:
        context: kubeconfig context of the cluster (required: never the ambient current one).
        runtimeClass: the runtime class of sandbox pods (see ``RuntimeClassSettings``);
            ``create: false`` references an existing class.
        fqdnPolicy: how ``allowlist`` names are enforced: ``cilium`` (CiliumNetworkPolicy
            ``toFQDNs`` with TLS ``serverNames`` or HTTP ``host`` rules, which need Cilium's L7
            proxy, Envoy); ``gke`` (GKE FQDNNetworkPolicy) and ``none`` (plain NetworkPolicy)
            take IP entries only, as NetworkPolicy ``ipBlock`` rules (see
            ``check_names_enforceable``).
        ciliumVersion: the cluster's Cilium release (``1.19``, ``1.18.4``), 1.13 or later; it
            decides what the kit's patterns mean. A wildcard entry needs 1.19 or later.
    """

    context: Annotated[str, Field(pattern=r"\S")]
    runtime_class: RuntimeClassSettings = Field(RuntimeClassSettings(), alias="runtimeClass")
    fqdn_policy: Literal["none", "cilium", "gke"] = Field("none", alias="fqdnPolicy")
    cilium_version: Annotated[str, AfterValidator(_cilium_version)] = Field(
        DEFAULT_CILIUM_VERSION, alias="ciliumVersion"
    )


def name_entries(profile: SandboxProfile) -> tuple[EgressRule, ...]:
    """The allowlist's name and wildcard entries (IP entries need no name)."""
    return tuple(rule for rule in profile.egress.allow if rule.kind != "ip")


def check_names_enforceable(
    profile: SandboxProfile, fqdn_policy: str, cilium_version: CiliumVersion | None, target: str
) -> None:
    """Refuse allowlist names the cluster cannot enforce exactly as the egress contract says.

    Raises:
        ConfigError: names with ``fqdnPolicy: none`` (a NetworkPolicy matches addresses
            only); names with the ``gke`` flavour: GKE FQDNNetworkPolicy programs only
            addresses from kube-dns or Cloud DNS answers to the pod ("Results returned by
            non-cluster DNS name servers ... are not considered valid", GKE docs, FQDN network
            policies, Requirements and limitations), while the kit sends sandbox DNS to its own
            filtering resolver so that a name cannot carry data out; the names would resolve
            and never connect. Wildcards on Cilium before 1.19, whose patterns cannot say "below
            at any depth" (``cilium.MULTI_LABEL_PATTERNS``).
    """
    if profile.egress.mode != "allowlist":
        return
    names = name_entries(profile)
    # Why a flavour without Cilium's DNS-aware policy cannot take names.
    names_refused = {
        "none": f", whose fqdnPolicy is none: plain Kubernetes NetworkPolicy matches addresses, "
        f"not names. Set sandboxkit:{target}.fqdnPolicy to cilium (Cilium 1.19 or later) for "
        "name entries",
        "gke": ": GKE FQDNNetworkPolicy learns addresses only from kube-dns or Cloud DNS "
        "answers, and sandbox DNS goes to the kit's filtering resolver (which keeps names from "
        "carrying data out), so listed names would never connect. Use target kubernetes with "
        "fqdnPolicy cilium (Cilium 1.19 or later) for name entries",
    }
    if names and fqdn_policy in names_refused:
        raise ConfigError(
            Problem(
                "sandboxkit:profile.egress.allow",
                [str(rule) for rule in names],
                f"IP entries only on target {target}{names_refused[fqdn_policy]}",
            )
        )
    wildcards = [str(rule) for rule in names if rule.kind == "wildcard"]
    if (
        fqdn_policy == "cilium"
        and wildcards
        and cilium_version is not None
        and cilium_version < MULTI_LABEL_PATTERNS
    ):
        raise ConfigError(
            Problem(
                f"sandboxkit:{target}.ciliumVersion",
                f"{cilium_version[0]}.{cilium_version[1]}",
                f"1.19 or later for the wildcard entries {', '.join(wildcards)}: earlier "
                "Cilium reads '**.' as '*', one label only (cilium/cilium PR #43420). List "
                "each name the sandboxes need instead, or upgrade Cilium",
            )
        )


def resolver_plan(
    profile: SandboxProfile,
    settings: ResolverSettings,
    default_upstream: ResolverUpstream,
    target: str,
) -> ResolverArgs | None:
    """The kit's resolver for sandbox pods, or ``None`` where they need no DNS (``deny``, or an
    allowlist of IP entries only).

    Raises:
        ConfigError: the resolver is needed and ``resolver.image`` is not set.
    """
    mode = profile.egress.mode
    if mode == "deny" or (mode == "allowlist" and not name_entries(profile)):
        return None
    if settings.image is None:
        raise ConfigError(
            Problem(
                f"sandboxkit:{target}.resolver.image",
                None,
                f"the image of the kit's DNS resolver, needed with egress mode {mode} (build "
                "images/resolver and pin it by digest): sandbox pods resolve names only "
                "through it",
            )
        )
    upstream = settings.upstream or default_upstream
    address = LINK_LOCAL_RESOLVERS.get(upstream, settings.kube_dns_address)
    return ResolverArgs(
        image=settings.image,
        replicas=settings.replicas,
        config=resolver_config(mode, profile.egress.allow, [address]),
        upstream=upstream,
        upstream_address=address,
    )


def kubernetes_enforcement(profile: SandboxProfile, fqdn_policy: str) -> dict[str, Enforcement]:
    """The enforcement map of the agent-sandbox objects (shared with ``gcp-gke``)."""
    mode = profile.egress.mode
    names = {
        "cilium": "CiliumNetworkPolicy: DNS only through the kit's resolver and Cilium's DNS "
        "proxy, for the listed names; toFQDNs by resolved address plus TLS serverNames (HTTP "
        "host on port 80) checked by Cilium's Envoy",
        "gke": "no names (refused: GKE FQDNNetworkPolicy cannot learn from the kit's resolver)",
        "none": "no names",
    }[fqdn_policy]
    egress_where = {
        "deny": "NetworkPolicy denying all egress from sandbox pods; no DNS (nameserver 127.0.0.1)",
        "open": "NetworkPolicy allowing public addresses only (private, link-local and "
        "metadata ranges excluded); DNS only through the kit's resolver, which drops answers "
        "with non-public addresses",
        "allowlist": f"NetworkPolicy for IP entries; {names}",
    }[mode]
    template = "SandboxTemplate podTemplate.spec"
    return {
        "egress.mode": Enforcement("platform", egress_where),
        "limits.vcpu": Enforcement("platform", f"{template}.containers[].resources.limits.cpu"),
        "limits.memoryMiB": Enforcement(
            "platform", f"{template}.containers[].resources.limits.memory"
        ),
        "limits.execTimeoutSeconds": Enforcement(
            "none", "Kubernetes has no per-command timeout; the caller's exec client must apply it"
        ),
        "limits.maxLifetimeSeconds": Enforcement(
            "platform", f"{template}.activeDeadlineSeconds (from pod start, warm time included)"
        ),
        "limits.idleTimeoutSeconds": Enforcement(
            "none", "agent-sandbox has no idle shutdown; claims set lifecycle.shutdownTime"
        ),
        "pool.ready": Enforcement("platform", "SandboxWarmPool spec.replicas"),
        "pool.maxConcurrent": Enforcement(
            "platform", "ResourceQuota spec.hard.pods (maxConcurrent + ready)"
        ),
        "audit.logRetentionDays": Enforcement(
            "none", "container logs are kept by the cluster's logging pipeline, not the kit"
        ),
    }


def sandbox_args(
    profile: SandboxProfile,
    settings: SandboxObjectSettings,
    context: KitContext,
    *,
    fqdn_policy: str,
    runtime_class: RuntimeClassSettings,
    resolver: ResolverArgs | None,
) -> AgentSandboxArgs:
    """Map the profile, the sandbox-object settings, the FQDN policy flavour, the runtime
    class and the planned resolver (``resolver_plan``) to component inputs."""
    args = AgentSandboxArgs(
        object_name=context.object_name("sandboxkit-", 50),
        namespace=settings.namespace,
        create_namespace=settings.create_namespace,
        image=settings.image,
        vcpu=profile.limits.vcpu,
        memory_mib=profile.limits.memory_mib,
        max_lifetime_seconds=profile.limits.max_lifetime_seconds,
        pool_ready=profile.pool.ready,
        max_concurrent=profile.pool.max_concurrent,
        egress_mode=profile.egress.mode,
        egress_rules=profile.egress.allow,
        fqdn_policy=fqdn_policy,
        runtime_class_name=runtime_class.name,
        runtime_handler=runtime_class.handler,
        create_runtime_class=runtime_class.create,
        entry_namespace=settings.entry_namespace,
        entry_port=settings.entry_port,
        run_as_user=settings.run_as_user,
        labels=context.labels(),
    )
    if resolver is not None:
        args["resolver"] = resolver
    return args


class KubernetesTarget(TargetSpec[KubernetesSettings, AgentSandboxArgs]):
    """The ``kubernetes`` target."""

    name: ClassVar[str] = "kubernetes"
    sdks: ClassVar[Mapping[str, float]] = KUBERNETES_SDKS
    # Names need Cilium's DNS-aware policy (``check_names_enforceable``).
    accepts: ClassVar[EgressAcceptance | None] = EgressAcceptance(
        settings=(("fqdnPolicy", "cilium"),)
    )
    caps: ClassVar[tuple[Cap, ...]] = KUBERNETES_CAPS
    settings_model = KubernetesSettings

    def plan(
        self, profile: SandboxProfile, settings: KubernetesSettings, context: KitContext
    ) -> AgentSandboxArgs:
        """The ``AgentSandbox`` inputs, on the cluster of kubeconfig context ``context``.

        Raises:
            ConfigError: see ``check_names_enforceable`` and
                ``resolver_plan``.
        """
        cilium_version = parse_version(settings.cilium_version)
        check_names_enforceable(profile, settings.fqdn_policy, cilium_version, self.name)
        args = sandbox_args(
            profile,
            settings,
            context,
            fqdn_policy=settings.fqdn_policy,
            runtime_class=settings.runtime_class,
            resolver=resolver_plan(profile, settings.resolver, "kube-dns", self.name),
        )
        args["kubeconfig_context"] = settings.context
        args["cilium_version"] = cilium_version
        return args

    def enforcement(
        self, profile: SandboxProfile, settings: KubernetesSettings, plan: AgentSandboxArgs | None
    ) -> dict[str, Enforcement]:
        """See ``kubernetes_enforcement``."""
        return kubernetes_enforcement(profile, settings.fqdn_policy)

    def unseen(self, settings: KubernetesSettings) -> tuple[str, ...]:
        """The referenced RuntimeClass (``runtimeClass.create: false``), whose handler the
        cluster decides."""
        if settings.runtime_class.create:
            return ()
        name = settings.runtime_class.name
        return (
            f"sandboxkit:kubernetes.runtimeClass.create is false: the kit cannot see which "
            f"handler the cluster's RuntimeClass {name} has (gVisor, Kata, or plain runc, which "
            "shares the node's kernel); the policy gate reports it as cannot verify "
            "(SBX-K8S-009, mandatory in prod unless the pack config accepts "
            f"RuntimeClass/{name})",
        )

    def deployer_policy(
        self,
        context: KitContext,
        settings: KubernetesSettings,
        resources: Sequence[ResourceView],
    ) -> DeployerPolicy:
        """A ClusterRole for the objects rendered (``kubernetes.deployer``)."""
        return kubernetes_policy(self.name, context.stack, resources)

    def component(self, plan: AgentSandboxArgs) -> KitComponent:
        """The ``AgentSandbox`` component."""
        from sandboxkit.kubernetes.agent_sandbox import AgentSandbox

        return AgentSandbox(self.name, plan)


SPEC = KubernetesTarget()
