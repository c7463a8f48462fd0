"""K8S: sandbox pods on Kubernetes keep the walls the kit builds."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import Severity

from sandboxkit.guard import (
    SANDBOX_POD_KINDS,
    containers_of,
    dig,
    items,
    number,
    sandbox_pod_spec,
    target_of,
)

from ._common import Context, ResourceRule, Rule


def _each_container(props: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for container in containers_of(sandbox_pod_spec(props)):
        yield str(container.get("name")), dig(container, "securityContext", {}) or {}


READ_ONLY_ROOT = ResourceRule(
    Rule(
        id="SBX-K8S-001",
        title="Sandbox containers have a read-only root filesystem",
        severity=Severity.HIGH,
        description="Checks that every sandbox container mounts its root filesystem "
        "read-only, so code cannot persist changes to the image.",
        remediation="Set securityContext.readOnlyRootFilesystem: true and give the sandbox an "
        "emptyDir for scratch space.",
    )
)


@READ_ONLY_ROOT.on(*SANDBOX_POD_KINDS)
def _read_only(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for name, security in _each_container(props):
        if security.get("readOnlyRootFilesystem") is not True:
            yield (
                f"Container {name} of {ctx.name} has a writable root filesystem; set "
                "securityContext.readOnlyRootFilesystem to true."
            )


NO_CAPABILITIES = ResourceRule(
    Rule(
        id="SBX-K8S-002",
        title="Sandbox containers drop all capabilities",
        severity=Severity.HIGH,
        description="Checks that every sandbox container drops ALL Linux capabilities and adds "
        "none back.",
        remediation="Set securityContext.capabilities to drop [ALL] with no add list.",
    )
)


@NO_CAPABILITIES.on(*SANDBOX_POD_KINDS)
def _capabilities(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for name, security in _each_container(props):
        dropped = [str(c) for c in items(dig(security, "capabilities.drop"))]
        added = [str(c) for c in items(dig(security, "capabilities.add"))]
        if "ALL" not in dropped:
            yield (
                f"Container {name} of {ctx.name} keeps the default capabilities; set "
                "securityContext.capabilities.drop to [ALL]."
            )
        if added:
            yield (
                f"Container {name} of {ctx.name} adds capabilities {', '.join(added)}; remove "
                "securityContext.capabilities.add."
            )


NON_ROOT = ResourceRule(
    Rule(
        id="SBX-K8S-003",
        title="Sandbox containers run unprivileged as non-root",
        severity=Severity.HIGH,
        description="Checks that sandbox containers run as a non-root user, are not "
        "privileged and cannot escalate privileges.",
        remediation="Set runAsNonRoot: true with a non-zero runAsUser, privileged: false and "
        "allowPrivilegeEscalation: false.",
    )
)


@NON_ROOT.on(*SANDBOX_POD_KINDS)
def _non_root(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    pod = dig(sandbox_pod_spec(props), "securityContext", {}) or {}
    for name, security in _each_container(props):
        non_root = security.get("runAsNonRoot", pod.get("runAsNonRoot"))
        user = security.get("runAsUser", pod.get("runAsUser"))
        if non_root is not True or user == 0:
            yield (
                f"Container {name} of {ctx.name} may run as root; set runAsNonRoot to true "
                "and runAsUser to a non-zero UID."
            )
        if security.get("privileged") is True:
            yield f"Container {name} of {ctx.name} is privileged; set privileged to false."
        if security.get("allowPrivilegeEscalation") is not False:
            yield (
                f"Container {name} of {ctx.name} may escalate privileges; set "
                "allowPrivilegeEscalation to false."
            )


SANDBOXED_RUNTIME = ResourceRule(
    Rule(
        id="SBX-K8S-004",
        title="Sandbox pods run under a sandboxed runtime",
        severity=Severity.HIGH,
        description="Checks that sandbox pods name a sandboxed RuntimeClass (gVisor or Kata) "
        "and that GKE node pools for them run gVisor.",
        remediation="Set runtimeClassName to a gVisor or Kata runtime class "
        "(sandboxkit:kubernetes.runtimeClass) and sandbox_config GVISOR on the node pool.",
        properties={
            "allowedRuntimeClasses": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["gvisor", "kata", "kata-qemu", "kata-clh", "kata-fc"],
                "description": "RuntimeClass names that provide a sandbox.",
            }
        },
    )
)


@SANDBOXED_RUNTIME.on(*SANDBOX_POD_KINDS)
def _runtime_class(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    runtime = sandbox_pod_spec(props).get("runtimeClassName")
    allowed = list(ctx.setting("allowedRuntimeClasses"))
    if runtime not in allowed:
        yield (
            f"{ctx.name} runs sandbox pods with runtime class {runtime}, which shares the "
            f"host kernel; set runtimeClassName to one of {', '.join(allowed)}."
        )


@SANDBOXED_RUNTIME.on("gcp:container/nodePool:NodePool")
def _gvisor_pool(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    sandbox = dig(props, "nodeConfig.sandboxConfig", {}) or {}
    kind = str(sandbox.get("type") or sandbox.get("sandboxType") or "")
    if kind.upper() != "GVISOR":
        yield (
            f"Node pool {ctx.name} does not run GKE Sandbox; set "
            "nodeConfig.sandboxConfig.type to GVISOR."
        )


HOST_ISOLATION = ResourceRule(
    Rule(
        id="SBX-K8S-005",
        title="Sandbox pods share nothing with the host",
        severity=Severity.HIGH,
        description="Prohibits host network, PID and IPC namespaces, host ports and hostPath "
        "volumes in sandbox pods.",
        remediation="Set hostNetwork, hostPID and hostIPC to false and use emptyDir volumes only.",
    )
)


@HOST_ISOLATION.on(*SANDBOX_POD_KINDS)
def _host(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    spec = sandbox_pod_spec(props)
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            yield f"{ctx.name} sets {field}: true; set it to false."
    for volume in items(spec.get("volumes")):
        if isinstance(volume, Mapping) and "hostPath" in volume:
            yield (f"{ctx.name} mounts hostPath volume {volume.get('name')}; use an emptyDir.")
    for container in containers_of(spec):
        for port in items(container.get("ports")):
            if isinstance(port, Mapping) and port.get("hostPort"):
                yield f"{ctx.name} binds host port {number(port.get('hostPort'))}; remove hostPort."


SECCOMP = ResourceRule(
    Rule(
        id="SBX-K8S-006",
        title="Sandbox pods use a seccomp profile",
        severity=Severity.MEDIUM,
        description="Checks that sandbox pods run with the RuntimeDefault (or a Localhost) "
        "seccomp profile.",
        remediation="Set securityContext.seccompProfile.type to RuntimeDefault on the pod.",
    )
)


@SECCOMP.on(*SANDBOX_POD_KINDS)
def _seccomp(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    pod = dig(sandbox_pod_spec(props), "securityContext.seccompProfile.type")
    for name, security in _each_container(props):
        kind = dig(security, "seccompProfile.type", pod)
        if kind not in ("RuntimeDefault", "Localhost"):
            yield (
                f"Container {name} of {ctx.name} runs with seccomp profile {kind}; set "
                "securityContext.seccompProfile.type to RuntimeDefault."
            )


RESTRICTED_NAMESPACE = ResourceRule(
    Rule(
        id="SBX-K8S-007",
        title="Sandbox namespaces enforce Pod Security restricted",
        severity=Severity.MEDIUM,
        description="Checks that namespaces the kit creates enforce the Pod Security "
        "Standard restricted, so no pod there can drop the walls.",
        remediation="Label the namespace pod-security.kubernetes.io/enforce: restricted.",
    )
)


@RESTRICTED_NAMESPACE.on("kubernetes:core/v1:Namespace")
def _pss(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if target_of(props) is None:
        return
    level = dig(props, "metadata.labels", {}).get("pod-security.kubernetes.io/enforce")
    if level != "restricted":
        yield (
            f"Namespace {ctx.name} enforces Pod Security level {level}; label it "
            "pod-security.kubernetes.io/enforce: restricted."
        )


CLAIMS_LOCKED = ResourceRule(
    Rule(
        id="SBX-K8S-008",
        title="Sandbox claims cannot inject environment or volumes",
        severity=Severity.MEDIUM,
        description="Checks that SandboxTemplates disallow environment variables and volume "
        "claim templates supplied by claims, so a caller cannot change what a sandbox sees.",
        remediation="Set envVarsInjectionPolicy and volumeClaimTemplatesPolicy to Disallowed.",
    )
)


@CLAIMS_LOCKED.on("kubernetes:*:SandboxTemplate")
def _claims(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for field in ("envVarsInjectionPolicy", "volumeClaimTemplatesPolicy"):
        value = dig(props, f"spec.{field}")
        if value != "Disallowed":
            yield f"SandboxTemplate {ctx.name} sets {field} {value}; set it to Disallowed."


RULES = [
    READ_ONLY_ROOT,
    NO_CAPABILITIES,
    NON_ROOT,
    SANDBOXED_RUNTIME,
    HOST_ISOLATION,
    SECCOMP,
    RESTRICTED_NAMESPACE,
    CLAIMS_LOCKED,
]
