"""CKV_SBX_5: a RuntimeClass runs pods under a sandboxing runtime (gVisor or Kata)."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.kubernetes.checks.resource.base_spec_check import BaseK8Check

# CRI handlers of gVisor (runsc, GKE Sandbox's gvisor) and Kata Containers (kata, kata-qemu, ...).
SANDBOXED = ("runsc", "gvisor", "kata")


class RuntimeClassSandboxed(BaseK8Check):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure runtime classes use a sandboxing handler (gVisor or Kata Containers)",
            id="CKV_SBX_5",
            categories=(CheckCategories.KUBERNETES,),
            supported_entities=("RuntimeClass",),
        )

    def scan_spec_conf(self, conf: dict[str, Any]) -> CheckResult:
        handler = str(conf.get("handler") or "")
        sandboxed = handler in SANDBOXED[:2] or handler.startswith(SANDBOXED[2])
        return CheckResult.PASSED if sandboxed else CheckResult.FAILED


check = RuntimeClassSandboxed()
