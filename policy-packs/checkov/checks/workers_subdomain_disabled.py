"""CKV_SBX_23: a Workers script is not exposed on workers.dev nor on preview URLs.

The kit's script carries the switches wrangler writes (``workers_dev``, ``preview_urls``); a
plain Workers script has them on a ``cloudflare_workers_script_subdomain`` instead, and is
judged there.
"""

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
            supported_resources=(
                "cloudflare_workers_script",
                "cloudflare_workers_script_subdomain",
            ),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        if self.entity_type == "cloudflare_workers_script_subdomain":
            switches = ("enabled", "previews_enabled")
        elif "workers_dev" in conf:
            switches = ("workers_dev", "preview_urls")
        else:
            return CheckResult.UNKNOWN
        exposed = any(first(conf.get(switch)) is not False for switch in switches)
        return CheckResult.FAILED if exposed else CheckResult.PASSED


check = WorkersSubdomainDisabled()
