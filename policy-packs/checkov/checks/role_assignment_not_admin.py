"""CKV_SBX_12: a role assignment names its principal and grants no owner-level role."""

from __future__ import annotations

from typing import Any

from checkov.arm.base_resource_check import BaseResourceCheck
from checkov.common.models.enums import CheckCategories, CheckResult

# Azure built-in roles that administer resources or access (Owner, Contributor, User Access
# Administrator, Role Based Access Control Administrator), by role definition GUID.
ADMIN_ROLES = (
    "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
    "b24988ac-6180-42a0-ab88-20f7382dd24c",
    "18d7d88d-d35e-4fb5-a5c3-7773c4a72d9d",
    "f58310d9-a9f6-439a-9e8d-f62e7b41a168",
)


class RoleAssignmentNotAdmin(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure role assignments name a principal and grant no owner-level role",
            id="CKV_SBX_12",
            categories=(CheckCategories.IAM,),
            supported_resources=("Microsoft.Authorization/roleAssignments",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        properties = conf.get("properties") or {}
        role = str(properties.get("roleDefinitionId") or "").lower()
        if not properties.get("principalId") or not role or role.endswith(ADMIN_ROLES):
            return CheckResult.FAILED
        return CheckResult.PASSED


check = RoleAssignmentNotAdmin()
