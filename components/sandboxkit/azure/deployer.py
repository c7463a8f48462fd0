"""What the identity running ``pulumi up`` on Azure needs: per resource type, a built-in role,
the scope it is assigned at, and the resource provider to register in the subscription.

Roles: Azure built-in roles (https://learn.microsoft.com/azure/role-based-access-control/built-in-roles):
``Contributor`` creates and deletes resources but cannot assign roles (its NotActions exclude
``Microsoft.Authorization/*/Write``); ``Role Based Access Control Administrator`` holds
``Microsoft.Authorization/roleAssignments/write``; ``Managed Identity Operator`` holds
``Microsoft.ManagedIdentity/userAssignedIdentities/*/assign/action``, which attaching a
user-assigned identity to a session pool needs where the identity lives. Creating a resource
group is ``Microsoft.Resources/subscriptions/resourceGroups/write`` at subscription scope.
Resource providers: "Azure resource providers and types" (``az provider register``).

Role Based Access Control Administrator unconditioned can assign any role, Owner included, to
anyone at its scope: it is assigned with the condition "Delegate Azure role assignment
management to others with conditions" describes
(https://learn.microsoft.com/azure/role-based-access-control/delegate-role-assignments-portal,
the "Constrain roles" example of delegate-role-assignments-examples; attributes from
conditions-authorization-actions-attributes): a role assignment written or deleted must be of a
role in ``ASSIGNABLE_ROLES`` (the kit's only one: Azure ContainerApps Session Executor on the
pool), ``conditionVersion`` 2.0. The RoleAssignment resources the kit creates are in the
stack's resource group, so the role is assigned there; only when the stack creates that group
(which does not exist when the deployer's roles are assigned) is it at the subscription, and
the condition still limits it to the Session Executor role.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sandboxkit.azure.plan import SESSION_EXECUTOR_ROLE_ID
from sandboxkit.azure.type_tokens import (
    MANAGED_ENVIRONMENT,
    RESOURCE_GROUP,
    ROLE_ASSIGNMENT,
    SESSION_POOL,
    WORKSPACE,
)
from sandboxkit.deployer import DeployerPolicy, granted, union
from sandboxkit.effective_egress import ResourceView
from sandboxkit.type_tokens import TypeToken

Scope = Literal["subscription", "resourceGroup"]


@dataclass(frozen=True)
class AzureGrant:
    """What one azure-native resource type needs: a built-in role at a scope, and the resource
    provider namespace (``Microsoft.App``) registered, ``""`` when none beyond the core."""

    role: str
    scope: Scope
    provider: str


_CONTRIBUTOR = "Contributor"
_RBAC_ADMINISTRATOR = "Role Based Access Control Administrator"
GRANTS: dict[TypeToken, AzureGrant] = {
    RESOURCE_GROUP: AzureGrant(_CONTRIBUTOR, "subscription", ""),
    MANAGED_ENVIRONMENT: AzureGrant(_CONTRIBUTOR, "resourceGroup", "Microsoft.App"),
    SESSION_POOL: AzureGrant(_CONTRIBUTOR, "resourceGroup", "Microsoft.App"),
    WORKSPACE: AzureGrant(_CONTRIBUTOR, "resourceGroup", "Microsoft.OperationalInsights"),
    ROLE_ASSIGNMENT: AzureGrant(_RBAC_ADMINISTRATOR, "resourceGroup", ""),
}

IDENTITY_ROLE = "Managed Identity Operator"
ASSIGNABLE_ROLES = (SESSION_EXECUTOR_ROLE_ID,)
"""Role definition ids (GUIDs) the deployer may assign and remove: the kit's RoleAssignments'."""


def delegation_condition(role_ids: Sequence[str]) -> str:
    """The ABAC condition (``conditionVersion`` 2.0) that lets a Role Based Access Control
    Administrator write and delete only assignments of ``role_ids``: the request's role on
    ``roleAssignments/write``, the existing assignment's on ``roleAssignments/delete``."""
    ids = ", ".join(role_ids)
    action = "Microsoft.Authorization/roleAssignments"
    return (
        f"((!(ActionMatches{{'{action}/write'}})) OR "
        f"(@Request[{action}:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {{{ids}}})) AND "
        f"((!(ActionMatches{{'{action}/delete'}})) OR "
        f"(@Resource[{action}:RoleDefinitionId] ForAnyOfAnyValues:GuidEquals {{{ids}}}))"
    )


def azure_policy(
    target: str,
    subscription_id: str,
    resource_group: str,
    identity_resource_id: str | None,
    resources: Sequence[ResourceView],
) -> DeployerPolicy:
    """``{subscriptionId, assignments: [{role, scope[, condition, conditionVersion]}],
    resourceProviders}`` for ``resources`` (the Role Based Access Control Administrator's
    assignment carries ``delegation_condition(ASSIGNABLE_ROLES)``).

    ``identity_resource_id`` (the pool's user-assigned identity, if any) adds ``Managed
    Identity Operator`` on that identity.

    Raises:
        MissingGrantError: for a resource type ``GRANTS`` lacks.
    """
    found = granted(target, GRANTS, resources)
    scopes = {
        "subscription": f"/subscriptions/{subscription_id}",
        "resourceGroup": f"/subscriptions/{subscription_id}/resourceGroups/{resource_group}",
    }
    # A group the stack creates does not exist yet when the deployer's roles are assigned:
    # what the group would scope goes to the subscription.
    if any(RESOURCE_GROUP.matches(t) for t in found):
        scopes["resourceGroup"] = scopes["subscription"]
    pairs = {(g.role, scopes[g.scope]) for g in found.values()}
    if identity_resource_id is not None:
        pairs.add((IDENTITY_ROLE, identity_resource_id))
    # A role at the subscription covers the same role at the group.
    pairs = {
        (role, scope)
        for role, scope in pairs
        if scope == scopes["subscription"] or (role, scopes["subscription"]) not in pairs
    }
    condition = delegation_condition(ASSIGNABLE_ROLES)
    assignments: list[dict[str, str]] = [
        {"role": role, "scope": scope, "condition": condition, "conditionVersion": "2.0"}
        if role == _RBAC_ADMINISTRATOR
        else {"role": role, "scope": scope}
        for role, scope in sorted(pairs)
    ]
    document: dict[str, Any] = {
        "subscriptionId": subscription_id,
        "assignments": assignments,
        "resourceProviders": union([g.provider] for g in found.values() if g.provider),
    }
    commands = "; ".join(
        f'az role assignment create --assignee DEPLOYER --role "{a["role"]}" --scope {a["scope"]}'
        + (
            f' --condition "{a["condition"]}" --condition-version {a["conditionVersion"]}'
            if "condition" in a
            else ""
        )
        for a in assignments
    )
    registers = "; ".join(
        f"az provider register --namespace {p} --subscription {subscription_id}"
        for p in document["resourceProviders"]
    )
    return DeployerPolicy(
        target,
        document,
        f"register the resource providers: {registers}; assign the roles (DEPLOYER: the "
        f"object id of the deployer's user, group or service principal): {commands}",
    )
