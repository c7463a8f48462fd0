"""The walls of the kit's sandbox pods (SBX-K8S-*): what each container may do, what the pod
shares with its node, and what a claim may change. ``guard.py`` lists these handlers with the
folder's others."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sandboxkit.guard import (
    CheckContext,
    Handler,
    StackHandler,
    StackResource,
    containers_of,
    dig,
    items,
    labelled_target,
    number,
    of_kind,
    sandbox_pod_spec,
)
from sandboxkit.guard_checks import outside_the_stack
from sandboxkit.kubernetes.egress_reader import TARGET
from sandboxkit.kubernetes.type_tokens import (
    NAMESPACE,
    RUNTIME_CLASS,
    SANDBOX_POD_KINDS,
    SANDBOX_TEMPLATE,
)
from sandboxkit.policy_rules import (
    CLAIMS_LOCKED,
    HOST_ISOLATION,
    NO_CAPABILITIES,
    NON_ROOT,
    OUTSIDE_THE_STACK,
    READ_ONLY_ROOT,
    RESTRICTED_NAMESPACE,
    SANDBOXED_RUNTIME,
    SECCOMP,
)


def made_per_target(
    resources: Iterable[StackResource], path: str = "metadata.name"
) -> set[tuple[str | None, Any]]:
    """``(target, the value at path)`` of each resource, the target read from the kit's label:
    what each target's component made, by name (two targets may use the same name)."""
    return {(labelled_target(r.props), dig(r.props, path)) for r in resources}


