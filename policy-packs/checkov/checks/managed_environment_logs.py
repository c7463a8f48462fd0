"""CKV_SBX_11: a Container Apps environment sends its app logs to Log Analytics."""

from __future__ import annotations

from checkov.arm.base_resource_value_check import BaseResourceValueCheck
from checkov.common.models.enums import CheckCategories


class ManagedEnvironmentLogs(BaseResourceValueCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure Container Apps environments send app logs to Log Analytics",
            id="CKV_SBX_11",
            categories=(CheckCategories.LOGGING,),
            supported_resources=("Microsoft.App/managedEnvironments",),
        )

    def get_inspected_key(self) -> str:
        return "properties/appLogsConfiguration/destination"

    def get_expected_value(self) -> str:
        return "log-analytics"


check = ManagedEnvironmentLogs()
