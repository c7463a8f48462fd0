"""CKV_SBX_7: a namespace enforces the Pod Security Standards ``restricted`` level."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.kubernetes.checks.resource.base_spec_check import BaseK8Check

ENFORCE = "pod-security.kubernetes.io/enforce"


class NamespacePodSecurity(BaseK8Check):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure namespaces enforce the Pod Security restricted level",
            id="CKV_SBX_7",
            categories=(CheckCategories.KUBERNETES,),
            supported_entities=("Namespace",),
        )

    def scan_spec_conf(self, conf: dict[str, Any]) -> CheckResult:
        labels = (conf.get("metadata") or {}).get("labels") or {}
        return CheckResult.PASSED if labels.get(ENFORCE) == "restricted" else CheckResult.FAILED


check = NamespacePodSecurity()
