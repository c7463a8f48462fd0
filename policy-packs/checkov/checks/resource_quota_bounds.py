"""CKV_SBX_4: a ResourceQuota bounds the pod count, CPU limits and memory limits."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.kubernetes.checks.resource.base_spec_check import BaseK8Check

BOUNDED = ("pods", "limits.cpu", "limits.memory")


class ResourceQuotaBounds(BaseK8Check):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure resource quotas bound pods, CPU limits and memory limits",
            id="CKV_SBX_4",
            categories=(CheckCategories.KUBERNETES,),
            supported_entities=("ResourceQuota",),
        )

    def scan_spec_conf(self, conf: dict[str, Any]) -> CheckResult:
        hard = (conf.get("spec") or {}).get("hard") or {}
        return CheckResult.PASSED if all(hard.get(k) for k in BOUNDED) else CheckResult.FAILED


check = ResourceQuotaBounds()
