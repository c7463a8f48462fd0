"""The azure-sessions target's resource types (pulumi-azure-native v3), each stated once.

The catalog, the policy handlers, the stack checks and the egress reader match rendered
resources through ``TypeToken.matches``, so an API version's token of the same resource
(``azure-native:app/v20240202preview:ContainerAppsSessionPool``, which pulumi-azure-native
declares beside the default) is the same kind to all of them.
"""

from __future__ import annotations

from sandboxkit.type_tokens import TypeToken

SESSION_POOL = TypeToken("azure-native:app:ContainerAppsSessionPool")
MANAGED_ENVIRONMENT = TypeToken("azure-native:app:ManagedEnvironment")
WORKSPACE = TypeToken("azure-native:operationalinsights:Workspace")
RESOURCE_GROUP = TypeToken("azure-native:resources:ResourceGroup")
ROLE_ASSIGNMENT = TypeToken("azure-native:authorization:RoleAssignment")
PROVIDER = TypeToken("pulumi:providers:azure-native")
