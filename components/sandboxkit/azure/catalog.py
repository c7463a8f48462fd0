"""Resource types of the ``azure-sessions`` target (azure-native app module, API
2025-02-02-preview).

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from sandboxkit.azure.type_tokens import (
    MANAGED_ENVIRONMENT,
    PROVIDER,
    RESOURCE_GROUP,
    ROLE_ASSIGNMENT,
    SESSION_POOL,
    WORKSPACE,
)
from sandboxkit.catalog import ArmType, MockCall, ResourceKind

# The all-zero subscription: never a real one.
MOCK_AZURE_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


def _azure_name(args: MockResourceArgs) -> str:
    # azure-native takes a resource's name as "<resource>Name" (workspaceName,
    # sessionPoolName); a resource group's own name is resourceGroupName.
    keys = [k for k in args.inputs if k.endswith("Name") and k != "resourceGroupName"]
    for key in (*keys, "resourceGroupName", "name"):
        if isinstance(args.inputs.get(key), str):
            return str(args.inputs[key])
    return args.name


def _azure_id(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    state: dict[str, Any] = {
        "id": f"/subscriptions/{MOCK_AZURE_SUBSCRIPTION}/mock/{args.name}",
        "name": _azure_name(args),
    }
    identity = args.inputs.get("identity")
    if isinstance(identity, dict) and isinstance(identity.get("userAssignedIdentities"), list):
        # Inputs list user-assigned identity ids; Azure answers with a map keyed by id.
        assigned: dict[str, dict[str, Any]] = {
            key: {} for key in identity["userAssignedIdentities"]
        }
        state["identity"] = {**identity, "userAssignedIdentities": assigned}
    return state


def _azure_workspace(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    return {**_azure_id(args, resource_id), "customerId": MOCK_AZURE_SUBSCRIPTION}


def _azure_session_pool(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    name = _azure_name(args)
    group = args.inputs.get("resourceGroupName", "mock-group")
    location = args.inputs.get("location", "westeurope")
    endpoint = (
        f"https://{location}.dynamicsessions.io/subscriptions/{MOCK_AZURE_SUBSCRIPTION}"
        f"/resourceGroups/{group}/sessionPools/{name}"
    )
    # The ARM id policies read (e.g. an executor role scoped to this pool, not wider).
    pool_id = (
        f"/subscriptions/{MOCK_AZURE_SUBSCRIPTION}/resourceGroups/{group}"
        f"/providers/Microsoft.App/sessionPools/{name}"
    )
    return {**_azure_id(args, resource_id), "id": pool_id, "poolManagementEndpoint": endpoint}


KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        SESSION_POOL.token,
        export=ArmType("Microsoft.App/sessionPools", "2025-02-02-preview", "sessionPoolName"),
        mock_outputs=_azure_session_pool,
    ),
    ResourceKind(
        MANAGED_ENVIRONMENT.token,
        export=ArmType(
            "Microsoft.App/managedEnvironments", "2025-02-02-preview", "environmentName"
        ),
    ),
    ResourceKind(
        WORKSPACE.token,
        export=ArmType("Microsoft.OperationalInsights/workspaces", "2023-09-01", "workspaceName"),
        mock_outputs=_azure_workspace,
        settings={"CKV_SBX_10": "profile.audit.logRetentionDays"},
    ),
    ResourceKind(
        RESOURCE_GROUP.token,
        export=ArmType(
            "Microsoft.Resources/resourceGroups", "2024-03-01", "resourceGroupName", frozenset()
        ),
    ),
    ResourceKind(
        ROLE_ASSIGNMENT.token,
        export=ArmType(
            "Microsoft.Authorization/roleAssignments",
            "2022-04-01",
            "roleAssignmentName",
            frozenset(),
            envelope=frozenset({"scope"}),
        ),
    ),
    ResourceKind(
        PROVIDER.token,
        not_exported=(
            "provider configuration (subscription, location), not an Azure resource; an ARM "
            "template has no counterpart"
        ),
    ),
    ResourceKind(
        "azure-native:",
        mock_outputs=_azure_id,
    ),
)

# getSharedKeys feeds the environment's log configuration (a secret input).
CALLS = (
    MockCall(
        "azure-native:operationalinsights:getSharedKeys",
        lambda _: {
            "primarySharedKey": "mock-primary-shared-key",
            "secondarySharedKey": "mock-secondary-shared-key",
        },
    ),
)