def _each_container(props: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for container in containers_of(sandbox_pod_spec(props)):
        yield str(container.get("name")), dig(container, "securityContext", {}) or {}


def _read_only(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for name, security in _each_container(props):
        if security.get("readOnlyRootFilesystem") is not True:
            yield (
                f"Container {name} of {ctx.name} has a writable root filesystem; set "
                "securityContext.readOnlyRootFilesystem to true."
            )


def _capabilities(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
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


def _non_root(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
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


def _runtime_class(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    runtime = sandbox_pod_spec(props).get("runtimeClassName")
    allowed = list(ctx.setting("allowedRuntimeClasses"))
    if runtime not in allowed:
        # The kubernetes target takes the class from its settings; gcp-gke's is GKE's gvisor.
        where = (
            "sandboxkit:kubernetes.runtimeClass.name (the pods' runtimeClassName)"
            if ctx.target == "kubernetes"
            else "runtimeClassName"
        )
        yield (
            f"{ctx.name} runs sandbox pods with runtime class {runtime}, which shares the "
            f"host kernel; set {where} to one of {', '.join(allowed)}."
        )


def _host(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
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


def _seccomp(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    pod = dig(sandbox_pod_spec(props), "securityContext.seccompProfile.type")
    for name, security in _each_container(props):
        kind = dig(security, "seccompProfile.type", pod)
        if kind not in ("RuntimeDefault", "Localhost"):
            yield (
                f"Container {name} of {ctx.name} runs with seccomp profile {kind}; set "
                "securityContext.seccompProfile.type to RuntimeDefault."
            )


def _pod_security(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if labelled_target(props) is None:
        return
    level = dig(props, "metadata.labels", {}).get("pod-security.kubernetes.io/enforce")
    if level != "restricted":
        yield (
            f"Namespace {ctx.name} enforces Pod Security level {level}; label it "
            "pod-security.kubernetes.io/enforce: restricted."
        )


def _claims(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for field in ("envVarsInjectionPolicy", "volumeClaimTemplatesPolicy"):
        value = dig(props, f"spec.{field}")
        if value != "Disallowed":
            yield f"SandboxTemplate {ctx.name} sets {field} {value}; set it to Disallowed."


def _external_runtime_classes(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    # A class is created when the same target's component registered a RuntimeClass by that
    # name; otherwise its handler (runsc, kata, or runc) is the cluster's secret.
    created = made_per_target(of_kind(resources, RUNTIME_CLASS))
    for template in of_kind(resources, SANDBOX_TEMPLATE):
        # Only kubernetes makes the runtime class a setting; gcp-gke uses GKE's own ``gvisor``
        # class, which GKE installs with the GKE Sandbox node pools the stack creates and
        # SBX-K8S-004 checks.
        if labelled_target(template.props) != TARGET:
            continue
        name = sandbox_pod_spec(template.props).get("runtimeClassName")
        # No class at all is SBX-K8S-004's finding: the pod runs the node's default runtime.
        if not isinstance(name, str) or (TARGET, name) in created:
            continue
        message = outside_the_stack(
            ctx,
            f"RuntimeClass/{name}",
            f"the handler of RuntimeClass {name}, which SandboxTemplate {template.name} runs "
            "its sandbox pods under",
            "whether the class runs gVisor (runsc) or Kata Containers, or plain runc, which "
            "shares the node's kernel (SBX-K8S-004 checks only the name)",
            "set sandboxkit:kubernetes.runtimeClass.create to true so the kit creates the class "
            "with a sandboxed handler",
        )
        if message:
            yield message, template.urn


# What the gate checks on a namespace the stack creates, and so cannot on an existing one.
NAMESPACE_UNSEEN = (
    "whether it enforces Pod Security restricted (SBX-K8S-007) and which other "
    "NetworkPolicies it holds: policies are additive, so one that allows all egress there "
    "voids the kit's deny"
)


def _external_namespaces(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    # A namespace is created when the same target's component registered a Namespace by that
    # name; otherwise its labels and the other policies in it are the cluster's secret.
    created = made_per_target(of_kind(resources, NAMESPACE))
    reported: set[tuple[str | None, str]] = set()
    for template in of_kind(resources, SANDBOX_TEMPLATE):
        target, name = labelled_target(template.props), dig(template.props, "metadata.namespace")
        if not isinstance(name, str) or (target, name) in created or (target, name) in reported:
            continue
        reported.add((target, name))
        message = outside_the_stack(
            ctx,
            f"Namespace/{name}",
            f"namespace {name}, which SandboxTemplate {template.name} runs its sandbox pods in",
            NAMESPACE_UNSEEN,
            f"set sandboxkit:{target}.createNamespace to true so the kit creates it with Pod "
            "Security restricted",
        )
        if message:
            yield message, template.urn


HANDLERS = (
    Handler(READ_ONLY_ROOT, SANDBOX_POD_KINDS, _read_only, "sandbox pods: readOnlyRootFilesystem"),
    Handler(
        NO_CAPABILITIES, SANDBOX_POD_KINDS, _capabilities, "sandbox pods: capabilities drop ALL"
    ),
    Handler(
        NON_ROOT,
        SANDBOX_POD_KINDS,
        _non_root,
        "sandbox pods: runAsNonRoot, no privilege escalation, unprivileged",
    ),
    Handler(
        SANDBOXED_RUNTIME,
        SANDBOX_POD_KINDS,
        _runtime_class,
        "sandbox pods: a gVisor or Kata runtime class",
    ),
    Handler(
        HOST_ISOLATION, SANDBOX_POD_KINDS, _host, "sandbox pods: no host namespaces or hostPath"
    ),
    Handler(SECCOMP, SANDBOX_POD_KINDS, _seccomp, "sandbox pods: seccomp RuntimeDefault"),
    Handler(
        RESTRICTED_NAMESPACE,
        (NAMESPACE,),
        _pod_security,
        "sandbox namespaces: Pod Security restricted",
    ),
    Handler(
        CLAIMS_LOCKED,
        (SANDBOX_TEMPLATE,),
        _claims,
        "SandboxTemplates: claims cannot inject env or volumes",
    ),
    StackHandler(
        OUTSIDE_THE_STACK,
        _external_runtime_classes,
        "a RuntimeClass the stack uses but does not create",
    ),
    StackHandler(
        OUTSIDE_THE_STACK,
        _external_namespaces,
        "a sandbox namespace the stack uses but does not create",
    ),
)
