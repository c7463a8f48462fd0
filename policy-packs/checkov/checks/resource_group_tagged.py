"""CKV_SBX_13: a resource group carries the kit's ownership tags."""

from __future__ import annotations

from typing import Any

from checkov.arm.base_resource_check import BaseResourceCheck
from checkov.common.models.enums import CheckCategories, CheckResult

# KitContext.labels(): who manages the group and which stack owns it.
REQUIRED_TAGS = ("managed-by", "sandboxkit-stack")


class ResourceGroupTagged(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure resource groups carry the managed-by and sandboxkit-stack tags",
            id="CKV_SBX_13",
            categories=(CheckCategories.CONVENTION,),
            supported_resources=("Microsoft.Resources/resourceGroups",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        tags = conf.get("tags") or {}
        return CheckResult.PASSED if all(tags.get(k) for k in REQUIRED_TAGS) else CheckResult.FAILED


check = ResourceGroupTagged()
