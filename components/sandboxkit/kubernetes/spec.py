"""Settings, plan, enforcement map and factory of the ``kubernetes`` target (no SDK import here)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandboxkit.errors import ConfigError, FieldError, Problem
from sandboxkit.kubernetes.plan import AgentSandboxArgs
from sandboxkit.profile import SandboxProfile
from sandboxkit.targets import (
    Cap,
    Enforcement,
    KitComponent,
    KitContext,
    TargetSettings,
    TargetSpec,
)

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

_NAME = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]
# CRI handlers that put a kernel boundary between the sandbox and the node: gVisor and Kata
# Containers. A class named "gvisor" that runs plain runc would be a silent downgrade.
SandboxHandler = Literal["runsc", "kata", "kata-qemu", "kata-clh", "kata-fc"]
# Namespaces the cluster itself uses: a quota and deny-all policy there would break the cluster,
# and sandboxes there would share it with system workloads.
SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "default"})
# Kubernetes CPU quantities are precise to 1m; a smaller vCPU would render as "0m" (no limit).
KUBERNETES_CAPS = (
    Cap(
        "limits.vcpu",
        0.001,
        None,
        "Kubernetes resource units: CPU precision finer than 1m is not allowed "
        "(kubernetes.io/docs/concepts/configuration/manage-resources-containers)",
    ),
)


class RuntimeClassSettings(BaseModel):
    """``sandboxkit:kubernetes.runtimeClass``: the runtime class sandbox pods use.

    Attributes:
        name: the RuntimeClass name.
        handler: the CRI handler, one that puts a kernel boundary between sandbox and node:
            ``runsc`` (gVisor) or a Kata Containers handler (``kata``, ``kata-qemu``,
            ``kata-clh``, ``kata-fc``); used only when ``create`` is true.
        create: create the RuntimeClass; ``false`` references an existing class (GKE supplies
            one).
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    name: _NAME = DEFAULT_RUNTIME_CLASS
    handler: SandboxHandler = DEFAULT_RUNTIME_HANDLER
    create: bool = True


class SandboxObjectSettings(TargetSettings):
    """Settings of the agent-sandbox objects, shared by every target that deploys them.

    Attributes:
        image: the sandbox container image, pinned by digest or tag.
        namespace: namespace of the sandbox objects; never a namespace the cluster itself uses
            (``default``, ``kube-node-lease``, ``kube-public``, ``kube-system``).
        createNamespace: create it (with Pod Security ``restricted``) or use an existing one.
        entryNamespace: namespace of the sandbox router, the only ingress source; never the
            sandboxes' own ``namespace``.
        entryPort: the sandbox port the router reaches.
        runAsUser: UID of the sandbox process (non-zero).
    """

    image: Annotated[str, Field(min_length=1)]
    namespace: _NAME = DEFAULT_NAMESPACE

    @field_validator("namespace")
    @classmethod
    def _not_a_system_namespace(cls, value: str) -> str:
        if value in SYSTEM_NAMESPACES:
            raise ValueError(
                f"a namespace of the sandboxes' own, not {', '.join(sorted(SYSTEM_NAMESPACES))}"
            )
        return value

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
    entry_namespace: _NAME = Field(DEFAULT_ENTRY_NAMESPACE, alias="entryNamespace")
    entry_port: Annotated[int, Field(ge=1, le=65535)] = Field(DEFAULT_ENTRY_PORT, alias="entryPort")
    run_as_user: Annotated[int, Field(ge=1)] = Field(DEFAULT_RUN_AS_USER, alias="runAsUser")


class KubernetesSettings(SandboxObjectSettings):
    """``sandboxkit:kubernetes`` settings: ``SandboxObjectSettings`` plus the following.

    Attributes:
        context: kubeconfig context of the cluster (required: never the ambient current one).
        runtimeClass: the runtime class of sandbox pods (see ``RuntimeClassSettings``);
            ``create: false`` references an existing class.
        fqdnPolicy: how ``allowlist`` names are enforced: ``cilium`` (CiliumNetworkPolicy
            ``toFQDNs``), ``gke`` (GKE FQDNNetworkPolicy) or ``none`` (egress mode ``allowlist``
            exits 2).
    """

    context: Annotated[str, Field(pattern=r"\S")]
    runtime_class: RuntimeClassSettings = Field(RuntimeClassSettings(), alias="runtimeClass")
    fqdn_policy: Literal["none", "cilium", "gke"] = Field("none", alias="fqdnPolicy")


def check_fqdn_policy(profile: SandboxProfile, fqdn_policy: str, target: str) -> None:
    """Refuse ``allowlist`` where names have no enforcement path.

    Raises:
        ConfigError: ``allowlist`` with ``fqdnPolicy: none`` (no FQDN enforcement path).
    """
    mode = profile.egress.mode
    if mode == "allowlist" and fqdn_policy == "none":
        raise ConfigError(
            Problem(
                "sandboxkit:profile.egress.mode",
                mode,
                f"deny or open for target {target}, whose fqdnPolicy is none: plain "
                "Kubernetes NetworkPolicy cannot match host names. Set "
                f"sandboxkit:{target}.fqdnPolicy to cilium (Cilium CNI) or gke (GKE Dataplane V2 "
                "FQDN network policy)",
            )
        )


def kubernetes_enforcement(profile: SandboxProfile, fqdn_policy: str) -> dict[str, Enforcement]:
    """The enforcement map of the agent-sandbox objects (shared with ``gcp-gke``)."""
    mode = profile.egress.mode
    egress_where = {
        "deny": "NetworkPolicy denying all egress from sandbox pods",
        "open": "NetworkPolicy allowing public addresses only (private, link-local and "
        "metadata ranges excluded)",
        "allowlist": f"NetworkPolicy (DNS, IP entries) plus {fqdn_policy} FQDN policy",
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
) -> AgentSandboxArgs:
    """Map the profile, the sandbox-object settings, the FQDN policy flavour and the runtime
    class to component inputs."""
    return AgentSandboxArgs(
        object_name=f"sandboxkit-{context.stack}",
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


class KubernetesTarget(TargetSpec[KubernetesSettings, AgentSandboxArgs]):
    """The ``kubernetes`` target."""

    name: ClassVar[str] = "kubernetes"
    caps: ClassVar[tuple[Cap, ...]] = KUBERNETES_CAPS
    settings_model = KubernetesSettings

    def plan(
        self, profile: SandboxProfile, settings: KubernetesSettings, context: KitContext
    ) -> AgentSandboxArgs:
        """The ``AgentSandbox`` inputs, on the cluster of kubeconfig context ``context``.

        Raises:
            ConfigError: see ``check_fqdn_policy``.
        """
        check_fqdn_policy(profile, settings.fqdn_policy, self.name)
        args = sandbox_args(
            profile,
            settings,
            context,
            fqdn_policy=settings.fqdn_policy,
            runtime_class=settings.runtime_class,
        )
        args["kubeconfig_context"] = settings.context
        return args

    def enforcement(
        self, profile: SandboxProfile, settings: KubernetesSettings, plan: AgentSandboxArgs
    ) -> dict[str, Enforcement]:
        """See ``kubernetes_enforcement``."""
        return kubernetes_enforcement(profile, settings.fqdn_policy)

    def component(self, plan: AgentSandboxArgs) -> KitComponent:
        """The ``AgentSandbox`` component."""
        from sandboxkit.kubernetes.agent_sandbox import AgentSandbox

        return AgentSandbox(self.name, plan)


SPEC = KubernetesTarget()
