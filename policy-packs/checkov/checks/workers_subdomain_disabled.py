"""CKV_SBX_23: a Workers script is not exposed on workers.dev nor on preview URLs."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck


def first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


class WorkersSubdomainDisabled(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure Workers scripts are not served on workers.dev or preview URLs",
            id="CKV_SBX_23",
            categories=(CheckCategories.NETWORKING,),
            supported_resources=("cloudflare_workers_script_subdomain",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        exposed = (
            first(conf.get("enabled")) is not False
            or first(conf.get("previews_enabled")) is not False
        )
        return CheckResult.FAILED if exposed else CheckResult.PASSED


check = WorkersSubdomainDisabled()
