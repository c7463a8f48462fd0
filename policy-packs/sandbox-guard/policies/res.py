"""RES: every sandbox is bounded in CPU, memory, time and number."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import Severity

from sandboxkit.contract import (
    EXEC_TIMEOUT_BINDING,
    IDLE_TIMEOUT_BINDING,
    LAUNCHER_EXEC_TIMEOUT_SECONDS,
    LAUNCHER_IDLE_TIMEOUT_SECONDS,
    LAUNCHER_MAX_DURATION_SECONDS,
    MAX_LIFETIME_BINDING,
)
from sandboxkit.guard import (
    SANDBOX_POD_KINDS,
    containers_of,
    dig,
    items,
    launcher_env,
    number,
    plain_bindings,
    sandbox_pod_spec,
    target_of,
)

from ._common import WORKERS_SCRIPT, Context, ResourceRule, Rule, StackRule, kit_cap

_BINARY = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
_DECIMAL = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def cpu_of(value: Any) -> float | None:
    """vCPU of a Kubernetes/Cloud Run/Azure CPU value (``500m``, ``2``, ``0.5``)."""
    text = str(value)
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return None


def mib_of(value: Any) -> float | None:
    """MiB of a memory quantity (``512Mi``, ``2Gi``, ``1G``, ``250Mb``, bytes)."""
    match = re.fullmatch(r"([0-9.]+)\s*([KMGT]i|[kMGT])?[bB]?", str(value).strip())
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2)
    if unit in _BINARY:
        return number * _BINARY[unit]
    return number * _DECIMAL.get(unit or "", 1) / (1024 * 1024)


def seconds_of(value: Any) -> float | None:
    """The number in a number or a duration text such as ``300s`` (also counts like ``"60"``)."""
    text = str(value).removesuffix("s")
    try:
        return float(text)
    except ValueError:
        return None


SIZE_LIMITS = ResourceRule(
    Rule(
        id="SBX-RES-001",
        title="Every sandbox has CPU and memory limits within bounds",
        severity=Severity.HIGH,
        description="Checks that every sandbox container sets CPU and memory limits, no larger "
        "than the organisation's maximum per sandbox.",
        remediation="Set sandboxkit:profile.limits.vcpu and memoryMiB within the pack's "
        "maxVcpu and maxMemoryMiB and keep the kit's container limits.",
        properties={
            "maxVcpu": {"type": "number", "default": 8, "description": "vCPU per sandbox."},
            "maxMemoryMiB": {
                "type": "number",
                "default": 32768,
                "description": "MiB per sandbox.",
            },
        },
    )
)


def _size_problems(kind: str, name: str, cpu: Any, memory: Any, ctx: Context) -> Iterator[str]:
    vcpu, mib = cpu_of(cpu) if cpu is not None else None, None
    if memory is not None:
        mib = mib_of(memory)
    if vcpu is None:
        yield f"{kind} {name} sets no CPU limit; set one from sandboxkit:profile.limits.vcpu."
    elif vcpu > ctx.setting("maxVcpu"):
        yield (
            f"{kind} {name} allows {number(vcpu)} vCPU, above the maximum of "
            f"{number(ctx.setting('maxVcpu'))}; lower sandboxkit:profile.limits.vcpu."
        )
    if mib is None:
        yield (
            f"{kind} {name} sets no memory limit; set one from sandboxkit:profile.limits.memoryMiB."
        )
    elif mib > ctx.setting("maxMemoryMiB"):
        yield (
            f"{kind} {name} allows {number(mib)} MiB, above the maximum of "
            f"{number(ctx.setting('maxMemoryMiB'))}; lower sandboxkit:profile.limits.memoryMiB."
        )


@SIZE_LIMITS.on(*SANDBOX_POD_KINDS)
def _pod_limits(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for container in containers_of(sandbox_pod_spec(props)):
        limits = dig(container, "resources.limits", {}) or {}
        label = f"{ctx.name} container {container.get('name')}"
        yield from _size_problems(
            "SandboxTemplate", label, limits.get("cpu"), limits.get("memory"), ctx
        )


@SIZE_LIMITS.on("gcp:cloudrunv2/service:Service")
def _cloud_run_limits(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for container in items(dig(props, "template.containers")):
        limits = dig(container, "resources.limits", {}) or {}
        label = f"{ctx.name} container {dig(container, 'name')}"
        yield from _size_problems(
            "Cloud Run service", label, limits.get("cpu"), limits.get("memory"), ctx
        )


@SIZE_LIMITS.on("azure-native:app:ContainerAppsSessionPool")
def _pool_limits(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for container in items(dig(props, "customContainerTemplate.containers")):
        resources = dig(container, "resources", {}) or {}
        label = f"{ctx.name} container {dig(container, 'name')}"
        yield from _size_problems(
            "Session pool", label, resources.get("cpu"), resources.get("memory"), ctx
        )


TIME_LIMITS = ResourceRule(
    Rule(
        id="SBX-RES-002",
        title="Every sandbox has lifetime and timeout limits within caps",
        severity=Severity.HIGH,
        description="Checks that every sandbox has a hard lifetime (and, where the platform "
        "has one, an idle or request timeout) no longer than the organisation's maximum and "
        "the target's own cap.",
        remediation="Set sandboxkit:profile.limits.maxLifetimeSeconds (and idleTimeoutSeconds) "
        "within the pack's maxLifetimeSeconds and the target's cap.",
        properties={
            "maxLifetimeSeconds": {
                "type": "integer",
                "default": 28800,
                "description": "Longest a sandbox may live, seconds.",
            }
        },
    )
)


def _bounded(ctx: Context, label: str, field: str, value: Any, key: str) -> Iterator[str]:
    """Violations of ``label``'s ``field`` (seconds) against the pack maximum and the kit's cap
    for profile field ``limits.<key>`` on the resource's target."""
    seconds = seconds_of(value) if value is not None else None
    if seconds is None:
        yield f"{label} has no {field}; set it from sandboxkit:profile.limits.{key}."
        return
    limit = ctx.setting("maxLifetimeSeconds")
    if seconds > limit:
        yield (
            f"{label} sets {field} to {number(seconds)} s, above the maximum of {number(limit)} s; "
            f"lower sandboxkit:profile.limits.{key}."
        )
    cap = kit_cap(ctx.target, f"limits.{key}")
    if cap is not None and not cap.admits(seconds):
        yield (
            f"{label} sets {field} to {number(seconds)} s; target {ctx.target} accepts "
            f"{cap.describe()} (source: {cap.source}). Set sandboxkit:profile.limits.{key} "
            "within it."
        )


