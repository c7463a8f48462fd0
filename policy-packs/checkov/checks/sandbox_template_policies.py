"""CKV_SBX_1: the agent-sandbox SandboxTemplate leaves networking to the kit's own policy."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.kubernetes.checks.resource.base_spec_check import BaseK8Check


class SandboxTemplatePolicies(BaseK8Check):
    def __init__(self) -> None:
        super().__init__(
            name=(
                "Ensure sandbox templates leave network policy to the kit and disallow "
                "injected environment variables and volume claims"
            ),
            id="CKV_SBX_1",
            categories=(CheckCategories.KUBERNETES,),
            supported_entities=("SandboxTemplate",),
        )

    def scan_spec_conf(self, conf: dict[str, Any]) -> CheckResult:
        # The controller's managed policy admits the public internet and policies add up.
        spec = conf.get("spec") or {}
        hardened = (
            spec.get("networkPolicyManagement") == "Unmanaged"
            and spec.get("envVarsInjectionPolicy") == "Disallowed"
            and spec.get("volumeClaimTemplatesPolicy") == "Disallowed"
        )
        return CheckResult.PASSED if hardened else CheckResult.FAILED


check = SandboxTemplatePolicies()
