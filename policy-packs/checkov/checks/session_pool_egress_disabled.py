"""CKV_SBX_9: an Azure Container Apps session pool disables its sessions' egress."""

from __future__ import annotations

from typing import Any

from checkov.arm.base_resource_value_check import BaseResourceValueCheck
from checkov.common.models.enums import CheckCategories


class SessionPoolEgressDisabled(BaseResourceValueCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure Container Apps session pools disable session egress",
            id="CKV_SBX_9",
            categories=(CheckCategories.NETWORKING,),
            supported_resources=("Microsoft.App/sessionPools",),
        )

    def get_inspected_key(self) -> str:
        # Microsoft.App sessionPools: properties.sessionNetworkConfiguration.status, an enum of
        # EgressEnabled / EgressDisabled (the platform has no per-host allowlist).
        return "properties/sessionNetworkConfiguration/status"

    def get_expected_value(self) -> Any:
        return "EgressDisabled"


check = SessionPoolEgressDisabled()
