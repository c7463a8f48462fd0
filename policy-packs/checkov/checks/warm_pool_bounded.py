"""CKV_SBX_2: an agent-sandbox SandboxWarmPool is bounded and built from a named template."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.kubernetes.checks.resource.base_spec_check import BaseK8Check


class WarmPoolBounded(BaseK8Check):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure sandbox warm pools have a bounded replica count and a template reference",
            id="CKV_SBX_2",
            categories=(CheckCategories.KUBERNETES,),
            supported_entities=("SandboxWarmPool",),
        )

    def scan_spec_conf(self, conf: dict[str, Any]) -> CheckResult:
        spec = conf.get("spec") or {}
        replicas = spec.get("replicas")
        template = (spec.get("sandboxTemplateRef") or {}).get("name")
        bounded = isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 0
        return CheckResult.PASSED if bounded and template else CheckResult.FAILED


check = WarmPoolBounded()