@TIME_LIMITS.on(*SANDBOX_POD_KINDS)
def _pod_deadline(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    deadline = sandbox_pod_spec(props).get("activeDeadlineSeconds")
    label = f"SandboxTemplate {ctx.name}"
    yield from _bounded(ctx, label, "activeDeadlineSeconds", deadline, "maxLifetimeSeconds")


@TIME_LIMITS.on("gcp:cloudrunv2/service:Service")
def _cloud_run_timeout(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    # The request timeout bounds each sandbox run the launcher serves (gcp-cloudrun's map).
    timeout = dig(props, "template.timeout")
    label = f"Cloud Run service {ctx.name}"
    yield from _bounded(ctx, label, "template.timeout", timeout, "execTimeoutSeconds")


@TIME_LIMITS.on("azure-native:app:ContainerAppsSessionPool")
def _pool_lifecycle(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    lifecycle = dig(props, "dynamicPoolConfiguration.lifecycleConfiguration", {}) or {}
    label = f"Session pool {ctx.name}"
    if lifecycle.get("lifecycleType") == "Timed":
        field, key = "cooldownPeriodInSeconds", "idleTimeoutSeconds"
    else:
        field, key = "maxAlivePeriodInSeconds", "maxLifetimeSeconds"
    yield from _bounded(ctx, label, field, lifecycle.get(field), key)


@TIME_LIMITS.on("aws:lambda/function:Function")
def _launcher_limits(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    variables = launcher_env(props)
    if variables is None:
        return
    label = f"Launcher function {ctx.name}"
    for variable, key in (
        (LAUNCHER_MAX_DURATION_SECONDS, "maxLifetimeSeconds"),
        (LAUNCHER_IDLE_TIMEOUT_SECONDS, "idleTimeoutSeconds"),
        (LAUNCHER_EXEC_TIMEOUT_SECONDS, "execTimeoutSeconds"),
    ):
        yield from _bounded(ctx, label, variable, variables.get(variable), key)


@TIME_LIMITS.on(WORKERS_SCRIPT)
def _worker_limits(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    bindings = plain_bindings(props)
    label = f"Worker {ctx.name}"
    for binding, key in (
        (MAX_LIFETIME_BINDING, "maxLifetimeSeconds"),
        (IDLE_TIMEOUT_BINDING, "idleTimeoutSeconds"),
        (EXEC_TIMEOUT_BINDING, "execTimeoutSeconds"),
    ):
        yield from _bounded(ctx, label, f"binding {binding}", bindings.get(binding), key)


BOUNDED_POOLS = ResourceRule(
    Rule(
        id="SBX-RES-003",
        title="Sandbox pools are bounded",
        severity=Severity.MEDIUM,
        description="Checks that the number of sandboxes that can run at once, and the warm "
        "pool, have an upper bound no larger than the organisation's maximum.",
        remediation="Set sandboxkit:profile.pool.maxConcurrent and ready within the pack's "
        "maxConcurrentSandboxes and maxReadySandboxes.",
        properties={
            "maxConcurrentSandboxes": {
                "type": "integer",
                "default": 1000,
                "description": "Most sandboxes at once per pool.",
            },
            "maxReadySandboxes": {
                "type": "integer",
                "default": 100,
                "description": "Most warm sandboxes per pool.",
            },
        },
    )
)


def _count(label: str, field: str, value: Any, limit: float, key: str) -> Iterator[str]:
    count = seconds_of(value) if value is not None else None
    if count is None:
        yield f"{label} has no {field}, so the pool is unbounded; set it."
    elif count > limit:
        yield (
            f"{label} sets {field} to {number(count)}, above the maximum of {number(limit)}; lower "
            f"sandboxkit:profile.pool.{key}."
        )


@BOUNDED_POOLS.on("kubernetes:core/v1:ResourceQuota")
def _quota_pods(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if target_of(props) is None:
        return
    yield from _count(
        f"ResourceQuota {ctx.name}",
        "spec.hard.pods",
        dig(props, "spec.hard.pods"),
        ctx.setting("maxConcurrentSandboxes"),
        "maxConcurrent",
    )


@BOUNDED_POOLS.on("kubernetes:*:SandboxWarmPool")
def _warm_pool(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    yield from _count(
        f"SandboxWarmPool {ctx.name}",
        "spec.replicas",
        dig(props, "spec.replicas"),
        ctx.setting("maxReadySandboxes"),
        "ready",
    )


@BOUNDED_POOLS.on("azure-native:app:ContainerAppsSessionPool")
def _pool_scale(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    scale = dig(props, "scaleConfiguration", {}) or {}
    yield from _count(
        f"Session pool {ctx.name}",
        "maxConcurrentSessions",
        scale.get("maxConcurrentSessions"),
        ctx.setting("maxConcurrentSandboxes"),
        "maxConcurrent",
    )
    yield from _count(
        f"Session pool {ctx.name}",
        "readySessionInstances",
        scale.get("readySessionInstances", 0),
        ctx.setting("maxReadySandboxes"),
        "ready",
    )


@BOUNDED_POOLS.on("gcp:cloudrunv2/service:Service")
def _cloud_run_scale(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    yield from _count(
        f"Cloud Run service {ctx.name}",
        "template.scaling.maxInstanceCount",
        dig(props, "template.scaling.maxInstanceCount"),
        ctx.setting("maxConcurrentSandboxes"),
        "maxConcurrent",
    )


@BOUNDED_POOLS.on("aws:lambda/function:Function")
def _launcher_concurrency(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if launcher_env(props) is None:
        return
    yield from _count(
        f"Launcher function {ctx.name}",
        "reservedConcurrentExecutions",
        props.get("reservedConcurrentExecutions"),
        ctx.setting("maxConcurrentSandboxes"),
        "maxConcurrent",
    )


def _quota_per_namespace(resources: Sequence[Any], ctx: Context) -> Iterator[tuple[str, Any]]:
    # Keyed by target (cluster) and namespace: two targets may use the same namespace name.
    quotas = {
        (target_of(r.props), dig(r.props, "metadata.namespace"))
        for r in resources
        if r.resource_type == "kubernetes:core/v1:ResourceQuota" and dig(r.props, "spec.hard.pods")
    }
    for r in resources:
        if r.resource_type.endswith(":SandboxTemplate"):
            namespace = dig(r.props, "metadata.namespace")
            if (target_of(r.props), namespace) not in quotas:
                yield (
                    f"SandboxTemplate {r.name} runs in namespace {namespace}, which has no "
                    "ResourceQuota bounding its pods; keep the kit's quota alongside it.",
                    r.urn,
                )


QUOTA_ATTACHED = StackRule(
    Rule(
        id="SBX-RES-004",
        title="Every sandbox namespace has a pod quota",
        severity=Severity.MEDIUM,
        description="Checks that every namespace holding a SandboxTemplate has a ResourceQuota "
        "that bounds its pods, so claims cannot grow without limit.",
        remediation="Deploy the kit's ResourceQuota (pods = maxConcurrent + ready) in each "
        "sandbox namespace.",
    ),
    _quota_per_namespace,
)

RULES = [SIZE_LIMITS, TIME_LIMITS, BOUNDED_POOLS, QUOTA_ATTACHED]
