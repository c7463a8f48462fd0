"""The sandbox-guard checks of what the azure-sessions target creates: the session pool, its
role assignments and its Log Analytics workspace."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sandboxkit.azure.type_tokens import (
    MANAGED_ENVIRONMENT,
    ROLE_ASSIGNMENT,
    SESSION_POOL,
    WORKSPACE,
)
from sandboxkit.guard import (
    CheckContext,
    Handler,
    SecretSink,
    StackHandler,
    StackResource,
    dig,
    items,
    of_kind,
)
from sandboxkit.guard_checks import (
    container_size_problems,
    count_problems,
    identity_allowed,
    inline_secrets,
    listed_variables,
    retention_problems,
    target_setting,
    time_problems,
    unpinned_images,
)
from sandboxkit.policy_rules import (
    AUDIT_LOGS,
    BOUNDED_POOLS,
    DIGEST_PINNED,
    EGRESS_CLOSED,
    EXECUTOR_NAMED,
    LEAST_PRIVILEGE,
    NO_GUEST_IDENTITY,
    PLAINTEXT_ENV,
    RETENTION,
    SIZE_LIMITS,
    TIME_LIMITS,
)

# Azure built-in role definition ids (stable across tenants): Owner, Contributor,
# User Access Administrator, Role Based Access Control Administrator.
AZURE_ADMIN_ROLES = {
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635": "Owner",
    "b24988ac-6180-42a0-ab88-20f7382dd24c": "Contributor",
    "18d7d88d-d35e-4fb5-a5c3-7773c6a72a9b": "User Access Administrator",
    "f58310d9-a9f6-439a-9e8d-f62e7b41a168": "Role Based Access Control Administrator",
}
# "Azure ContainerApps Session Executor" built-in role.
AZURE_SESSION_EXECUTOR = "0fb8eba5-a2bb-4abe-b1c1-49dfad359bb0"
_ZERO_GUID = "00000000-0000-0000-0000-000000000000"


# --- SBX-NET-001 -------------------------------------------------------------------------------


def _pool_egress(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    status = dig(props, "sessionNetworkConfiguration.status")
    if status != "EgressDisabled":
        yield (
            f"Session pool {ctx.name} has sessionNetworkConfiguration.status {status}; set it "
            "to EgressDisabled (sandboxkit:profile.egress.mode deny): the pool cannot filter "
            "by host."
        )


# --- SBX-IAM-001 -------------------------------------------------------------------------------


def _role_id(props: Mapping[str, Any]) -> str:
    return str(props.get("roleDefinitionId", "")).rsplit("/", 1)[-1].lower()


def _admin_role(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    role_id = _role_id(props)
    if role_id in AZURE_ADMIN_ROLES:
        yield (
            f"Role assignment {ctx.name} grants {AZURE_ADMIN_ROLES[role_id]}; assign the "
            "narrowest built-in role (e.g. Azure ContainerApps Session Executor) instead."
        )


# --- SBX-IAM-002 -------------------------------------------------------------------------------


def _pool_identity(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for setting in items(props.get("managedIdentitySettings")):
        lifecycle = dig(setting, "lifecycle", "All")
        if lifecycle in ("Main", "All") and not identity_allowed(ctx):
            yield (
                f"Session pool {ctx.name} makes managed identity {dig(setting, 'identity')} "
                f"available with lifecycle {lifecycle}, so session code can use it; set "
                "lifecycle to Init or None."
            )


# --- SBX-IAM-004 -------------------------------------------------------------------------------


def _executor_scope(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if _role_id(props) != AZURE_SESSION_EXECUTOR:
        return
    scope = str(props.get("scope", ""))
    if "/sessionpools/" not in scope.lower():
        yield (
            f"Role assignment {ctx.name} grants Session Executor at scope {scope}, wider than "
            "one session pool; scope it to the pool's resource id."
        )
    principal = str(props.get("principalId", ""))
    if not principal or principal == _ZERO_GUID:
        yield (
            f"Role assignment {ctx.name} grants Session Executor without a named principal "
            f"(principalId {principal or 'empty'}); set the executor's principalId in "
            "sandboxkit:azure-sessions.executors to the caller's own Entra object id."
        )


# --- SBX-RES-001..003 --------------------------------------------------------------------------


def _pool_limits(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    containers = items(dig(props, "customContainerTemplate.containers"))
    yield from container_size_problems("Session pool", containers, "resources", ctx)


def _pool_lifecycle(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    lifecycle = dig(props, "dynamicPoolConfiguration.lifecycleConfiguration", {}) or {}
    label = f"Session pool {ctx.name}"
    if lifecycle.get("lifecycleType") == "Timed":
        field, key = "cooldownPeriodInSeconds", "idleTimeoutSeconds"
    else:
        field, key = "maxAlivePeriodInSeconds", "maxLifetimeSeconds"
    yield from time_problems(ctx, label, field, lifecycle.get(field), key)


def _pool_scale(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    scale = dig(props, "scaleConfiguration", {}) or {}
    yield from count_problems(
        f"Session pool {ctx.name}",
        "maxConcurrentSessions",
        scale.get("maxConcurrentSessions"),
        ctx.setting("maxConcurrentSandboxes"),
        "maxConcurrent",
    )
    yield from count_problems(
        f"Session pool {ctx.name}",
        "readySessionInstances",
        scale.get("readySessionInstances", 0),
        ctx.setting("maxReadySandboxes"),
        "ready",
    )


# --- SBX-LOG-001, SBX-LOG-002 ------------------------------------------------------------------


def _workspace(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    yield from retention_problems(
        "Log Analytics workspace", ctx.name, props.get("retentionInDays"), ctx, False
    )


def _pools_without_workspace(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    workspaces = of_kind(resources, WORKSPACE)
    for pool in of_kind(resources, SESSION_POOL):
        if not workspaces:
            yield (
                f"Session pool {pool.name} has no Log Analytics workspace in the stack; send "
                "the environment's logs to one.",
                pool.urn,
            )


# --- SBX-SEC-001, SBX-SEC-003 ------------------------------------------------------------------


def _pool_env(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for container in items(dig(props, "customContainerTemplate.containers")):
        variables = listed_variables(dig(container, "env"))
        yield from inline_secrets("Session pool", ctx.name, variables, ctx)


def _pool_images(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    containers = items(dig(props, "customContainerTemplate.containers"))
    images = [dig(c, "image") for c in containers]
    yield from unpinned_images("Session pool", ctx.name, images, target_setting(ctx, "image"))


# The pool's secrets and the environment's log configuration (the workspace's shared key) hold
# secrets: SBX-SEC-002 does not read them.
SECRET_SINKS = (
    SecretSink(SESSION_POOL, ("secrets",)),
    SecretSink(MANAGED_ENVIRONMENT, ("appLogsConfiguration",)),
)

HANDLERS = (
    Handler(
        EGRESS_CLOSED,
        (SESSION_POOL,),
        _pool_egress,
        "session pools: sessionNetworkConfiguration EgressDisabled",
    ),
    Handler(
        LEAST_PRIVILEGE,
        (ROLE_ASSIGNMENT,),
        _admin_role,
        "role assignments: no Owner, Contributor or other admin role",
    ),
    Handler(
        NO_GUEST_IDENTITY,
        (SESSION_POOL,),
        _pool_identity,
        "session pools: managed identities not available to session code (lifecycle Main or All)",
    ),
    Handler(
        EXECUTOR_NAMED,
        (ROLE_ASSIGNMENT,),
        _executor_scope,
        "Session Executor role assignments: a named principal, one pool",
    ),
    Handler(SIZE_LIMITS, (SESSION_POOL,), _pool_limits, "session pools: container CPU and memory"),
    Handler(
        TIME_LIMITS,
        (SESSION_POOL,),
        _pool_lifecycle,
        "session pools: cooldown and maximum session lifetime",
    ),
    Handler(
        BOUNDED_POOLS,
        (SESSION_POOL,),
        _pool_scale,
        "session pools: maxConcurrentSessions and readySessionInstances",
    ),
    Handler(RETENTION, (WORKSPACE,), _workspace, "Log Analytics workspaces: retentionInDays"),
    StackHandler(
        AUDIT_LOGS, _pools_without_workspace, "each session pool: a Log Analytics workspace"
    ),
    Handler(
        PLAINTEXT_ENV,
        (SESSION_POOL,),
        _pool_env,
        "session pools: plain container environment variables",
    ),
    Handler(DIGEST_PINNED, (SESSION_POOL,), _pool_images, "session pools: custom container images"),
)
