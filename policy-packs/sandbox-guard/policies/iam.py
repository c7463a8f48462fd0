"""IAM: what sandbox identities may do, and who may reach sandboxes."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import Severity

from sandboxkit.contract import LAUNCHER_EXECUTION_ROLE_ARN
from sandboxkit.guard import SANDBOX_POD_KINDS, dig, items, launcher_env, sandbox_pod_spec

from ._common import Context, ResourceRule, Rule

# AWS managed policies that amount to administrator rights.
AWS_ADMIN_POLICIES = ("AdministratorAccess", "PowerUserAccess", "IAMFullAccess")
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
KUBERNETES_ADMIN_ROLES = ("cluster-admin", "admin", "edit")
GCP_PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
GCP_BASIC_ROLES = ("roles/owner", "roles/editor")
_ZERO_GUID = "00000000-0000-0000-0000-000000000000"

LEAST_PRIVILEGE = ResourceRule(
    Rule(
        id="SBX-IAM-001",
        title="No admin, owner, editor or wildcard permissions",
        severity=Severity.CRITICAL,
        description="Prohibits admin, owner, editor and wildcard grants to the identities the "
        "kit creates (IAM policies, role bindings and role assignments).",
        remediation="Grant only the named actions on the named resources the sandbox launcher "
        "needs; never a wildcard action or an administrator role.",
    )
)


def _statements(document: Any) -> list[Mapping[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    if not isinstance(document, Mapping):
        return []
    statements = document.get("Statement", [])
    if isinstance(statements, Mapping):
        return [statements]
    return [s for s in items(statements) if isinstance(s, Mapping)]


def _wildcard_actions(document: Any) -> list[str]:
    found: list[str] = []
    for statement in _statements(document):
        if statement.get("Effect", "Allow") != "Allow":
            continue
        if "NotAction" in statement:
            found.append("NotAction")
        actions = statement.get("Action", [])
        for action in [actions] if isinstance(actions, str) else items(actions):
            # IAM matches * and ? anywhere: "s3:Get*" and "iam:?ut*" grant families too.
            if "*" in str(action) or "?" in str(action):
                found.append(str(action))
    return found


@LEAST_PRIVILEGE.on("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy")
def _aws_policy_document(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    wild = _wildcard_actions(props.get("policy"))
    if wild:
        yield (
            f"IAM policy {ctx.name} allows {', '.join(wild)}; list the exact actions the role "
            "needs instead of a wildcard."
        )


def _admin_arns(arns: Any) -> list[str]:
    return [str(a) for a in items(arns) if str(a).rsplit("/", 1)[-1] in AWS_ADMIN_POLICIES]


@LEAST_PRIVILEGE.on("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
def _aws_attachment(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for arn in _admin_arns([props.get("policyArn")]):
        yield f"{ctx.name} attaches {arn}; attach a policy with only the actions the role needs."


@LEAST_PRIVILEGE.on("aws:iam/role:Role")
def _aws_role(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for arn in _admin_arns(props.get("managedPolicyArns")):
        yield f"Role {ctx.name} carries {arn}; attach a policy with only the actions it needs."
    for inline in items(props.get("inlinePolicies")):
        wild = _wildcard_actions(dig(inline, "policy"))
        if wild:
            yield (
                f"Role {ctx.name} has an inline policy allowing {', '.join(wild)}; list the "
                "exact actions instead of a wildcard."
            )


_GCP_IAM_TYPES = (
    "gcp:projects/iAMMember:IAMMember",
    "gcp:projects/iAMBinding:IAMBinding",
    "gcp:serviceaccount/iAMMember:IAMMember",
    "gcp:serviceaccount/iAMBinding:IAMBinding",
    "gcp:cloudrunv2/serviceIamMember:ServiceIamMember",
    "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding",
)


@LEAST_PRIVILEGE.on(*_GCP_IAM_TYPES)
def _gcp_role(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    role = str(props.get("role", ""))
    if role in GCP_BASIC_ROLES or role.lower().endswith("admin"):
        yield f"IAM grant {ctx.name} gives {role}; grant the narrowest predefined role instead."


@LEAST_PRIVILEGE.on("azure-native:authorization:RoleAssignment")
def _azure_role(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    role_id = str(props.get("roleDefinitionId", "")).rsplit("/", 1)[-1].lower()
    if role_id in AZURE_ADMIN_ROLES:
        yield (
            f"Role assignment {ctx.name} grants {AZURE_ADMIN_ROLES[role_id]}; assign the "
            "narrowest built-in role (e.g. Azure ContainerApps Session Executor) instead."
        )


@LEAST_PRIVILEGE.on("kubernetes:*:RoleBinding", "kubernetes:*:ClusterRoleBinding")
def _k8s_binding(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    role = dig(props, "roleRef.name")
    if role in KUBERNETES_ADMIN_ROLES:
        yield f"{ctx.name} binds {role}; bind a Role with only the verbs and resources needed."


@LEAST_PRIVILEGE.on("kubernetes:*:Role", "kubernetes:*:ClusterRole")
def _k8s_role(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for rule in items(props.get("rules")):
        for key in ("verbs", "resources", "apiGroups"):
            if "*" in items(dig(rule, key)):
                yield f"Role {ctx.name} allows '*' {key}; list them explicitly."


NO_GUEST_IDENTITY = ResourceRule(
    Rule(
        id="SBX-IAM-002",
        title="No guest-visible identity without an explicit override",
        severity=Severity.HIGH,
        description="Prohibits credentials that sandbox code can read: mounted service-account "
        "tokens, session-pool managed identities available to session code, GKE nodes without "
        "the GKE metadata server, MicroVM execution roles, unless the resource is named in the "
        "policy's allowedGuestIdentities.",
        remediation="Give sandboxes no identity; if one is truly needed, grant it least "
        "privilege and name the resource in the pack config's allowedGuestIdentities.",
        properties={
            "allowedGuestIdentities": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Logical names of resources allowed to expose an identity to "
                "sandbox code (an explicit, reviewed override).",
            }
        },
    )
)


def _overridden(ctx: Context) -> bool:
    return ctx.name in ctx.setting("allowedGuestIdentities")


@NO_GUEST_IDENTITY.on(*SANDBOX_POD_KINDS)
def _token_mounted(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if sandbox_pod_spec(props).get("automountServiceAccountToken") is not False:
        if _overridden(ctx):
            return
        yield (
            f"{ctx.name} mounts a service-account token into sandbox pods; set "
            "automountServiceAccountToken to false."
        )


@NO_GUEST_IDENTITY.on("azure-native:app:ContainerAppsSessionPool")
def _pool_identity(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for setting in items(props.get("managedIdentitySettings")):
        lifecycle = dig(setting, "lifecycle", "All")
        if lifecycle in ("Main", "All") and not _overridden(ctx):
            yield (
                f"Session pool {ctx.name} makes managed identity {dig(setting, 'identity')} "
                f"available with lifecycle {lifecycle}, so session code can use it; set "
                "lifecycle to Init or None."
            )


@NO_GUEST_IDENTITY.on("gcp:container/nodePool:NodePool")
def _gke_metadata(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    mode = dig(props, "nodeConfig.workloadMetadataConfig.mode")
    if mode != "GKE_METADATA" and not _overridden(ctx):
        yield (
            f"Node pool {ctx.name} has workload metadata mode {mode}, so pods can read the "
            "node's credentials; set nodeConfig.workloadMetadataConfig.mode to GKE_METADATA."
        )


@NO_GUEST_IDENTITY.on("aws:iam/rolePolicy:RolePolicy")
def _pass_role(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for statement in _statements(props.get("policy")):
        actions = statement.get("Action", [])
        actions = [actions] if isinstance(actions, str) else items(actions)
        if "iam:PassRole" in actions and not _overridden(ctx):
            yield (
                f"IAM policy {ctx.name} lets the launcher pass an execution role to MicroVMs, "
                "which the guest can read; run MicroVMs without one or name this resource in "
                "allowedGuestIdentities."
            )


@NO_GUEST_IDENTITY.on("aws:lambda/function:Function")
def _execution_role(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    variables = launcher_env(props) or {}
    if variables.get(LAUNCHER_EXECUTION_ROLE_ARN) and not _overridden(ctx):
        yield (
            f"Launcher function {ctx.name} starts MicroVMs with an execution role, whose "
            "credentials the guest reads through IMDSv2; remove the role, or name this resource "
            "in allowedGuestIdentities after granting it least privilege."
        )


NO_PUBLIC_INVOKER = ResourceRule(
    Rule(
        id="SBX-IAM-003",
        title="Cloud Run has no public invoker",
        severity=Severity.CRITICAL,
        description="Prohibits allUsers or allAuthenticatedUsers on Cloud Run services and "
        "turning off the invoker IAM check.",
        remediation="Grant roles/run.invoker to the named caller service account only, and "
        "keep invokerIamDisabled false.",
    )
)


@NO_PUBLIC_INVOKER.on("gcp:cloudrunv2/service:Service")
def _invoker_check_off(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if props.get("invokerIamDisabled") is True:
        yield (
            f"Cloud Run service {ctx.name} disables the invoker IAM check, so anyone can call "
            "it; set invokerIamDisabled to false."
        )


@NO_PUBLIC_INVOKER.on(
    "gcp:cloudrunv2/serviceIamMember:ServiceIamMember",
    "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding",
)
def _public_member(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    members = [props.get("member"), *items(props.get("members"))]
    public = [m for m in members if m in GCP_PUBLIC_MEMBERS]
    if public:
        yield (
            f"{ctx.name} grants {props.get('role')} to {public[0]}; grant it to the named "
            "caller service account only."
        )


EXECUTOR_NAMED = ResourceRule(
    Rule(
        id="SBX-IAM-004",
        title="Session pools grant the executor role to named principals on the pool only",
        severity=Severity.HIGH,
        description="Checks that the Azure ContainerApps Session Executor role is assigned to "
        "a named principal and scoped to one session pool, not a resource group or "
        "subscription.",
        remediation="Assign the Session Executor role to the caller's own principal id with "
        "the session pool's resource id as scope.",
    )
)


@EXECUTOR_NAMED.on("azure-native:authorization:RoleAssignment")
def _executor_scope(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    role_id = str(props.get("roleDefinitionId", "")).rsplit("/", 1)[-1].lower()
    if role_id != AZURE_SESSION_EXECUTOR:
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
            f"Role assignment {ctx.name} grants Session Executor without a named principal; "
            "set principalId to the caller's identity."
        )


RULES = [LEAST_PRIVILEGE, NO_GUEST_IDENTITY, NO_PUBLIC_INVOKER, EXECUTOR_NAMED]
